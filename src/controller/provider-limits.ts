/**
 * The controller's side of the provider limits (docs/provider-limits.md): which provider endpoint
 * and key each Pending or Running Agent uses, what was learned of each endpoint (plain records,
 * updated by the core's pure learner), and the input the reconcile core decides a hold from.
 *
 * Learned from:
 * - a finished run's status.providerRetries (written when the run ends): a throttle when it retried,
 *   else a clean run; its status.usage: the endpoint's tokens per run;
 * - a batch submit answered 429 or 529 (the executor reports it at once);
 * - every run start (Job created, batch submitted), which spaces starts under a per-minute limit.
 *
 * Starts against one limited endpoint are made one at a time (`exclusive`): each reconcile that
 * may start such a run sees the runs started before it, whichever Station they belong to.
 */

import type { ControllerSettings } from "../core/input.js";
import type { ProviderInput } from "../core/provider-limits/admission.js";
import type { ProviderEndpoint } from "../core/provider-limits/endpoint.js";
import {
  DEFAULT_MAX_HOLD_MS,
  type EndpointRecord,
  FORGET_MS,
  learnCleanRun,
  learnStart,
  learnThrottle,
  learnTokens,
  restrains,
  settle,
} from "../core/provider-limits/learner.js";
import { providerEndpointOf } from "../core/provider-limits/run-endpoint.js";
import { queueOrder } from "../core/station-limits/concurrency.js";
import { type Agent, type AgentDefinition, isTerminal, phaseOf, type Station } from "../core/types.js";

export interface ProviderLimitsDeps {
  /** PROVIDER_LEARNING: learn from throttling (tokens per run and run starts are recorded regardless). */
  learning: boolean;
  settings: ControllerSettings;
  now: () => number;
  agent(name: string): Agent | undefined;
  station(name: string): Station | undefined;
  definition(name: string): AgentDefinition | undefined;
  /** A Job creation or batch submit issued for this Agent is not yet visible as Running. */
  issued(name: string): boolean;
}

interface Indexed {
  uid: string;
  generation: number | undefined;
  endpoint: ProviderEndpoint;
}

/** What one finished run has taught already (a later status update may add its providerRetries). */
interface Learned {
  throttle?: boolean;
  clean?: boolean;
  tokens?: boolean;
}

/** Tokens that count against a provider's per-minute limit: Anthropic leaves cache reads out. */
export function limitTokens(provider: string, usage: NonNullable<Agent["status"]>["usage"]): number {
  if (!usage) return 0;
  const all =
    usage.totalTokens ??
    (usage.inputTokens ?? 0) +
      (usage.outputTokens ?? 0) +
      (usage.cacheReadTokens ?? 0) +
      (usage.cacheWriteTokens ?? 0);
  return provider === "anthropic" ? all - (usage.cacheReadTokens ?? 0) : all;
}

export class ProviderLimits {
  private readonly byAgent = new Map<string, Indexed>();
  private readonly byEndpoint = new Map<string, Set<string>>();
  private readonly records = new Map<string, EndpointRecord>();
  private readonly learned = new Map<string, Learned>();
  private readonly locks = new Map<string, Promise<void>>();

  constructor(private readonly d: ProviderLimitsDeps) {}

  /** PROVIDER_MAX_HOLD_SECONDS: the longest one run's report holds the endpoint. */
  private get maxHoldMs(): number {
    const s = this.d.settings.providerMaxHoldSeconds;
    return s !== undefined ? s * 1000 : DEFAULT_MAX_HOLD_MS;
  }

  /** The endpoint's record as it stands now (tests, the benchmark). */
  record(endpointId: string): EndpointRecord | undefined {
    return settle(this.records.get(endpointId), this.d.now());
  }

  /** The endpoint an Agent of the index uses. */
  endpointOf(agentName: string): ProviderEndpoint | undefined {
    return this.byAgent.get(agentName)?.endpoint;
  }

