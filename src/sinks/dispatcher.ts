/**
 * SinkDispatcher: the controller's delivery of batch-run events to a definition's sinks.
 *
 * The executor calls {@link SinkDispatcher.deliver} after the status patch an event reports
 * has succeeded. Delivery is at most once: each http event is tried up to `retry.attempts`
 * times with the sink backoff, then dropped and logged; nothing is persisted, so a crash loses
 * what is queued. Events go out in emission order per (run, sink) through one queue each, so
 * a slow or dead sink delays only its own run's events, never a reconcile loop.
 */
import { isAbsolute, resolve as resolvePath } from "node:path";
import type { SinkItem } from "../core/actions.js";
import type { Vendor } from "../core/cli/routing.js";
import type { OutputSelector, Sink } from "../core/types.js";
import {
  type Envelope,
  type EventSource,
  normalizeSource,
  parseLine,
  serializeEnvelope,
  wrap,
} from "./envelope.js";
import { parseHeaderBlock } from "./headers.js";
import { canonicalLifecycle } from "./lifecycle.js";
import { backoffMs, DEFAULT_RETRY, type RetrySettings } from "./retry.js";
import { passesSelect } from "./select.js";
import { type ResolvedSink, resolveSinks, sinkKey } from "./sinks.js";
import {
  type AppendFile,
  fsAppend,
  type HttpPost,
  jsonLogger,
  realSleep,
  type SinkLogger,
  type Sleep,
  undiciPost,
} from "./transport.js";

/** What to deliver; the core's `EmitSinkEventsAction` satisfies it. */
export interface DeliveryRequest {
  /** Envelope source: agent, station, task, namespace; no pod for batch runs. */
  source: EventSource;
  /** The definition's output.sinks. */
  sinks: readonly Sink[];
  /** The definition's output.select; empty or absent lets every CLI line through. */
  select?: readonly OutputSelector[];
  /** Classification rules for cliLine items (routeModel of the effective model). */
  vendor: Vendor;
  /**
   * In emission order. A platform event may be any event object (the run pod's file and delivery
   * events travel here too); a `cliLine` is JSON text without its newline.
   */
  items: readonly SinkItem<object>[];
}

/** Reads one key of the agent-secrets Secret in `namespace`; undefined when absent. */
export type SecretKeyReader = (namespace: string, key: string) => Promise<string | undefined>;

export interface SinkDispatcherOptions {
  readSecretKey: SecretKeyReader;
  post?: HttpPost;
  appendFile?: AppendFile;
  sleep?: Sleep;
  log?: SinkLogger;
  /** Default: the pod defaults; the controller passes retryFromEnv(process.env) (docs/decisions.md D-37). */
  retry?: RetrySettings;
  /** Per-attempt timeout, default 10 000 ms (docs/decisions.md D-34). */
  attemptTimeoutMs?: number;
  /** Base for relative file sink paths, default $HOME or "/" (docs/decisions.md D-61 resolves against HOME). */
  fileBaseDir?: string;
  /** Bound on queued events across all queues, default 10 000 (docs/decisions.md D-34). */
  maxQueued?: number;
  /**
   * Bound on the bytes of the queued events' bodies across all queues, default 32 MiB: a count
   * alone lets 10 000 lines of up to 16 MiB each pile up in memory behind a dead sink.
   */
  maxQueuedBytes?: number;
  /** Told how each event ended on each sink (the controller counts them in a metric). */
  onOutcome?: (outcome: SinkOutcome) => void;
}

/** How one event ended on one sink: sent, given up after the retries, or dropped unsent. */
export type SinkOutcome = "delivered" | "failed" | "dropped";

export const DEFAULT_ATTEMPT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_QUEUED = 10_000;
export const DEFAULT_MAX_QUEUED_BYTES = 32 * 1024 * 1024;

const NO_HEADERS: Promise<Record<string, string>> = Promise.resolve({});

