/**
 * The soak's invariants (docs/soak.md#invariants): pure functions over snapshots the runner
 * gathers (one LIST of Agents, Jobs and Stations at a time, plus what its watches saw over the
 * run). Each returns the violations it finds; the runner counts them per invariant.
 */

export type Execution = "interactive" | "batch" | "realtime";
export type ConcurrencyPolicy = "Allow" | "Forbid" | "Replace";

export interface AgentSnap {
  name: string;
  uid: string;
  station: string;
  execution: Execution;
  /**
   * When the Agent's status was last seen to change (ms since the epoch): its phase, conditions or
   * batch. A change is progress (a submit retried with its next attempt in the Ready message, a
   * queue position moving); a status that stays the same past its bound is stuck.
   */
  quietSince: number;
  phase?: string;
  exitCode?: number;
  failureReason?: string;
  conditions: { type: string; status: string; reason?: string }[];
  /** metadata.deletionTimestamp set: left out of concurrency counts (a cleanup may still run). */
  deleting: boolean;
}

export interface StationSnap {
  name: string;
  concurrencyPolicy: ConcurrencyPolicy;
  maxConcurrentRuns?: number;
}

export interface Snapshot {
  /** When it was taken (ms since the epoch). */
  at: number;
  agents: AgentSnap[];
  stations: StationSnap[];
}

/** How long an Agent's status may stay the same (ms), from the rules of docs/soak.md#invariants. */
export interface StuckBounds {
  /**
   * Pending while its Station has a free slot, per execution: a batch's submit back-off waits up
   * to 10 minutes between attempts (docs/batch-runs.md).
   */
  pending: Record<Execution, number>;
  /** Running, per execution: the run's deadline or the batch timeout, plus the read-back's slack. */
  running: Record<Execution, number>;
}

export type InvariantName = "stuck" | "lost" | "two-jobs" | "batch-twice" | "concurrency" | "terminal-agrees";
export const INVARIANTS: readonly InvariantName[] = [
  "stuck",
  "lost",
  "two-jobs",
  "batch-twice",
  "concurrency",
  "terminal-agrees",
];

export interface Violation {
  invariant: InvariantName;
  /** The Agent it is about (a Station's name for a concurrency violation). */
  agent: string;
  /** When it was seen (ms since the epoch). */
  at: number;
  /** Since when the trouble lasted (ms since the epoch): the report looks for faults from then. */
  since?: number;
  detail: string;
}

export const isTerminal = (phase: string | undefined) => phase === "Succeeded" || phase === "Failed";

const running = (a: AgentSnap) => a.phase === "Running" && !a.deleting;

/**
 * What counts as a change of an Agent's status (AgentSnap.quietSince): its phase, its batch, and its
 * conditions with their messages (a submit's next attempt and a queue position are in the Ready
 * message). Timestamps alone are not progress.
 */
export function statusFingerprint(
  status:
    | {
        phase?: string;
        batchId?: string;
        conditions?: { type: string; status: string; reason?: string; message?: string }[];
      }
    | undefined,
): string {
  return JSON.stringify([
    status?.phase ?? "Pending",
    status?.batchId ?? "",
    (status?.conditions ?? []).map((c) => [c.type, c.status, c.reason ?? "", c.message ?? ""]),
  ]);
}

/**
 * No Agent stuck: every Agent not terminal has changed its status within its bound. A Pending
 * Agent whose Station is full waits for a slot (the Station's queue), which is not being stuck.
 */
export function stuckAgents(s: Snapshot, bounds: StuckBounds): Violation[] {
  const out: Violation[] = [];
  const stations = new Map(s.stations.map((st) => [st.name, st]));
  for (const a of s.agents) {
    if (isTerminal(a.phase) || a.deleting) continue;
    const age = s.at - a.quietSince;
    const phase = a.phase ?? "Pending";
    if (phase === "Pending") {
      if (age <= bounds.pending[a.execution]) continue;
      const st = stations.get(a.station);
      const limit = st ? slotLimit(st) : undefined;
      const busy = s.agents.filter((b) => b.station === a.station && running(b)).length;
      if (limit !== undefined && busy >= limit) continue;
      out.push({
        invariant: "stuck",
        agent: a.name,
        at: s.at,
        since: a.quietSince,
        detail: `Pending and unchanged for ${Math.round(age / 1000)} s (bound ${bounds.pending[a.execution] / 1000} s for ${a.execution}) while Station ${a.station} runs ${busy}${limit === undefined ? "" : ` of ${limit}`}`,
      });
    } else if (age > bounds.running[a.execution]) {
      out.push({
        invariant: "stuck",
        agent: a.name,
        at: s.at,
        since: a.quietSince,
        detail: `${phase} and unchanged for ${Math.round(age / 1000)} s (bound ${bounds.running[a.execution] / 1000} s for ${a.execution})`,
      });
    }
  }
  return out;
}

/**
 * The most a Station runs at once: 1 under Forbid or Replace whatever maxConcurrentRuns says, else
 * maxConcurrentRuns when set (0 = no limit).
 */
function slotLimit(st: StationSnap): number | undefined {
  if (st.concurrencyPolicy !== "Allow") return 1;
  return st.maxConcurrentRuns ? st.maxConcurrentRuns : undefined;
}

/**
 * No run lost (checked at the end): every Agent the soak created was seen terminal, or was deleted
 * by the soak, or by the controller replacing it: `replaced` holds the uids last seen Running on a
 * Replace Station, whose oldest Running Agent a new run deletes (docs/reference/crds.md). `seenTerminal`
 * holds the uids the checks saw terminal.
 */
