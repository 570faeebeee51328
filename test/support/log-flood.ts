/**
 * A child program for src/controller/log-flood.test.ts: the controller's read-back path (gather,
 * its log-read semaphore, the log meter) against ten hostile 64 MiB pod logs finishing at once,
 * streamed by a fake KubeClient.streamLog that yields between chunks as the real one does, while
 * the controller's real health server answers /healthz and a Lease-renewal-like timer ticks. Run
 * with `node --max-old-space-size=512` (the controller's memory limit). Prints one JSON line with
 * the health port when it starts, and one with what it measured when every read is done.
 */
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import type { V1Job } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { DEFAULT_LOG_READ_CONCURRENCY } from "../../src/controller/config.js";
import { type GatherDeps, gather } from "../../src/controller/gather.js";
import { startHealthServer } from "../../src/controller/health.js";
import { Semaphore } from "../../src/controller/semaphore.js";
import { LogMeter } from "../../src/core/readback/log-meter.js";
import { agent, definition, NS, station, T0 } from "./core-builders.js";

/** The longest the loop went without a turn (wall time between two turns of a setImmediate chain). */
let longestChunkMs = 0;
/**
 * The most CPU time one feed of the meter took (gather feeds it one 16 KiB slice between two yields):
 * what the meter holds the loop for, free of the times the OS deschedules the process.
 */
let longestFeedCpuMs = 0;
const feed = LogMeter.prototype.feed;
LogMeter.prototype.feed = function (this: LogMeter, chunk: string) {
  const before = process.cpuUsage();
  feed.call(this, chunk);
  const used = process.cpuUsage(before);
  longestFeedCpuMs = Math.max(longestFeedCpuMs, (used.user + used.system) / 1000);
};
const LOGS = Number(process.env.FLOOD_LOGS ?? 10);
const BYTES = Number(process.env.FLOOD_MIB ?? 64) * 1024 * 1024;
const CHUNK = 64 * 1024;

/** The hostile logs: H3's `{"type":"system"}` lines, claude messages with ever new ids, one line without end. */
const kinds = [
  () => '{"type":"system"}\n'.repeat(CHUNK / 18),
  (n: number) =>
    Array.from(
      { length: 400 },
      (_, i) =>
        `${JSON.stringify({ type: "assistant", message: { id: `m${n}-${i}`, usage: { output_tokens: 1 } } })}\n`,
    ).join(""),
  () => "z".repeat(CHUNK),
];

const COMPLETE: V1Job = {
  metadata: { name: "run-1" },
  status: { succeeded: 1, conditions: [{ type: "Complete", status: "True" }] },
};

function deps(logs: Semaphore, which: number): GatherDeps {
  return {
    cache: {
      agent: () => undefined,
      station: () => station().build(),
      definition: () => definition().build(),
      job: () => COMPLETE,
      stationAgents: () => [],
    },
    client: {
      get: async () => undefined,
      list: async () => ({
        items: [{ metadata: { name: `pod-${which}` } }] as never[],
        resourceVersion: "1",
      }),
      streamLog: async (_ns, _pod, _container, onChunk) => {
        const kind = process.env.FLOOD_KIND !== undefined ? Number(process.env.FLOOD_KIND) : which;
        const make = kinds[kind % kinds.length] as (n: number) => string;
        for (let sent = 0, n = 0; sent < BYTES; n++) {
          const chunk = make(n);
          await onChunk(chunk);
          sent += chunk.length;
          await yieldToLoop();
        }
        return true;
      },
    },
    namespace: NS,
    settings: {
      namespace: NS,
      agentImage: "img",
      maxOutputBytes: 262144,
      batchEnabled: false,
      realtimeEnabled: false,
      batchPollSeconds: 60,
    },
    pendingCreations: () => [],
    batch: () => ({}),
    now: () => T0,
    logReads: logs,
  };
}

const health = await startHealthServer(
  0,
  { registry: new Registry(), healthy: () => true, ready: () => true },
  "127.0.0.1",
);
console.log(JSON.stringify({ port: health.port }));

// What the Lease renewal loop sees: the longest gap between two ticks of a 200 ms timer.
let lastTick = Date.now();
let longestGapMs = 0;
const renew = setInterval(() => {
  const now = Date.now();
  longestGapMs = Math.max(longestGapMs, now - lastTick);
  lastTick = now;
}, 200);

// A turn of the loop every check phase: the gap between two is how long something held the loop.
let lastTurn = performance.now();
let turning = true;
const turn = () => {
  const now = performance.now();
  longestChunkMs = Math.max(longestChunkMs, now - lastTurn);
  lastTurn = now;
  if (turning) setImmediate(turn);
};
setImmediate(turn);
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
const logs = new Semaphore(DEFAULT_LOG_READ_CONCURRENCY);
let heapMax = 0;
const heap = setInterval(() => {
  heapMax = Math.max(heapMax, process.memoryUsage().heapUsed);
}, 50);
const running = agent("run-1")
  .running(T0 - 60_000, { jobName: "run-1" })
  .build();
const inputs = await Promise.all(Array.from({ length: LOGS }, (_, i) => gather(running, deps(logs, i))));
delay.disable();
turning = false;
clearInterval(renew);
clearInterval(heap);
const read = inputs.filter((i) => i.pod?.found && i.pod.agentLog.available).length;
console.log(
  JSON.stringify({
    read,
    longestFeedCpuMs,
    longestChunkMs,
    p50BlockMs: delay.percentile(50) / 1e6,
    maxBlockMs: delay.max / 1e6,
    p99BlockMs: delay.percentile(99) / 1e6,
    longestGapMs,
    heapMaxMiB: heapMax / 1024 / 1024,
  }),
);
await health.close();
