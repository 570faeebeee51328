/**
 * The one way a run-pod program (init, supervisor, courier) reports: every event is written bare
 * to its own stdout (that log is what the controller reads back) and, wrapped in the envelope,
 * queued for the run's http and file sinks (docs/events.md#who-sends-events, docs/events.md#delivery-guarantees).
 *
 * Sink delivery reuses the controller's SinkDispatcher: one ordered queue per sink, retry with
 * backoff, a per-attempt timeout and a bounded queue (docs/decisions.md D-34), so a slow or dead sink never stalls
 * the agent. In a pod a sink's `headers_secret` arrives as an env var of the same name, so the
 * "secret reader" is a lookup in the environment.
 */
import { writeSync } from "node:fs";
import type { Vendor } from "../../core/cli/routing.js";
import type { OutputSelector, Sink } from "../../core/types.js";
import { timedPost } from "../../http-post.js";
import { type JsonLineLogger, jsonLineLogger } from "../../log.js";
import { SinkDispatcher, type SinkDispatcherOptions } from "../../sinks/dispatcher.js";
import type { EventSource } from "../../sinks/envelope.js";
import type { LifecycleEvent } from "../../sinks/lifecycle.js";
import { retryFromEnv } from "../../sinks/retry.js";
import { resolveSinks } from "../../sinks/sinks.js";
import { runPodDispatcher } from "./http-dispatcher.js";
import { type Env, podSelect, podSinks, podSource } from "./run-env.js";

/** Writes one line to a file descriptor, synchronously, so nothing is lost on an immediate exit. */
export type LineWriter = (line: string) => void;

export const stdoutWriter: LineWriter = (line) => writeAll(1, `${line}\n`);
export const stderrWriter: LineWriter = (line) => writeAll(2, `${line}\n`);

function writeAll(fd: number, text: string): void {
  const buf = Buffer.from(text, "utf8");
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(fd, buf, off);
    } catch (err) {
      // A non-blocking pipe that is full: try again; anything else (EPIPE) loses the line.
      if ((err as NodeJS.ErrnoException).code === "EAGAIN") continue;
      return;
    }
  }
}

export interface RunEmitterOptions {
  env: Env;
  /** Classification rules for tool-native lines (routeModel of AGENT_MODEL). */
  vendor: Vendor;
  stdout?: LineWriter;
  log?: JsonLineLogger;
  /** Test seams for the dispatcher (post, appendFile, sleep, attemptTimeoutMs, maxQueued). */
  dispatcher?: Partial<SinkDispatcherOptions>;
}

/** Default bound on the wait for sink queues before a program exits (docs/decisions.md D-34). */
export const DRAIN_TIMEOUT_MS = 20_000;

export class RunEmitter {
  readonly source: EventSource;
  readonly sinks: readonly Sink[];
  readonly select: readonly OutputSelector[];
  private readonly vendor: Vendor;
  private readonly stdout: LineWriter;
  private readonly dispatcher: SinkDispatcher;
  /** The http and file sinks; undeliverable entries are logged once here, not once per event. */
  private readonly deliverable: readonly Sink[];

  constructor(options: RunEmitterOptions) {
    const { env } = options;
    const log = options.log ?? jsonLineLogger("sinks");
    this.source = podSource(env);
    this.sinks = podSinks(env);
    this.select = podSelect(env);
    this.vendor = options.vendor;
    this.stdout = options.stdout ?? stdoutWriter;
    for (const reason of resolveSinks(this.sinks).skipped) log.warn("sink skipped", { reason });
    this.deliverable = this.sinks.filter((sink) => resolveSinks([sink]).sinks.length > 0);
    this.dispatcher = new SinkDispatcher({
      readSecretKey: async (_namespace, key) => env[key],
      retry: retryFromEnv(env),
      // docs/decisions.md D-61: relative file sink paths resolve against HOME, shared by every run container.
      fileBaseDir: env.HOME || "/agent",
      log,
      // Through the gateway's egress proxy when the container's env names one (docs/gateway.md#egress).
      post: async ({ url, headers, body, timeoutMs }) => {
        const { status } = await timedPost({ url, headers, body, timeoutMs, dispatcher: runPodDispatcher() });
        return { status };
      },
      ...options.dispatcher,
    });
  }

  /** A platform event (lifecycle, file, turn, delivery): stdout, then every sink, never filtered. */
  event(event: LifecycleEvent | object): void {
    this.stdout(JSON.stringify(event));
    void this.dispatcher.deliver(this.request([{ type: "lifecycle", event }]));
  }

  /** A tool-native line: stdout bare and unfiltered; to the sinks only if it passes output.select. */
  line(line: string): void {
    this.stdout(line);
    void this.dispatcher.deliver(this.request([{ type: "cliLine", line }]));
  }

  /** Events waiting or in flight across all sinks. */
  get pending(): number {
    return this.dispatcher.pending;
  }

  /** Waits for the sink queues (at most `timeoutMs`); true when everything was delivered or dropped. */
  drain(timeoutMs = DRAIN_TIMEOUT_MS): Promise<boolean> {
    return this.dispatcher.drain(timeoutMs);
  }

  private request(items: Parameters<SinkDispatcher["deliver"]>[0]["items"]) {
    return { source: this.source, sinks: this.deliverable, select: this.select, vendor: this.vendor, items };
  }
}