interface QueueItem {
  /** The serialized envelope: only the text waits in memory, not the parsed line. */
  body: string;
  /** Its UTF-8 size, counted against maxQueuedBytes until the item is done. */
  bytes: number;
  source: EventSource;
  /** Tool-native lines may be dropped on overflow or at shutdown; platform events never are. */
  droppable: boolean;
  /** The header block of the request this item came from. */
  headers: Promise<Record<string, string>>;
  done: () => void;
}

interface Queue {
  sink: ResolvedSink;
  items: QueueItem[];
  worker?: Promise<void>;
}

export class SinkDispatcher {
  private readonly readSecretKey: SecretKeyReader;
  private readonly post: HttpPost;
  private readonly appendFile: AppendFile;
  private readonly sleep: Sleep;
  private readonly log: SinkLogger;
  private readonly retry: RetrySettings;
  private readonly attemptTimeoutMs: number;
  private readonly fileBaseDir: string;
  private readonly maxQueued: number;
  private readonly maxQueuedBytes: number;
  private readonly onOutcome: (outcome: SinkOutcome) => void;
  private readonly queues = new Map<string, Queue>();
  private queued = 0;
  private queuedBytes = 0;
  /** Set when a drain's time runs short: queued lines give way to the platform events. */
  private shedding = false;

  constructor(options: SinkDispatcherOptions) {
    this.readSecretKey = options.readSecretKey;
    this.post = options.post ?? undiciPost;
    this.appendFile = options.appendFile ?? fsAppend;
    this.sleep = options.sleep ?? realSleep;
    this.log = options.log ?? jsonLogger;
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
    this.fileBaseDir = options.fileBaseDir ?? process.env.HOME ?? "/";
    this.maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
    this.maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
    this.onOutcome = options.onOutcome ?? (() => {});
  }

  /** Events waiting or in flight, across all sinks. */
  get pending(): number {
    return this.queued;
  }

  /** Bytes of the events waiting or in flight, across all sinks. */
  get pendingBytes(): number {
    return this.queuedBytes;
  }

  /**
   * Queues the request's events on each of the definition's sinks and resolves once every one
   * of them was delivered or dropped. Never rejects. Enqueueing is synchronous, so calls made in
   * order are delivered in order; callers that must not wait can ignore the promise.
   */
  deliver(req: DeliveryRequest): Promise<void> {
    const { sinks, skipped } = resolveSinks(req.sinks);
    const source = normalizeSource(req.source);
    for (const reason of skipped) this.log.warn("sink skipped", { reason, ...source });
    if (sinks.length === 0) return Promise.resolve();

    const envelopes = this.envelopesFor(req, source);
    if (envelopes.length === 0) return Promise.resolve();

    const waits: Promise<void>[] = [];
    const headerBlocks = new Map<string, Promise<Record<string, string>>>();
    for (const sink of sinks) {
      const key = `${source.namespace ?? ""}/${source.agent ?? ""} ${sinkKey(sink)}`;
      // The header block is read once per request and per secret key.
      let headers: Promise<Record<string, string>> = NO_HEADERS;
      if (sink.type === "http" && sink.headersSecret !== undefined) {
        const secretKey = sink.headersSecret;
        headers =
          headerBlocks.get(secretKey) ?? this.resolveHeaders(source.namespace ?? "", secretKey, source);
        headerBlocks.set(secretKey, headers);
      }
      for (const { envelope, droppable } of envelopes) {
        const body = serializeEnvelope(envelope);
        const item = { body, bytes: Buffer.byteLength(body), source: envelope.source, droppable };
        waits.push(this.enqueue(key, sink, item, headers));
      }
    }
    return Promise.all(waits).then(() => undefined);
  }

