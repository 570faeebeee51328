/**
 * The controller's Kubernetes Event recorder. `record()` never blocks and never throws: it puts
 * the Event on a bounded queue (full ⇒ the Event is dropped and counted, as client-go's broadcaster
 * does) and returns. One worker drains the queue in order: correlate (aggregate, deduplicate,
 * rate-limit per object; see correlator.ts), then create the Event or bump its series. A write
 * that fails is retried a few times with backoff and then dropped; a reconcile never waits for
 * any of it.
 */
import type { KubeEvent } from "../../core/actions.js";
import type { AgentRef } from "../../core/types.js";
import { type EventWriter, eventObject, microTime } from "../../kube/event-writer.js";
import { type CorrelatorOptions, EventCorrelator, type EventRecord } from "./correlator.js";

/** What the executor needs: hand over an Event, never wait. */
export interface KubeEventRecorder {
  record(regarding: AgentRef, event: KubeEvent): void;
}

export interface EventRecorderOptions {
  writer: EventWriter;
  /** `reportingInstance`: the controller pod's name (POD_NAME). */
  reportingInstance: string;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  log?: (msg: string) => void;
  /** Events waiting to be sent. client-go: 1000. */
  queueCapacity?: number;
  /** Attempts per API write before the Event is dropped. */
  maxAttempts?: number;
  /** Wait before the second attempt; doubles for each further one. */
  retryDelayMs?: number;
  correlator?: CorrelatorOptions;
}

export class EventRecorder implements KubeEventRecorder {
  private readonly queue: EventRecord[] = [];
  private readonly correlator: EventCorrelator;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly log: (msg: string) => void;
  private readonly capacity: number;
  private readonly maxAttempts: number;
  private readonly retryDelayMs: number;
  private worker: Promise<void> | undefined;
  private closed = false;
  /** Events dropped because the queue was full or the API kept refusing them. */
  dropped = 0;
  /** Events (creates and series bumps) written to the API server. */
  written = 0;

  constructor(private readonly o: EventRecorderOptions) {
    this.correlator = new EventCorrelator(o.correlator);
    this.now = o.now ?? Date.now;
    this.sleep = o.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms).unref()));
    this.log = o.log ?? (() => {});
    this.capacity = o.queueCapacity ?? 1000;
    this.maxAttempts = o.maxAttempts ?? 3;
    this.retryDelayMs = o.retryDelayMs ?? 1000;
  }

  record(regarding: AgentRef, event: KubeEvent): void {
    if (this.closed) return;
    if (this.queue.length >= this.capacity) {
      this.dropped++;
      if (this.dropped === 1 || this.dropped % 100 === 0) {
        this.log(`event queue full (${this.capacity}); ${this.dropped} Kubernetes Events dropped so far`);
      }
      return;
    }
    this.queue.push({ regarding, event, at: this.now() });
    if (!this.worker) this.worker = this.drain().finally(() => (this.worker = undefined));
  }

  /** Resolves once every Event recorded so far has been sent or dropped. */
  async flush(): Promise<void> {
    while (this.worker) await this.worker;
  }

  /** Stops accepting Events; waits at most `graceMs` for the queue to drain, then abandons it. */
  async stop(graceMs = 5000): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.flush(),
      new Promise<void>((r) => {
        timer = setTimeout(r, graceMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    this.dropped += this.queue.length;
    this.queue.length = 0;
  }

  private async drain(): Promise<void> {
    for (let r = this.queue.shift(); r; r = this.queue.shift()) {
      try {
        await this.send(r);
      } catch (err) {
        this.dropped++;
        this.log(
          `Kubernetes Event ${r.event.reason} for Agent ${r.regarding.name} dropped after ${this.maxAttempts} attempts: ${String(err)}`,
        );
      }
    }
  }

  private async send(r: EventRecord): Promise<void> {
    const c = this.correlator.correlate(r);
    if (c.kind === "skip") return;
    const base = {
      name: c.name,
      regarding: r.regarding,
      event: r.event,
      note: c.note,
      at: r.at,
      reportingInstance: this.o.reportingInstance,
    };
    if (c.kind === "create") {
      await this.attempt(() => this.o.writer.create(eventObject(base)));
      return;
    }
    const series = { count: c.count, lastObservedTime: microTime(r.at) };
    await this.attempt(async () => {
      const res = await this.o.writer.patchSeries(r.regarding.namespace, c.name, series);
      // The Event expired (the API server keeps Events for an hour) or was deleted: write it again.
      if (res === "not_found") await this.o.writer.create(eventObject({ ...base, series }));
    });
  }

  private async attempt(write: () => Promise<void>): Promise<void> {
    for (let n = 1; ; n++) {
      try {
        await write();
        this.written++;
        return;
      } catch (err) {
        if (n >= this.maxAttempts || this.closed) throw err;
        await this.sleep(this.retryDelayMs * 2 ** (n - 1));
      }
    }
  }
}
