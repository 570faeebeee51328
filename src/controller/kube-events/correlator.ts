/**
 * Decides what one recorded Event becomes on the API server, the way client-go's EventCorrelator
 * does (tools/record/events_cache.go), on events.k8s.io/v1 terms. Pure apart from its caches; the
 * clock is the `at` of each record.
 *
 * 1. Aggregate: once an object has had `maxSimilar` distinct notes for the same type, reason and
 *    action within `similarWindowMs`, further ones are folded into one Event whose note starts
 *    "(combined from similar events): ".
 * 2. Deduplicate: an Event identical to one already sent (same object, type, reason, action,
 *    note) is not created again; the existing Event's `series.count` and
 *    `series.lastObservedTime` are bumped instead.
 * 3. Rate-limit: a token bucket per object (burst 25, one token per 5 minutes); an Event without
 *    a token is dropped. As in client-go this runs last, so a dropped repeat still counts.
 */
import type { KubeEvent } from "../../core/actions.js";
import type { AgentRef } from "../../core/types.js";
import { LruMap } from "./lru.js";
import { TokenBucket } from "./token-bucket.js";

export const AGGREGATED_PREFIX = "(combined from similar events): ";

export interface CorrelatorOptions {
  /** Token bucket per object: initial and maximum tokens. client-go: 25. */
  burst?: number;
  /** One token more every this many ms. client-go: 5 minutes. */
  refillEveryMs?: number;
  /** Distinct notes per (object, type, reason, action) before aggregation. client-go: 10. */
  maxSimilar?: number;
  /** Window of the aggregation count. client-go: 10 minutes. */
  similarWindowMs?: number;
  /** Entries per cache. client-go: 4096. */
  cacheSize?: number;
}

export interface EventRecord {
  regarding: AgentRef;
  event: KubeEvent;
  /** When it happened, epoch ms. */
  at: number;
}

export type Correlation =
  /** First occurrence: create an Event named `name` with this note. */
  | { kind: "create"; name: string; note: string }
  /** A repeat of the Event `name`: set its series (count ≥ 2). */
  | { kind: "series"; name: string; note: string; count: number }
  /** Rate-limited: send nothing. */
  | { kind: "skip" };

interface Observed {
  name: string;
  count: number;
}

interface Similar {
  notes: Set<string>;
  lastAt: number;
}

/** Max length of an Event name (a DNS subdomain). */
const MAX_NAME = 253;

export class EventCorrelator {
  private readonly burst: number;
  private readonly refillEveryMs: number;
  private readonly maxSimilar: number;
  private readonly similarWindowMs: number;
  private readonly buckets: LruMap<string, TokenBucket>;
  private readonly similar: LruMap<string, Similar>;
  private readonly observed: LruMap<string, Observed>;
  private seq = 0;

  constructor(o: CorrelatorOptions = {}) {
    this.burst = o.burst ?? 25;
    this.refillEveryMs = o.refillEveryMs ?? 300_000;
    this.maxSimilar = o.maxSimilar ?? 10;
    this.similarWindowMs = o.similarWindowMs ?? 600_000;
    const size = o.cacheSize ?? 4096;
    this.buckets = new LruMap(size);
    this.similar = new LruMap(size);
    this.observed = new LruMap(size);
  }

  correlate(r: EventRecord): Correlation {
    const object = objectKey(r.regarding);
    const { type, reason, action } = r.event;
    const aggregateKey = JSON.stringify([object, type, reason, action]);

    let note = r.event.note;
    let eventKey = JSON.stringify([aggregateKey, note]);
    let sim = this.similar.get(aggregateKey);
    if (!sim || r.at - sim.lastAt > this.similarWindowMs) sim = { notes: new Set(), lastAt: r.at };
    sim.notes.add(note);
    sim.lastAt = r.at;
    this.similar.set(aggregateKey, sim);
    if (sim.notes.size >= this.maxSimilar) {
      note = `${AGGREGATED_PREFIX}${note}`;
      eventKey = JSON.stringify([aggregateKey, AGGREGATED_PREFIX]);
    }

    const seen = this.observed.get(eventKey);
    const next: Observed = seen
      ? { name: seen.name, count: seen.count + 1 }
      : { name: this.eventName(r.regarding.name, r.at), count: 1 };
    this.observed.set(eventKey, next);

    let bucket = this.buckets.get(object);
    if (!bucket) bucket = new TokenBucket(this.burst, this.refillEveryMs, r.at);
    this.buckets.set(object, bucket);
    if (!bucket.take(r.at)) return { kind: "skip" };

    return next.count === 1
      ? { kind: "create", name: next.name, note }
      : { kind: "series", name: next.name, note, count: next.count };
  }

  /**
   * `<object name>.<hex time in ns + sequence>`, client-go's naming; unique within this process
   * even for Events recorded in the same millisecond.
   */
  private eventName(objectName: string, at: number): string {
    const suffix = (
      BigInt(Math.max(0, Math.trunc(at))) * 1_000_000n +
      BigInt(this.seq++ % 1_000_000)
    ).toString(16);
    return `${objectName.slice(0, MAX_NAME - suffix.length - 1)}.${suffix}`;
  }
}

function objectKey(ref: AgentRef): string {
  return JSON.stringify([ref.namespace, ref.name, ref.uid]);
}