  /**
   * Resolves true once every queue is empty (tests, shutdown). With `timeoutMs`, resolves false
   * if that much time passes first; what is still queued then is lost (at most once). So that a
   * slow sink loses tool-native lines rather than the run's last (terminal) event, the lines still
   * queued when half the time is gone are dropped, and a line in retry gives up: the platform
   * events get the rest of the time to themselves.
   */
  async drain(timeoutMs?: number): Promise<boolean> {
    const drained = (async () => {
      for (;;) {
        const workers = [...this.queues.values()].flatMap((q) => (q.worker ? [q.worker] : []));
        if (workers.length === 0) break;
        await Promise.all(workers);
      }
      return true;
    })();
    if (timeoutMs === undefined) return drained;
    const timers: NodeJS.Timeout[] = [];
    const timedOut = new Promise<boolean>((resolve) => {
      timers.push(setTimeout(() => resolve(false), timeoutMs));
    });
    timers.push(setTimeout(() => this.shed(), Math.floor(timeoutMs / 2)));
    try {
      return await Promise.race([drained, timedOut]);
    } finally {
      for (const t of timers) clearTimeout(t);
    }
  }

  /** Drops every queued tool-native line that is not in flight (shutdown is short of time). */
  private shed(): void {
    this.shedding = true;
    let dropped = 0;
    for (const queue of this.queues.values()) {
      for (let i = queue.items.length - 1; i > 0; i--) {
        const item = queue.items[i];
        if (!item?.droppable) continue;
        queue.items.splice(i, 1);
        this.onOutcome("dropped");
        item.done();
        dropped++;
      }
    }
    if (dropped > 0) {
      this.log.warn("sink queues not drained in half the shutdown time; queued lines dropped", { dropped });
    }
  }

  private envelopesFor(
    req: DeliveryRequest,
    source: EventSource,
  ): Array<{ envelope: Envelope; droppable: boolean }> {
    const out: Array<{ envelope: Envelope; droppable: boolean }> = [];
    for (const item of req.items) {
      if (item.type === "cliLine") {
        if (!passesSelect(req.select, req.vendor, item.line)) continue;
        const envelope = wrap(source, parseLine(item.line));
        if (envelope === undefined) {
          this.log.error("line already is an envelope; not delivered (bug)", { ...source });
          continue;
        }
        out.push({ envelope, droppable: true });
      } else {
        const envelope = wrap(source, canonicalLifecycle(item.event));
        if (envelope === undefined) {
          this.log.error("event already is an envelope; not delivered (bug)", { ...source });
          continue;
        }
        out.push({ envelope, droppable: false });
      }
    }
    return out;
  }

  /** An unresolvable block means "no headers", never a failure (docs/events.md#sinks). */
  private async resolveHeaders(
    namespace: string,
    secretKey: string,
    source: EventSource,
  ): Promise<Record<string, string>> {
    let block: string | undefined;
    try {
      block = await this.readSecretKey(namespace, secretKey);
    } catch (err) {
      this.log.warn("sink headers_secret unreadable; sending without headers", {
        key: secretKey,
        error: errorText(err),
        ...source,
      });
      return {};
    }
    if (block === undefined) {
      this.log.warn("sink headers_secret not found in agent-secrets; sending without headers", {
        key: secretKey,
        ...source,
      });
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of parseHeaderBlock(block)) headers[name] = value;
    return headers;
  }

  private enqueue(
    key: string,
    sink: ResolvedSink,
    item: Pick<QueueItem, "body" | "bytes" | "source" | "droppable">,
    headers: Promise<Record<string, string>>,
  ): Promise<void> {
    return new Promise<void>((done) => {
      const existing = this.queues.get(key);
      const full = () => this.queued >= this.maxQueued || this.queuedBytes + item.bytes > this.maxQueuedBytes;
      const tooLarge = item.droppable && item.bytes > this.maxQueuedBytes;
      // Room is made from this queue's oldest lines; a platform event is queued whatever the bound.
      while (!tooLarge && full() && existing && this.dropOldestLine(existing)) {
        // each pass dropped one line
      }
      if ((tooLarge || full() || this.shedding) && item.droppable) {
        this.log.warn(
          this.shedding ? "sink queue shutting down; line dropped" : "sink queue full; event dropped",
          { sink: sinkKey(sink), bytes: item.bytes, ...item.source },
        );
        this.onOutcome("dropped");
        done();
        return;
      }
      // A queue exists only while it has items and a worker, so drain() never waits on an idle one.
      const queue: Queue = existing ?? { sink, items: [] };
      if (existing === undefined) this.queues.set(key, queue);
      this.queued++;
      this.queuedBytes += item.bytes;
      queue.items.push({
        ...item,
        headers,
        done: () => {
          this.queued--;
          this.queuedBytes -= item.bytes;
          done();
        },
      });
      if (queue.worker === undefined) queue.worker = this.work(key, queue);
    });
  }