  /**
   * A cache change of an Agent: index it while Pending or Running, learn from it once it has
   * ended. Returns the endpoint a run left (its waiting Agents may start now), if any.
   */
  observe(agent: Agent, deleted: boolean): string | undefined {
    const name = agent.metadata.name ?? "";
    const uid = agent.metadata.uid ?? "";
    const phase = phaseOf(agent);
    const before = this.byAgent.get(name);
    if (deleted || isTerminal(phase)) {
      const endpoint = before?.uid === uid ? before.endpoint : this.resolve(agent);
      if (!deleted && endpoint) this.learnFrom(agent, endpoint);
      if (deleted) this.learned.delete(uid);
      this.unindex(name);
      return endpoint?.id;
    }
    // A Running run keeps the endpoint it started with; a Pending one follows its spec.
    if (before?.uid === uid && (phase === "Running" || before.generation === agent.metadata.generation))
      return undefined;
    const endpoint = this.resolve(agent);
    this.unindex(name);
    if (endpoint) this.index(name, { uid, generation: agent.metadata.generation, endpoint });
    return undefined;
  }

  /** The Station or its definition changed: its waiting Agents may use another endpoint now. */
  restation(agents: Agent[]): void {
    for (const a of agents) {
      if (phaseOf(a) !== "Pending") continue;
      const name = a.metadata.name ?? "";
      this.unindex(name);
      const endpoint = this.resolve(a);
      if (endpoint) {
        this.index(name, { uid: a.metadata.uid ?? "", generation: a.metadata.generation, endpoint });
      }
    }
  }

  /** The waiting Agents against an endpoint, oldest first (whom to reconcile when a run ends). */
  waitingOn(endpointId: string): string[] {
    const out: Agent[] = [];
    for (const name of this.byEndpoint.get(endpointId) ?? []) {
      const a = this.d.agent(name);
      if (a && phaseOf(a) === "Pending") out.push(a);
    }
    return out.sort(queueOrder).map((a) => a.metadata.name ?? "");
  }

  /** A Job was created or a batch submitted for this Agent. */
  started(agentName: string): void {
    const e = this.byAgent.get(agentName)?.endpoint;
    if (e) this.records.set(e.id, learnStart(this.records.get(e.id), this.d.now()));
  }

  /** A batch submit of this Agent was answered 429 or 529. */
  batchThrottled(agentName: string, status: number, retryAfterSeconds: number | undefined): void {
    const e = this.byAgent.get(agentName)?.endpoint;
    if (!e || !this.d.learning) return;
    const now = this.d.now();
    const signal = {
      provider: e.provider,
      status,
      at: now,
      ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
      agent: agentName,
      runStartedAt: now,
      source: "batch" as const,
    };
    this.records.set(
      e.id,
      learnThrottle(this.records.get(e.id), signal, this.going(e.id) + 1, now, this.maxHoldMs),
    );
  }

  /**
   * The core's input for a Pending Agent whose endpoint may hold it: its Station declares
   * providerLimits, or something learned of the endpoint restrains it. Undefined otherwise.
   */
  inputFor(agent: Agent, station: Station | undefined, definition: AgentDefinition | undefined) {
    if (phaseOf(agent) !== "Pending" || !station || !definition) return undefined;
    const name = agent.metadata.name ?? "";
    const endpoint =
      this.byAgent.get(name)?.endpoint ?? providerEndpointOf(agent, station, definition, this.d.settings);
    if (!endpoint) return undefined;
    const record = settle(this.records.get(endpoint.id), this.d.now());
    if (record) this.records.set(endpoint.id, record);
    if (!station.spec.providerLimits && !restrains(record)) return undefined;
    const waiting: string[] = [];
    for (const n of this.byEndpoint.get(endpoint.id) ?? []) {
      const a = this.d.agent(n);
      if (a && phaseOf(a) === "Pending" && !this.d.issued(n)) waiting.push(n);
    }
    const input: ProviderInput = {
      endpoint,
      running: this.going(endpoint.id, name),
      waiting,
      ...(record ? { record } : {}),
    };
    return input;
  }

