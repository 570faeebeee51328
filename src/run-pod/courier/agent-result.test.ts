import { chmodSync, chownSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitForAgentResult } from "./agent-result.js";

const me = process.getuid?.() ?? 0;
const isRoot = me === 0;

function resultDir(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "courier-result-")), "r");
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  return dir;
}

const record = (dir: string, content: string, mode = 0o644) => {
  writeFileSync(join(dir, "exit-code"), content, { mode });
  chmodSync(join(dir, "exit-code"), mode);
};

/** A clock the waits advance, so a bounded wait ends without real time passing. */
function clock() {
  let t = 0;
  return {
    now: () => t,
    sleep: async (ms: number) => {
      t += ms;
    },
  };
}

describe("waitForAgentResult: only the witness's record counts", () => {
  it.each([
    ["0\n", { state: "exited", code: 0 }],
    ["124\n", { state: "exited", code: 124 }],
    ["garbage", { state: "untrusted", why: expect.stringContaining("holds no exit code") }],
  ])("reads %j from a record its owner alone can write", async (content, want) => {
    const dir = resultDir();
    record(dir, content);
    expect(await waitForAgentResult({ dir, waitMs: 1000, ownerUid: me, ...clock() })).toEqual(want);
  });

  it("refuses a record writable by others, or in a directory others can write", async () => {
    const dir = resultDir();
    record(dir, "0\n", 0o666);
    expect(await waitForAgentResult({ dir, waitMs: 1000, ownerUid: me, ...clock() })).toMatchObject({
      state: "untrusted",
    });
    const open = resultDir();
    record(open, "0\n");
    chmodSync(open, 0o777);
    expect(await waitForAgentResult({ dir: open, waitMs: 1000, ownerUid: me, ...clock() })).toMatchObject({
      state: "untrusted",
    });
  });

  it.skipIf(!isRoot)("refuses a 0 the agent's uid wrote (a forged success)", async () => {
    const dir = resultDir();
    record(dir, "0\n");
    chownSync(join(dir, "exit-code"), 1000, 1000);
    expect(await waitForAgentResult({ dir, waitMs: 1000, ...clock() })).toEqual({
      state: "untrusted",
      why: `${join(dir, "exit-code")} was not written by the witness (owner uid 1000)`,
    });
  });

  it("times out at waitMs when nothing is recorded and no witness ever listened", async () => {
    const dir = resultDir();
    const c = clock();
    expect(await waitForAgentResult({ dir, waitMs: 2000, pollMs: 500, ownerUid: me, ...c })).toEqual({
      state: "timeout",
    });
    expect(c.now()).toBe(2000);
  });

  it("ends at once when the witness's socket closes without a record (its container was killed)", async () => {
    const dir = resultDir();
    const server = createServer((socket) => setTimeout(() => socket.destroy(), 50));
    await new Promise<void>((r) => server.listen(join(dir, "witness.sock"), r));
    // Real sleeps: the socket's close must be seen long before the hour-long bound.
    const result = await waitForAgentResult({ dir, waitMs: 3_600_000, pollMs: 20, ownerUid: me });
    server.close();
    expect(result).toEqual({ state: "gone" });
  });
});
