// @module-tag slow
/**
 * The supervisor's deadline (docs/run-pod.md#deadlines): counted from the Job's creation when
 * AGENT_DEADLINE_AT says so, and a report (terminal event, exit code) always done within
 * AGENT_TAIL_MS of it, whatever the sinks and the conversation store do.
 */
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type CapturedIo,
  capturedIo,
  parsedLines,
  type RunPodDirs,
  runPodDirs,
  writeScript,
} from "../../../test/support/run-pod.js";
import type { Env } from "../common/run-env.js";
import { EXIT_RESERVE_MS, runDeadline, tailShare } from "./deadline.js";
import { runSupervisorWith } from "./main.js";

describe("runDeadline and tailShare", () => {
  const settings = { graceMs: 5000, tailMs: 30_000 };
  it("takes the earlier of AGENT_DEADLINE_AT and the start + AGENT_DEADLINE_MS", () => {
    expect(runDeadline({ ...settings, deadlineMs: 60_000, deadlineAt: 10_000 }, 1000, 2000)).toMatchObject({
      agentAt: 10_000,
      reportBy: 40_000,
    });
    expect(runDeadline({ ...settings, deadlineMs: 5000, deadlineAt: 10_000 }, 1000, 2000)).toMatchObject({
      agentAt: 6000,
    });
    expect(runDeadline({ ...settings, deadlineAt: 10_000 }, 1000, 2000).agentAt).toBe(10_000);
    expect(runDeadline(settings, 1000, 2000)).toEqual({ stopGraceMs: 5000, eofWaitMs: 2000 });
  });

  it("fits the deadline's stop (two graces and the EOF wait) into 40% of the tail", () => {
    const short = runDeadline({ graceMs: 5000, tailMs: 12_000, deadlineMs: 1 }, 0, 2000);
    expect(short.stopGraceMs * 2 + short.eofWaitMs).toBeLessThanOrEqual(12_000 * 0.4);
    const long = runDeadline({ graceMs: 5000, tailMs: 30_000, deadlineMs: 1 }, 0, 2000);
    expect(long).toMatchObject({ stopGraceMs: 4800, eofWaitMs: 2000 });
  });

  it("gives each tail step at most its share of what is left before reportBy, less the exit reserve", () => {
    const d = { reportBy: 20_000, stopGraceMs: 1, eofWaitMs: 1 };
    expect(tailShare(d, 10_000, 20_000)).toBe(10_000 - EXIT_RESERVE_MS);
    expect(tailShare(d, 10_000, 20_000, 0.5)).toBe((10_000 - EXIT_RESERVE_MS) / 2);
    expect(tailShare(d, 10_000, 3000)).toBe(3000);
    expect(tailShare(d, 25_000, 3000)).toBe(0);
    expect(tailShare({ stopGraceMs: 1, eofWaitMs: 1 }, 25_000, 3000)).toBe(3000);
  });
});