  /** Whether a reconcile of this Pending Agent may start a run a provider limit governs. */
  limits(agent: Agent, station: Station | undefined): string | undefined {
    if (phaseOf(agent) !== "Pending") return undefined;
    const e = this.byAgent.get(agent.metadata.name ?? "")?.endpoint;
    if (!e) return undefined;
    return station?.spec.providerLimits || restrains(this.records.get(e.id)) ? e.id : undefined;
  }

  /** Runs `fn` after every earlier `exclusive` of the same endpoint has finished. */
  async exclusive<T>(endpointId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(endpointId) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => {
      release = r;
    });
    const tail = prev.then(() => mine);
    this.locks.set(endpointId, tail);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.locks.get(endpointId) === tail) this.locks.delete(endpointId);
    }
  }

  /** Runs against the endpoint going: Running, or Pending with a creation issued. */
  private going(endpointId: string, except?: string): number {
    let n = 0;
    for (const name of this.byEndpoint.get(endpointId) ?? []) {
      if (name === except) continue;
      const a = this.d.agent(name);
      if (!a) continue;
      const phase = phaseOf(a);
      if (phase === "Running" || (phase === "Pending" && this.d.issued(name))) n++;
    }
    return n;
  }

  private learnFrom(agent: Agent, endpoint: ProviderEndpoint): void {
    const now = this.d.now();
    const s = agent.status ?? {};
    const ended = Date.parse(s.completedAt ?? "");
    // A run that ended long ago (seen again after a restart) says nothing about the provider now.
    if (!Number.isNaN(ended) && now - ended >= FORGET_MS) return;
    const uid = agent.metadata.uid ?? "";
    const seen = this.learned.get(uid) ?? {};
    this.learned.set(uid, seen);
    let rec = this.records.get(endpoint.id);
    const startedAt = Date.parse(s.startedAt ?? "");
    const runStartedAt = Number.isNaN(startedAt) ? now : startedAt;
    // The run's lifetime bounds when its provider can have answered it (learner.ts boundedThrottle).
    const runEndedAt = Number.isNaN(ended) ? now : ended;
    const inFlight = this.going(endpoint.id, agent.metadata.name) + 1;
    const retries = s.providerRetries;
    if (this.d.learning && retries && retries.count > 0 && retries.last && !seen.throttle) {
      const at = Date.parse(retries.last.at);
      seen.throttle = true;
      rec = learnThrottle(
        rec,
        {
          provider: retries.last.provider,
          status: retries.last.status,
          at: Number.isNaN(at) ? now : at,
          ...(retries.last.retryAfterSeconds !== undefined
            ? { retryAfterSeconds: retries.last.retryAfterSeconds }
            : {}),
          agent: agent.metadata.name ?? "",
          runStartedAt,
          runEndedAt,
          source: "run",
        },
        inFlight,
        now,
        this.maxHoldMs,
      );
    } else if (this.d.learning && s.phase === "Succeeded" && !seen.clean && !seen.throttle) {
      seen.clean = true;
      rec = learnCleanRun(rec, runStartedAt, inFlight);
    }
    if (s.phase === "Succeeded" && !seen.tokens && s.usage) {
      seen.tokens = true;
      rec = learnTokens(rec, limitTokens(endpoint.provider, s.usage), agent.metadata.name ?? "");
    }
    if (rec) this.records.set(endpoint.id, rec);
  }

  private resolve(agent: Agent): ProviderEndpoint | undefined {
    const station = this.d.station(agent.spec.stationRef);
    const definition = station ? this.d.definition(station.spec.agentDefRef) : undefined;
    return station && definition
      ? providerEndpointOf(agent, station, definition, this.d.settings)
      : undefined;
  }

  private index(name: string, entry: Indexed): void {
    this.byAgent.set(name, entry);
    let set = this.byEndpoint.get(entry.endpoint.id);
    if (!set) {
      set = new Set();
      this.byEndpoint.set(entry.endpoint.id, set);
    }
    set.add(name);
  }

  private unindex(name: string): void {
    const entry = this.byAgent.get(name);
    if (!entry) return;
    this.byAgent.delete(name);
    const set = this.byEndpoint.get(entry.endpoint.id);
    set?.delete(name);
    if (set?.size === 0) this.byEndpoint.delete(entry.endpoint.id);
  }
}
