/**
 * Ten hostile 64 MiB logs finishing at once (docs/cost-and-budgets.md#a-bill-the-agent-cannot-hide),
 * the read-back path alone. It runs in a child process with `node --max-old-space-size=512`: V8's
 * heap bound, which is what ran out when one ~31 MiB log crashed the controller inside its 512 MiB
 * limit (exit 134, a V8 heap abort). The whole controller, with its Lease, inside a 512 MiB memory
 * cgroup against such logs served by the plane's `pods/log` is
 * test/integration/controller/log-flood.test.ts. The child (test/support/log-flood.ts) streams the
 * logs through gather, its semaphore and the log meter while its health server answers; it must
 * stay up, every read must finish, /healthz must answer throughout, and no chunk may hold the loop
 * 50 ms (so a Lease renewal is never late).
 *
 * What holds the loop is measured as the CPU time of each feed of the meter (gather feeds it one
 * 16 KiB slice between two yields): its maximum must stay under 50 ms. monitorEventLoopDelay is
 * measured too, but as wall time it includes the times the OS deschedules the process, which on
 * a loaded 2-core machine (load 18 while other agents' tests ran) reach 100 ms at random: only its
 * median is asserted under 50 ms. The old meter held the loop 4-8 s per chunk past 32 MiB.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";

describe("the controller's read-back under ten hostile 64 MiB logs, inside 512 MiB", {
  timeout: 600_000,
}, () => {
  it("stays up, reads every log, answers /healthz; no slice of a log holds the event loop 50 ms", async () => {
    const child = spawn(
      process.execPath,
      ["--max-old-space-size=512", "--import", "tsx", "test/support/log-flood.ts"],
      { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, FLOOD_LOGS: "10", FLOOD_MIB: "64" } },
    );
    const lines = createInterface({ input: child.stdout });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    let port: number | undefined;
    type Result = { read: number; longestFeedCpuMs: number; p50BlockMs: number };
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
    expect(result?.longestFeedCpuMs).toBeLessThan(50);
    expect(result?.p50BlockMs).toBeLessThan(50);
    console.log(`log flood: ${JSON.stringify(result)}, ${answers.length} /healthz answers`);
  });
});