export function lostAgents(
  created: readonly { name: string; uid: string; createdAt?: number }[],
  seenTerminal: ReadonlySet<string>,
  deletedBySoak: ReadonlySet<string>,
  final: Snapshot,
  replaced: ReadonlySet<string> = new Set(),
): Violation[] {
  const now = new Map(final.agents.map((a) => [a.uid, a]));
  return created
    .filter((c) => !seenTerminal.has(c.uid) && !deletedBySoak.has(c.name))
    .filter((c) => !(replaced.has(c.uid) && !now.has(c.uid)))
    .map((c) => {
      const a = now.get(c.uid);
      return {
        invariant: "lost" as const,
        agent: c.name,
        at: final.at,
        ...(c.createdAt !== undefined ? { since: c.createdAt } : {}),
        detail: a
          ? `not terminal at the end (phase ${a.phase ?? "none"})`
          : "gone without having been seen terminal and without the soak deleting it",
      };
    });
}

/** Never two Jobs for one Agent: `jobsSeen` maps each Agent to every Job name its label carried. */
export function twoJobs(jobsSeen: ReadonlyMap<string, ReadonlySet<string>>, at: number): Violation[] {
  return [...jobsSeen]
    .filter(([, jobs]) => jobs.size > 1)
    .map(([agent, jobs]) => ({
      invariant: "two-jobs" as const,
      agent,
      at,
      detail: `${jobs.size} Jobs: ${[...jobs].sort().join(", ")}`,
    }));
}

/**
 * Never more Running than a Station allows: one under Forbid or Replace, maxConcurrentRuns
 * otherwise. Agents
 * being deleted are left out (a preempted batch Agent stays Running while its cleanup runs).
 */
export function overConcurrency(s: Snapshot): Violation[] {
  const out: Violation[] = [];
  for (const st of s.stations) {
    const limit = slotLimit(st);
    if (limit === undefined) continue;
    const names = s.agents.filter((a) => a.station === st.name && running(a)).map((a) => a.name);
    if (names.length > limit)
      out.push({
        invariant: "concurrency",
        agent: st.name,
        at: s.at,
        detail: `${names.length} Running (${names.sort().join(", ")}) on Station ${st.name} (${st.concurrencyPolicy}, at most ${limit})`,
      });
  }
  return out;
}

/** A batch as a provider's own journal has it, with the Agent uid the controller submitted it for. */
export interface ProviderBatch {
  provider: string;
  id: string;
  agentUid: string;
}

/**
 * None submitted twice for one Agent: the controller sends one batch per Agent, a lost submit is
 * settled before any resend (docs/batch-runs.md). `names` maps the soak's uids to Agent names.
 */
export function batchesTwice(
  batches: readonly ProviderBatch[],
  names: ReadonlyMap<string, string>,
  at: number,
): Violation[] {
  const byAgent = new Map<string, string[]>();
  for (const b of batches)
    byAgent.set(b.agentUid, [...(byAgent.get(b.agentUid) ?? []), `${b.provider}/${b.id}`]);
  return [...byAgent]
    .filter(([, ids]) => ids.length > 1)
    .map(([uid, ids]) => ({
      invariant: "batch-twice" as const,
      agent: names.get(uid) ?? uid,
      at,
      detail: `${ids.length} batches: ${ids.sort().join(", ")}`,
    }));
}

const cond = (a: AgentSnap, type: string) => a.conditions.find((c) => c.type === type);

/**
 * A terminal Agent's phase, exit code and conditions agree (docs/state-machine.md's conditions
 * table): Succeeded has exit code 0 (when recorded), Complete=True and no Failed=True; Failed has a
 * non-zero exit code (when recorded), Failed=True and no Complete=True; both Ready=False.
 */
export function terminalDisagreements(s: Snapshot): Violation[] {
  const out: Violation[] = [];
  for (const a of s.agents) {
    if (!isTerminal(a.phase)) continue;
    const problems: string[] = [];
    const complete = cond(a, "Complete")?.status === "True";
    const failed = cond(a, "Failed")?.status === "True";
    const ready = cond(a, "Ready");
    if (ready?.status !== "False") problems.push(`Ready is ${ready?.status ?? "missing"}, not False`);
    if (a.phase === "Succeeded") {
      if (a.exitCode !== undefined && a.exitCode !== 0) problems.push(`exitCode ${a.exitCode}`);
      if (!complete) problems.push("no Complete=True");
      if (failed) problems.push("Failed=True");
    } else {
      if (a.exitCode === 0) problems.push("exitCode 0");
      if (!failed) problems.push("no Failed=True");
      if (complete) problems.push("Complete=True");
    }
    if (problems.length > 0)
      out.push({
        invariant: "terminal-agrees",
        agent: a.name,
        at: s.at,
        detail: `${a.phase}: ${problems.join("; ")}`,
      });
  }
  return out;
}

/**
 * The violations of the continuous checks, each counted once per Agent and invariant however many
 * snapshots show it.
 */
export class ViolationLog {
  readonly all: Violation[] = [];
  private readonly seen = new Set<string>();

  add(vs: readonly Violation[]): void {
    for (const v of vs) {
      // A Station over its limit again with other Agents is another violation; an Agent is counted once.
      const key = v.invariant === "concurrency" ? `${v.invariant}/${v.detail}` : `${v.invariant}/${v.agent}`;
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      this.all.push(v);
    }
  }

  counts(): Record<InvariantName, number> {
    const c = Object.fromEntries(INVARIANTS.map((i) => [i, 0])) as Record<InvariantName, number>;
    for (const v of this.all) c[v.invariant] += 1;
    return c;
  }
}