describe("the supervisor against the Job's clock", () => {
  let dirs: RunPodDirs;
  let captured: CapturedIo;
  let hanging: Server;
  let hangingUrl: string;

  beforeEach(async () => {
    dirs = await runPodDirs();
    captured = capturedIo();
    // Accepts every request and never answers: a dead sink, a dead conversation store.
    hanging = createServer(() => {});
    await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve));
    hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    hanging.closeAllConnections();
    await new Promise((resolve) => hanging.close(resolve));
    await dirs.remove();
  });

  function env(extra: Env): Env {
    return {
      PATH: `${dirs.bin}:${dirname(process.execPath)}:/usr/bin:/bin`,
      HOME: dirs.home,
      WORKSPACE_DIR: dirs.workspace,
      AGENT_MODEL: "claude-sonnet-4-6",
      AGENT_EXECUTION: "interactive",
      AGENT_SINK_RETRY_ATTEMPTS: "1",
      ...extra,
    };
  }

  it("a slow start (init, image pull) does not move the deadline: AGENT_DEADLINE_AT stops the agent", async () => {
    await writeScript(dirs.bin, "agent", "exec sleep 30\n");
    // The supervisor's own start + AGENT_DEADLINE_MS is ten minutes away; the Job's clock says now.
    const code = await runSupervisorWith(
      ["--", "agent"],
      env({ AGENT_DEADLINE_MS: "600000", AGENT_DEADLINE_AT: String(Date.now() + 300) }),
      captured.io,
    );
    expect(code).toBe(124);
    expect(parsedLines(captured.stdout).at(-1)).toEqual({
      kind: "lifecycle",
      phase: "agent",
      status: "failed",
      reason: "deadline",
      exitCode: 124,
    });
  });

  it("with a dead sink and a dead conversation store the timed-out run is still reported within AGENT_TAIL_MS", async () => {
    await writeScript(
      dirs.bin,
      "agent",
      `mkdir -p "$HOME/.claude/projects" && echo '{}' > "$HOME/.claude/projects/s.jsonl"\nfor i in $(seq 50); do echo '{"type":"assistant"}'; done\nexec sleep 30\n`,
    );
    const tailMs = 4000;
    const code = await runSupervisorWith(
      ["--", "agent"],
      env({
        AGENT_DEADLINE_AT: String(Date.now() + 500),
        AGENT_TAIL_MS: String(tailMs),
        AGENT_EXIT_GRACE_MS: "5000",
        AGENT_SINKS: JSON.stringify([{ type: "http", url: `${hangingUrl}/sink` }]),
        AGENT_CONVERSATION_SOURCE: `${hangingUrl}/conversations`,
        AGENT_CONVERSATION_PIN: "pin-1",
      }),
      captured.io,
    );
    // Unbounded, the save (20 s) and the drain (20 s) alone would outlast this test's timeout.
    expect(code).toBe(124);
    expect(parsedLines(captured.stdout).at(-1)).toMatchObject({ phase: "agent", reason: "deadline" });
    expect(await readFile(join(dirs.home, "run", "exit-code"), "utf8")).toBe("124\n");
    const stderr = captured.stderr.join("\n");
    expect(stderr).toContain("conversation save failed");
    const drained = /sink queues not drained within (\d+) ms/.exec(stderr);
    expect(Number(drained?.[1])).toBeLessThan(tailMs);
    // The stop's grace was shortened to fit the tail, not the 5 s of AGENT_EXIT_GRACE_MS.
    expect(stderr).toMatch(/deadline: the agent is stopped at .* and the result reported by/);
  }, 15_000);

  it("after SIGTERM the report is bounded by AGENT_TAIL_MS too (the kubelet's termination grace), deadline or not", async () => {
    await writeScript(
      dirs.bin,
      "agent",
      `mkdir -p "$HOME/.claude/projects" && echo '{}' > "$HOME/.claude/projects/s.jsonl"\necho '{"type":"assistant"}'\nexec sleep 30\n`,
    );
    const tailMs = 3000;
    captured.onStdout = (line) => {
      if (line.includes("assistant")) setImmediate(() => captured.signals.emit("SIGTERM"));
    };
    const code = await runSupervisorWith(
      ["--", "agent"],
      env({
        AGENT_TAIL_MS: String(tailMs),
        AGENT_SINKS: JSON.stringify([{ type: "http", url: `${hangingUrl}/sink` }]),
        AGENT_CONVERSATION_SOURCE: `${hangingUrl}/conversations`,
        AGENT_CONVERSATION_PIN: "pin-1",
      }),
      captured.io,
    );
    // Unbounded, the save (20 s) and the drain (20 s) would outlast this test's timeout.
    expect(code).toBe(143);
    expect(await readFile(join(dirs.home, "run", "exit-code"), "utf8")).toBe("143\n");
    const drained = /sink queues not drained within (\d+) ms/.exec(captured.stderr.join("\n"));
    expect(Number(drained?.[1])).toBeLessThan(tailMs);
  }, 15_000);
});
