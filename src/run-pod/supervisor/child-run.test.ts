/**
 * The reusable "one CLI process" unit on its own (the interactive run uses it once, a realtime
 * session once per turn): outcome shapes, callback order, and what counts as the terminal line.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type RunPodDirs, runPodDirs, writeScript } from "../../../test/support/run-pod.js";
import { terminalVerdict } from "../../core/cli/vendors.js";
import { runPodLogger } from "../common/log.js";
import { type ChildOutcome, exitStatus, runChild } from "./child-run.js";

describe("exitStatus", () => {
  it.each<[number | null, NodeJS.Signals | null, number]>([
    [0, null, 0],
    [42, null, 42],
    [null, "SIGTERM", 143],
    [null, "SIGKILL", 137],
    [null, "SIGINT", 130],
  ])("code %s, signal %s → %s", (code, signal, want) => {
    expect(exitStatus({ code, signal })).toBe(want);
  });
});

describe("runChild", () => {
  let dirs: RunPodDirs;
  beforeEach(async () => {
    dirs = await runPodDirs();
  });
  afterEach(async () => {
    await dirs.remove();
  });

  async function runScript(
    script: string,
    options: { deadlineAt?: number; graceMs?: number } = {},
  ): Promise<{ outcome: ChildOutcome; calls: string[] }> {
    const file = await writeScript(dirs.bin, "cli", script);
    const calls: string[] = [];
    const outcome = await runChild({
      file,
      argv: ["cli"],
      env: { PATH: "/usr/bin:/bin" },
      isTerminal: (line) => terminalVerdict("claude", line),
      graceMs: options.graceMs ?? 200,
      ...(options.deadlineAt !== undefined ? { deadlineAt: options.deadlineAt } : {}),
      onSpawned: (child) => calls.push(`spawned ${typeof child.pid}`),
      onStdoutLine: (line) => calls.push(`out ${line}`),
      onStderrLine: (line) => calls.push(`err ${line}`),
      log: runPodLogger("test", () => {}),
    });
    return { outcome, calls };
  }

  const result = (isError: boolean) => JSON.stringify({ type: "result", is_error: isError });

  it("reports the exit code and the terminal line of a CLI that printed it and exited at once", async () => {
    const { outcome, calls } = await runScript(`echo '${result(true)}'\nexit 0\n`);
    expect(outcome).toEqual({ kind: "exited", exitCode: 0, terminal: { success: false } });
    expect(calls).toEqual(["spawned number", `out ${result(true)}`]);
  });

  it("hands over every line before resolving, the spawn first", async () => {
    const { outcome, calls } = await runScript("echo a\necho b >&2\necho c\nexit 9\n");
    expect(outcome).toEqual({ kind: "exited", exitCode: 9 });
    expect(calls[0]).toBe("spawned number");
    expect(calls.filter((c) => c.startsWith("out"))).toEqual(["out a", "out c"]);
    expect(calls).toContain("err b");
  });

  it("stops a CLI that outlives its terminal line", async () => {
    const { outcome } = await runScript(`echo '${result(false)}'\nexec sleep 30\n`, { graceMs: 100 });
    expect(outcome).toEqual({ kind: "stopped-after-terminal", exitCode: 0, terminal: { success: true } });
  });

  it("stops a CLI at the deadline", async () => {
    const { outcome, calls } = await runScript("echo working\nexec sleep 30\n", {
      deadlineAt: Date.now() + 300,
      graceMs: 100,
    });
    expect(outcome).toEqual({ kind: "deadline", exitCode: 124 });
    expect(calls).toContain("out working");
  });

  it("reports a file that cannot be executed as spawn-failed, without calling onSpawned", async () => {
    const { outcome, calls } = await runScript("#!/nonexistent/interpreter\n");
    expect(outcome.kind).toBe("spawn-failed");
    expect(calls).toEqual([]);
  });
});
