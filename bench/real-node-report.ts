/**
 * What `npm run bench -- --real-node` (bench/real-node.ts) reports, from what it observed: per stage
 * the p50/p90 from the Agent's create request, where the time goes (each stage's share: the time
 * from the stage before it, per run), and the node's memory per run pod. Plain data in, rows out.
 */
import { pct } from "./lib.js";

export const STAGES = [
  "job created",
  "pod scheduled",
  "init started",
  "init done",
  "agent started",
  "first model request",
  "agent exited",
  "last container exited",
  "pod ended",
  "job outcome",
  "terminal",
] as const;
export type Stage = (typeof STAGES)[number];

/** One run: seconds after its create request at which each stage was seen (absent: never seen). */
export type RunStages = Partial<Record<Stage, number>>;

export interface Percentiles {
  p50: number;
  p90: number;
  max: number;
  /** Runs that reached it. */
  n: number;
}

function percentiles(xs: number[]): Percentiles {
  return { p50: pct(xs, 50), p90: pct(xs, 90), max: xs.length ? Math.max(...xs) : Number.NaN, n: xs.length };
}

/** Per stage, seconds after the create request over the runs that reached it. */
export function stageTimes(runs: RunStages[]): Record<Stage, Percentiles> {
  const out = {} as Record<Stage, Percentiles>;
  for (const stage of STAGES)
    out[stage] = percentiles(runs.map((r) => r[stage]).filter((x): x is number => x !== undefined));
  return out;
}

/**
 * Where the time goes: per stage, the time from the stage before it (the create request for the
 * first), over the runs that saw both. The pod's stages are when a watch first saw them, so they lag
 * the kubelet by up to its status update: a CLI's request can come before its container was seen
 * started, which shows here as a negative share (kept, not hidden).
 */
export function stageShares(runs: RunStages[]): Record<Stage, Percentiles & { after: Stage | "create" }> {
  const out = {} as Record<Stage, Percentiles & { after: Stage | "create" }>;
  STAGES.forEach((stage, i) => {
    const after = i === 0 ? "create" : (STAGES[i - 1] as Stage);
    const xs: number[] = [];
    for (const r of runs) {
      const to = r[stage];
      const from = after === "create" ? 0 : r[after];
      if (to !== undefined && from !== undefined) xs.push(to - from);
    }
    out[stage] = { after, ...percentiles(xs) };
  });
  return out;
}

/**
 * When the supervisor saw the CLI end: the runtime's timestamp (`pods/log?timestamps=true`, written
 * as the line reached the container's stdout) of its `agent` lifecycle event succeeded/failed, epoch
 * ms; undefined without one. That event follows the file events and the conversation save, so it
 * is the supervisor's last word about the CLI, not the CLI's own exit to the millisecond.
 */
export function agentExitFromLog(timestampedLog: string): number | undefined {
  for (const line of timestampedLog.split("\n")) {
    const space = line.indexOf(" ");
    if (space < 0) continue;
    let event: { kind?: unknown; phase?: unknown; status?: unknown };
    try {
      event = JSON.parse(line.slice(space + 1));
    } catch {
      continue;
    }
    if (event?.kind !== "lifecycle" || event.phase !== "agent") continue;
    if (event.status !== "succeeded" && event.status !== "failed") continue;
    const at = Date.parse(line.slice(0, space));
    if (!Number.isNaN(at)) return at;
  }
  return undefined;
}

/** A container's state as the pod's status has it (the part read here). */
export interface ContainerEnd {
  state?: { terminated?: { finishedAt?: Date | string } };
}

/**
 * When the pod's last container ended, epoch ms: the latest `terminated.finishedAt` (whole seconds:
 * the API truncates it), undefined while any container has not ended.
 */
export function lastContainerExit(statuses: ContainerEnd[] | undefined): number | undefined {
  if (!statuses?.length) return undefined;
  let last = Number.NEGATIVE_INFINITY;
  for (const c of statuses) {
    const at = c.state?.terminated?.finishedAt;
    if (at === undefined) return undefined;
    last = Math.max(last, new Date(at).getTime());
  }
  return last;
}

/**
 * From each exit to the Agent terminal, per run: the agent's exit (the supervisor's event) and the
 * last container's exit (second resolution, so up to 1 s longer than it was).
 */
export function exitToTerminal(
  runs: RunStages[],
): Record<"agent exited" | "last container exited", Percentiles> {
  const from = (stage: "agent exited" | "last container exited") =>
    percentiles(
      runs.flatMap((r) => {
        const a = r[stage];
        const b = r.terminal;
        return a !== undefined && b !== undefined ? [b - a] : [];
      }),
    );
  return { "agent exited": from("agent exited"), "last container exited": from("last container exited") };
}

/** Resident memory of the node's parts, bytes. */
export interface NodeMemory {
  kubelet: number;
  containerd: number;
  /** All of the node's containerd shims together (one per pod sandbox). */
  shims: number;
  shimCount: number;
}

/**
 * What each run pod costs the node: the growth of the kubelet and containerd from the idle node
 * to `podsUp` run pods, and the shims, divided by the pods. Undefined without a pod up.
 */
export function memoryPerPod(
  idle: NodeMemory,
  loaded: NodeMemory,
  podsUp: number,
): { kubelet: number; containerd: number; shim: number; total: number } | undefined {
  if (podsUp <= 0) return undefined;
  const kubelet = (loaded.kubelet - idle.kubelet) / podsUp;
  const containerd = (loaded.containerd - idle.containerd) / podsUp;
  const shim = (loaded.shims - idle.shims) / podsUp;
  return { kubelet, containerd, shim, total: kubelet + containerd + shim };
}
