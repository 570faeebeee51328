/**
 * Preloaded into a process under test (`node --import <this file>`): measures how long its event
 * loop is held, without touching the program. Every second it appends one JSON line to the file
 * named by LOOP_PROBE_FILE with that second's figures, then starts the next second afresh:
 * - `maxMs`, `p99Ms`: monitorEventLoopDelay (10 ms resolution), how late the loop turned;
 * - `latestTickMs`: the most a 100 ms interval timer fired late (what a Lease renewal timer sees).
 * Both are wall time: they include the times the OS deschedules the process on a loaded machine,
 * so they are figures to report, not to assert. Its timers are unref'd: they keep nothing alive.
 */
import { appendFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";

const file = process.env.LOOP_PROBE_FILE;
if (file !== undefined && file !== "") {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const TICK_MS = 100;
  let lastTick = performance.now();
  let latestTickMs = 0;
  setInterval(() => {
    const now = performance.now();
    latestTickMs = Math.max(latestTickMs, now - lastTick - TICK_MS);
    lastTick = now;
  }, TICK_MS).unref();
  setInterval(() => {
    appendFileSync(
      file,
      `${JSON.stringify({
        at: Date.now(),
        maxMs: delay.max / 1e6,
        p99Ms: delay.percentile(99) / 1e6,
        latestTickMs,
      })}\n`,
    );
    delay.reset();
    latestTickMs = 0;
  }, 1_000).unref();
}