  /** Overflow drops the oldest not-yet-started tool-native line of this queue (docs/decisions.md D-34). */
  private dropOldestLine(queue: Queue): boolean {
    // Index 0 may be in flight; never drop it.
    const index = queue.items.findIndex((item, i) => i > 0 && item.droppable);
    if (index < 0) return false;
    const [dropped] = queue.items.splice(index, 1);
    this.log.warn("sink queue full; oldest line dropped", {
      sink: sinkKey(queue.sink),
      ...dropped?.source,
    });
    this.onOutcome("dropped");
    dropped?.done();
    return true;
  }

  private async work(key: string, queue: Queue): Promise<void> {
    for (;;) {
      const item = queue.items[0];
      if (item === undefined) break;
      try {
        this.onOutcome(await this.send(queue.sink, item, await item.headers));
      } catch (err) {
        // send() handles its own failures; this guards the queue against a bug.
        this.log.error("sink delivery crashed", { error: errorText(err) });
        this.onOutcome("failed");
      }
      queue.items.shift();
      item.done();
    }
    queue.worker = undefined;
    this.queues.delete(key);
  }

  private async send(
    sink: ResolvedSink,
    item: QueueItem,
    headers: Record<string, string>,
  ): Promise<SinkOutcome> {
    const { body, source } = item;
    if (sink.type === "file") {
      const path = isAbsolute(sink.path) ? sink.path : resolvePath(this.fileBaseDir, sink.path);
      try {
        await this.appendFile(path, `${body}\n`);
        return "delivered";
      } catch (err) {
        this.log.warn("file sink write failed", { path, error: errorText(err), ...source });
        return "failed";
      }
    }
    return this.sendHttp(sink.url, body, headers, source, item.droppable);
  }

  private async sendHttp(
    url: string,
    body: string,
    extraHeaders: Record<string, string>,
    source: EventSource,
    droppable: boolean,
  ): Promise<SinkOutcome> {
    const headers = mergeHeaders({ "Content-Type": "application/json" }, extraHeaders);
    for (let attempt = 1; ; attempt++) {
      let failure: string;
      try {
        const { status } = await this.post({ url, headers, body, timeoutMs: this.attemptTimeoutMs });
        if (status >= 200 && status < 300) return "delivered";
        failure = `HTTP ${status}`;
      } catch (err) {
        failure = errorText(err);
      }
      if (attempt >= this.retry.attempts) {
        this.log.error(`http sink failed after retries: ${url}`, {
          attempts: attempt,
          error: failure,
          ...source,
        });
        return "failed";
      }
      this.log.warn("http sink attempt failed", { url, attempt, error: failure, ...source });
      // Shutting down short of time: a line stops retrying so the platform events behind it go.
      if (this.shedding && droppable) return "dropped";
      await this.sleep(backoffMs(this.retry, attempt));
    }
  }
}

/** Header names are case-insensitive: a block entry replaces a default of the same name. */
function mergeHeaders(base: Record<string, string>, extra: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = { ...base };
  for (const [name, value] of Object.entries(extra)) {
    for (const existing of Object.keys(out)) {
      if (existing.toLowerCase() === name.toLowerCase()) delete out[existing];
    }
    out[name] = value;
  }
  return out;
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  }
  return String(err);
}
