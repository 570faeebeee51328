/**
 * Whether a run credential's Agent may still call its model, from the API server
 * (docs/gateway.md#run-credentials): a GET of the Agent the credential names. Another uid under
 * that name, or none, is `deleted` (the credential's Agent is gone; a namesake does not inherit
 * it); a terminal phase (the core's isTerminal) or a deletion under way is final; anything else is
 * `active`.
 *
 * A streaming CLI sends many requests a minute, so answers are cached per uid: `active` only a
 * few seconds (an ended run's credential stops working that soon after its phase is written), the
 * final answers far longer (a uid never comes back and a terminal phase never changes). Requests
 * for one uid that arrive while its GET is out share that GET.
 *
 * When the API server cannot be asked (no answer, a 5xx, a throttle, a refusal of the gateway's
 * read), a recent `active` stands in for a bounded time, so a short API-server restart does not
 * break runs mid-turn; without one the lookup throws RunUnconfirmedError and the request is
 * refused (fail closed): a credential read from a Job spec must not work just because the API
 * server is down.
 */

import type { RunRef } from "../core/run-job/gateway-credential.js";
import { type Agent, isTerminal, phaseOf } from "../core/types.js";
import { KubeApiError } from "../kube/errors.js";
import { type RunLookup, type RunState, RunUnconfirmedError } from "./ports.js";

/** GET one Agent; undefined when the API server says it does not exist (404 NotFound); throws otherwise. */
export type AgentGetter = (namespace: string, name: string) => Promise<Agent | undefined>;

export interface RunLookupTimings {
  /** How long an `active` answer is reused without asking again. */
  activeMs: number;
  /** How long a final answer (terminal, deleted) is kept: only memory bounds it. */
  finalMs: number;
  /** How long after the last confirmation an `active` answer stands in while the API server cannot be asked. */
  staleActiveMs: number;
  /** Most cached runs; past it the expired answers go first, then the oldest. */
  maxEntries: number;
}

export const RUN_LOOKUP_TIMINGS: RunLookupTimings = {
  activeMs: 3_000,
  finalMs: 600_000,
  staleActiveMs: 60_000,
  maxEntries: 10_000,
};

export interface ClusterRunLookupOptions {
  /** The namespace this gateway serves (its Role's and its agent-secrets'); other credentials are `foreign`. */
  namespace: string;
  getAgent: AgentGetter;
  now?: () => number;
  timings?: Partial<RunLookupTimings>;
  /** Told each time a recent `active` answer stands in for a failed GET. */
  onStale?: (run: RunRef, error: unknown) => void;
}

interface Entry {
  state: RunState;
  /** The Agent's spec.stationRef (immutable): where its definition, and so its key, is named. */
  stationRef?: string;
  /** When the API server last gave this answer. */
  at: number;
}

const isFinal = (state: RunState) => state.state !== "active";

/** What the API server's answer says about the credential's run. */
export function runStateOf(run: RunRef, agent: Agent | undefined): RunState {
  if (agent === undefined || agent.metadata?.uid !== run.uid) return { state: "deleted" };
  // A deletion under way is how a run is cancelled: its credential ends with it.
  if (agent.metadata.deletionTimestamp) return { state: "deleted" };
  const phase = phaseOf(agent);
  return isTerminal(phase) ? { state: "terminal", phase } : { state: "active" };
}

/** Why the API server could not be asked, in words for the refusal the CLI prints. */
export function unreachableCause(err: unknown, read = "the Agent"): string {
  if (err instanceof KubeApiError) {
    return `the Kubernetes API server answered ${err.status}${err.reason ? ` ${err.reason}` : ""} to its read of ${read}`;
  }
  return "the Kubernetes API server cannot be reached";
}

export class ClusterRunLookup implements RunLookup {
  private readonly cache = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<Entry>>();
  private readonly timings: RunLookupTimings;
  private readonly now: () => number;

  constructor(private readonly options: ClusterRunLookupOptions) {
    this.timings = { ...RUN_LOOKUP_TIMINGS, ...options.timings };
    this.now = options.now ?? Date.now;
  }

  async runState(run: RunRef): Promise<RunState> {
    if (run.namespace !== this.options.namespace) return { state: "foreign", served: this.options.namespace };
    return (await this.entry(run)).state;
  }

  /** The run's Station name while the run is active (from the lookup's own cache when it can). */
  async stationOf(run: RunRef): Promise<string | undefined> {
    if (run.namespace !== this.options.namespace) return undefined;
    const entry = await this.entry(run);
    return entry.state.state === "active" ? entry.stationRef : undefined;
  }

  private fresh(entry: Entry | undefined, now: number): entry is Entry {
    if (entry === undefined) return false;
    return now - entry.at < (isFinal(entry.state) ? this.timings.finalMs : this.timings.activeMs);
  }

  private async entry(run: RunRef): Promise<Entry> {
    const key = `${run.namespace}/${run.name}/${run.uid}`;
    const hit = this.cache.get(key);
    if (this.fresh(hit, this.now())) return hit;
    let pending = this.inflight.get(key);
    if (pending === undefined) {
      pending = this.fetch(run, key).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    try {
      return await pending;
    } catch (err) {
      const last = this.cache.get(key);
      // A final answer never changes for a uid; a recent `active` may stand in for a while.
      if (last && isFinal(last.state)) return last;
      if (last && this.now() - last.at < this.timings.staleActiveMs) {
        this.options.onStale?.(run, err);
        return last;
      }
      throw new RunUnconfirmedError(unreachableCause(err));
    }
  }

  private async fetch(run: RunRef, key: string): Promise<Entry> {
    const agent = await this.options.getAgent(run.namespace, run.name);
    const state = runStateOf(run, agent);
    const entry: Entry = { state, at: this.now() };
    if (state.state === "active" && agent?.spec?.stationRef) entry.stationRef = agent.spec.stationRef;
    this.remember(key, entry);
    return entry;
  }

  private remember(key: string, entry: Entry): void {
    // Re-inserted, so the Map's order is the order of last confirmation: oldest first.
    this.cache.delete(key);
    this.cache.set(key, entry);
    if (this.cache.size <= this.timings.maxEntries) return;
    const now = this.now();
    for (const [k, e] of this.cache) if (!this.fresh(e, now)) this.cache.delete(k);
    for (const k of this.cache.keys()) {
      if (this.cache.size <= this.timings.maxEntries) break;
      this.cache.delete(k);
    }
  }

  /** How many runs are cached (for tests of the bound). */
  get size(): number {
    return this.cache.size;
  }
}
