/**
 * Item 3 of issue 41: ten hostile 64 MiB logs finishing at once. The controller's read-back path
 * runs in a child process with `node --max-old-space-size=512`: V8's heap bound, which is what ran
 * out when one ~31 MiB log crashed the controller inside its 512 MiB limit (exit 134, a V8 heap
 * abort); a cgroup would bound the same process from outside but needs privileges a test does not
 * have. The child (test/support/log-flood.ts) streams the logs through gather, its semaphore and
 * the log meter while its health server answers; it must stay up, every read must finish, /healthz
 * must answer throughout, and no chunk may hold the loop 50 ms (so a Lease renewal is never late).
 *
 * What holds the loop is measured with monitorEventLoopDelay over the whole run: its 99th
 * percentile must stay under 50 ms. Its maximum, and the longest gap between two turns of the
 * loop, include the times the OS deschedules the process, tens of milliseconds at random on a
 * loaded 2-core machine, which no code of ours prevents: they are bounded at 250 ms. The meter's
 * own work between two yields is one 16 KiB slice, well under a millisecond (the old meter held the
 * loop 4-8 s per chunk past 32 MiB, far beyond either bound).
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";

describe("the controller's read-back under ten hostile 64 MiB logs, inside 512 MiB", {
  timeout: 600_000,
}, () => {
  it("stays up, reads every log, answers /healthz and never holds the event loop 50 ms", async () => {
    const child = spawn(
      process.execPath,
      ["--max-old-space-size=512", "--import", "tsx", "test/support/log-flood.ts"],
      { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, FLOOD_LOGS: "10", FLOOD_MIB: "64" } },
    );
    const lines = createInterface({ input: child.stdout });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    let port: number | undefined;
    type Result = { read: number; longestChunkMs: number; maxBlockMs: number; p99BlockMs: number };
    let result: Result | undefined;
    const answers: number[] = [];
    let polling: Promise<void> | undefined;
    for await (const line of lines) {
      const msg = JSON.parse(line) as Record<string, number>;
      if (msg.port !== undefined) {
        port = msg.port;
        polling = (async () => {
          while (result === undefined) {
            const res = await fetch(`http://127.0.0.1:${port}/healthz`, {
              signal: AbortSignal.timeout(5_000),
            });
            answers.push(res.status);
            await new Promise((r) => setTimeout(r, 250));
          }
        })().catch((err) => {
          answers.push(-1);
          throw err;
        });
      } else result = msg as typeof result;
    }
    expect(await exited).toBe(0);
    await polling;
    expect(result?.read).toBe(10);
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.every((s) => s === 200)).toBe(true);
    expect(result?.p99BlockMs).toBeLessThan(50);
    expect(result?.maxBlockMs).toBeLessThan(250);
    expect(result?.longestChunkMs).toBeLessThan(250);
    console.log(`log flood: ${JSON.stringify(result)}, ${answers.length} /healthz answers`);
  });
});
