import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DRAIN_TIMEOUT_MS } from "../common/emitter.js";
import { EXIT_RESERVE_MS } from "./deadline.js";
import { drainThenWriteExitCode, exitCodePath, writeExitCodeFile } from "./exit-code-file.js";

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), "exit-code-file-"));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

function recordingLog() {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    lines.push({ level, message, ...(fields ? { fields } : {}) });
  };
  return { lines, log: { info: at("info"), warn: at("warn"), error: at("error") } };
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

describe("writeExitCodeFile", () => {
  it("writes `<code>\\n` at $HOME/run/exit-code, creating run/, and leaves no temporary file", async () => {
    expect(await writeExitCodeFile(home, 7)).toBe(exitCodePath(home));
    expect(await readFile(join(home, "run", "exit-code"), "utf8")).toBe("7\n");
    await writeExitCodeFile(home, 0);
    expect(await readFile(exitCodePath(home), "utf8")).toBe("0\n");
  });
});

describe("drainThenWriteExitCode", () => {
  it("drains the sinks first, then writes the exit-code file, and returns the code", async () => {
    const { lines, log } = recordingLog();
    const drains: { ms: number; fileThen: boolean }[] = [];
    const emitter = {
      pending: 0,
      drain: async (ms?: number) => {
        drains.push({ ms: ms ?? -1, fileThen: await exists(exitCodePath(home)) });
        return true;
      },
    };
    const code = await drainThenWriteExitCode({
      emitter,
      deadline: { stopGraceMs: 1, eofWaitMs: 1 },
      home,
      exitCode: 3,
      log,
    });
    expect(code).toBe(3);
    // No report bound: the drain gets its whole budget; the file did not exist while it ran.
    expect(drains).toEqual([{ ms: DRAIN_TIMEOUT_MS, fileThen: false }]);
    expect(await readFile(exitCodePath(home), "utf8")).toBe("3\n");
    expect(lines).toEqual([]);
  });

  it("gives the drain what is left of the tail less the exit reserve", async () => {
    const { log } = recordingLog();
    const drains: number[] = [];
    const emitter = {
      pending: 0,
      drain: async (ms?: number) => {
        drains.push(ms ?? -1);
        return true;
      },
    };
    await drainThenWriteExitCode({
      emitter,
      deadline: { reportBy: 10_000, stopGraceMs: 1, eofWaitMs: 1 },
      home,
      exitCode: 0,
      log,
      now: () => 4_000,
    });
    expect(drains).toEqual([10_000 - EXIT_RESERVE_MS - 4_000]);
  });

  it("an undrained queue is logged with what is pending and still ends in the file and the code", async () => {
    const { lines, log } = recordingLog();
    const emitter = { pending: 4, drain: async () => false };
    const code = await drainThenWriteExitCode({
      emitter,
      deadline: { stopGraceMs: 1, eofWaitMs: 1 },
      home,
      exitCode: 124,
      log,
    });
    expect(code).toBe(124);
    expect(lines).toEqual([
      {
        level: "warn",
        message: `sink queues not drained within ${DRAIN_TIMEOUT_MS} ms; undelivered events are lost`,
        fields: { pending: 4 },
      },
    ]);
    expect(await readFile(exitCodePath(home), "utf8")).toBe("124\n");
  });

  it("a failed write is logged and does not change the code", async () => {
    const { lines, log } = recordingLog();
    // run/ cannot be created: a file stands in its place.
    await writeFile(join(home, "run"), "not a directory");
    const code = await drainThenWriteExitCode({
      emitter: { pending: 0, drain: async () => true },
      deadline: { stopGraceMs: 1, eofWaitMs: 1 },
      home,
      exitCode: 1,
      log,
    });
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.level).toBe("error");
    expect(lines[0]?.message.startsWith(`writing the exit-code file under ${home}/run failed: `)).toBe(true);
  });
});
