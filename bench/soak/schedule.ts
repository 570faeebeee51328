/**
 * The soak's fault schedule (docs/soak.md#the-fault-schedule): a pure function of a seed, the run's
 * length, how many faults and which kinds the target can take, so `--seed N` replays a run's
 * faults exactly. Faults may overlap: some are drawn inside the window of the one before, because
 * the failures a one-fault-at-a-time suite misses come from combinations.
 */
import { seededRandom } from "../../test/fakes/models/base.js";

/** Every kind of fault the soak knows; a target offers the subset it can inject. */
export const FAULT_KINDS = [
  "leader-sigkill",
  "leader-evict",
  "leader-wedge",
  "run-pod-delete",
  "apiserver-restart",
  "etcd-compact",
  "kubelet-restart",
  "provider-500",
  "provider-429",
  "provider-529",
  "provider-timeout",
  "provider-lost-answer",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The batch providers whose fakes take the provider faults. */
export const PROVIDERS = ["anthropic", "gemini", "openai"] as const;
/** Which of a provider's calls a provider fault hits. */
export const PROVIDER_CALLS = ["submit", "poll", "cancel", "delete"] as const;

export interface Fault {
  /** Milliseconds from the soak's start. */
  at: number;
  kind: FaultKind;
  /**
   * What the fault hits: `leader` (the Lease holder when it fires), `run-pod` (one running run pod,
   * params.pick chooses which), `plane` (the API server, etcd), `node` (the real node's kubelet),
   * or a provider's name.
   */
  target: string;
  /** How long the fault's effect lasts (ms): the window in which another fault combines with it. */
  windowMs: number;
  params: Record<string, number | string>;
}

export interface ScheduleInput {
  seed: number;
  /** The soak's planned length; every fault fires before it. */
  durationMs: number;
  count: number;
  /** The kinds the target can take (at least one). */
  kinds: readonly FaultKind[];
}

/** Chance that a fault is drawn inside the previous one's window instead of after it. */
export const COMBINE_CHANCE = 0.3;

/** The test fakes' seeded generator (mulberry32): the same sequence on every machine and Node version. */
export { seededRandom };

const int = (rand: () => number, min: number, max: number) => min + Math.floor(rand() * (max - min + 1));
const pick = <T>(rand: () => number, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;

/** The target, window and parameters of one fault of `kind`. */
function drawFault(rand: () => number, kind: FaultKind): Omit<Fault, "at"> {
  switch (kind) {
    case "leader-sigkill":
      return { kind, target: "leader", windowMs: 30_000, params: {} };
    case "leader-evict":
      return { kind, target: "leader", windowMs: 30_000, params: {} };
    case "leader-wedge":
      // Stopped until its liveness probe has the kubelet restart it (about a minute).
      return { kind, target: "leader", windowMs: 90_000, params: {} };
    case "run-pod-delete":
      // Which running run pod, resolved when the fault fires (pick modulo the pods then running).
      return { kind, target: "run-pod", windowMs: 10_000, params: { pick: int(rand, 0, 999) } };
    case "apiserver-restart":
      return { kind, target: "plane", windowMs: 20_000, params: {} };
    case "etcd-compact":
      return { kind, target: "plane", windowMs: 5_000, params: {} };
    case "kubelet-restart": {
      const downMs = int(rand, 0, 10) * 1_000;
      return { kind, target: "node", windowMs: downMs + 15_000, params: { downMs } };
    }
    case "provider-500":
    case "provider-429":
    case "provider-529":
    case "provider-timeout":
    case "provider-lost-answer": {
      const times = int(rand, 1, 5);
      const params: Record<string, number | string> = { call: pick(rand, PROVIDER_CALLS), times };
      if (kind === "provider-429" || kind === "provider-529") params.retryAfter = int(rand, 1, 10);
      // A hung call lasts until the controller's request timeout.
      const each = kind === "provider-timeout" ? 60_000 : 5_000;
      return { kind, target: pick(rand, PROVIDERS), windowMs: times * each, params };
    }
  }
}

/** Checks the input, naming the field that is wrong. */
function checkInput(input: ScheduleInput): void {
  if (!Number.isInteger(input.seed) || input.seed < 0 || input.seed > 0xffffffff)
    throw new Error(`schedule: seed must be an integer from 0 to 4294967295, got ${input.seed}`);
  if (!Number.isFinite(input.durationMs) || input.durationMs <= 0)
    throw new Error(`schedule: durationMs must be a positive number, got ${input.durationMs}`);
  if (!Number.isInteger(input.count) || input.count < 0)
    throw new Error(`schedule: count must be a non-negative integer, got ${input.count}`);
  if (input.kinds.length === 0) throw new Error("schedule: kinds must name at least one fault kind");
  for (const k of input.kinds)
    if (!(FAULT_KINDS as readonly string[]).includes(k))
      throw new Error(`schedule: kinds: unknown fault kind "${k}" (known: ${FAULT_KINDS.join(", ")})`);
}

/**
 * `count` faults of the given kinds at times in [0, durationMs), ordered by time. Most are spread
 * evenly at random; with COMBINE_CHANCE one lands inside the window of the fault before it.
 */
export function drawSchedule(input: ScheduleInput): Fault[] {
  checkInput(input);
  const rand = seededRandom(input.seed);
  const faults: Fault[] = [];
  for (let i = 0; i < input.count; i++) {
    const previous = faults[faults.length - 1];
    const fault = drawFault(rand, pick(rand, input.kinds));
    const combine = previous !== undefined && rand() < COMBINE_CHANCE;
    const at = combine
      ? Math.min(input.durationMs - 1, previous.at + Math.floor(rand() * previous.windowMs))
      : Math.floor(rand() * input.durationMs);
    faults.push({ at, ...fault });
  }
  return faults.sort((a, b) => a.at - b.at);
}

/** Whether two faults' windows overlap (the second starts before the first's effect ends). */
export function overlaps(a: Fault, b: Fault): boolean {
  return a.at < b.at + b.windowMs && b.at < a.at + a.windowMs;
}

/**
 * The faults whose window comes within `marginMs` of the span from `from` to `to` (a violation's
 * report: from when the trouble began to when it was seen).
 */
export function faultsAround(
  schedule: readonly Fault[],
  from: number,
  to: number,
  marginMs: number,
): Fault[] {
  return schedule.filter((f) => f.at - marginMs <= to && from <= f.at + f.windowMs + marginMs);
}

/** One line per fault, as printed at the start of a soak. */
export function formatSchedule(schedule: readonly Fault[]): string[] {
  return schedule.map((f) => {
    const params = Object.entries(f.params)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ");
    return `  +${(f.at / 1000).toFixed(1).padStart(7)} s  ${f.kind.padEnd(18)} ${f.target}${params ? ` ${params}` : ""}`;
  });
}
