// @module-tag slow
/**
 * The interactive supervisor end to end in-process: real child processes (tiny sh scripts written
 * per test), a real sink listener on 127.0.0.1, captured stdout/stderr and signals.
 */
import { readdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type CapturedIo,
  capturedIo,
  parsedLines,
  RecordingListener,
  type RunPodDirs,
  runPodDirs,
  writeScript,
} from "../../../test/support/run-pod.js";
import type { Env } from "../common/run-env.js";
import { runSupervisor, runSupervisorWith, USAGE } from "./main.js";

const j = (v: unknown) => JSON.stringify(v);
const started = { kind: "lifecycle", phase: "agent", status: "started" };
const succeeded = { kind: "lifecycle", phase: "agent", status: "succeeded", exitCode: 0 };
const failedWith = (exitCode: number) => ({ kind: "lifecycle", phase: "agent", status: "failed", exitCode });
const source = { agent: "a1", station: "s1", task: "t-9", pod: "agent-job-a1-x7", namespace: "ai-agents" };

const claudeInit = j({ type: "system", subtype: "init", session_id: "sess-1" });
const claudeUser = j({ type: "user", message: { role: "user", content: [{ type: "text", text: "hi" }] } });
const claudeAssistant = j({
  type: "assistant",
  message: { role: "assistant", content: [{ type: "text", text: "Hello there" }] },
});
const claudeToolUse = j({
  type: "assistant",
  message: { content: [{ type: "tool_use", id: "t1", name: "Bash", input: {} }] },
});
const claudeResult = j({
  type: "result",
  subtype: "success",
  is_error: false,
  result: "done",
  session_id: "s",
});
const claudeErrorResult = j({ type: "result", subtype: "success", is_error: true, result: "429" });

let dirs: RunPodDirs;
let captured: CapturedIo;

beforeEach(async () => {
  dirs = await runPodDirs();
  captured = capturedIo();
});
afterEach(async () => {
  await dirs.remove();
});

function baseEnv(extra: Env = {}): Env {
  return {
    PATH: `${dirs.bin}:${dirname(process.execPath)}:/usr/bin:/bin`,
    HOME: dirs.home,
    WORKSPACE_DIR: dirs.workspace,
    AGENT_MODEL: "claude-sonnet-4-6",
    AGENT_EXECUTION: "interactive",
    AGENT_NAME: source.agent,
    STATION_NAME: source.station,
    TASK_ID: source.task,
    POD_NAME: source.pod,
    POD_NAMESPACE: source.namespace,
    AGENT_EXIT_GRACE_MS: "200",
    AGENT_SINK_RETRY_ATTEMPTS: "1",
    ...extra,
  };
}

/** Lines of a sh script that prints each JSON/text line on stdout. */
const echo = (...lines: string[]) => lines.map((l) => `printf '%s\\n' '${l}'`).join("\n");

async function run(command: string[], extra: Env = {}): Promise<number> {
  return runSupervisorWith(["--", ...command], baseEnv(extra), captured.io);
}

async function exitCodeFile(): Promise<string> {
  return readFile(join(dirs.home, "run", "exit-code"), "utf8");
}

describe("usage (docs/supervisor.md#start-settings-and-signals)", () => {
  it.each<[string, string[]]>([
    ["no arguments", []],
    ["no --", ["claude", "--print"]],
    ["nothing after --", ["--"]],
    ["an argument before --", ["-v", "--", "claude"]],
  ])("%s ⇒ usage on stderr, exit 2, nothing on stdout", async (_name, argv) => {
    expect(await runSupervisorWith(argv, baseEnv(), captured.io)).toBe(2);
    expect(captured.stderr).toContain(USAGE);
    expect(captured.stdout).toEqual([]);
    await expect(exitCodeFile()).rejects.toThrow(/ENOENT/);
  });

  it("runSupervisor itself answers a bad invocation with 2", async () => {
    expect(await runSupervisor([], baseEnv())).toBe(2);
  });

  it.each<[string, string]>([
    ["bogus", 'AGENT_EXECUTION must be "interactive" or "realtime", got: "bogus"'],
    ["realtime", "AGENT_REALTIME_TOKEN_SHA256 is not set: no caller could be accepted"],
  ])("AGENT_EXECUTION=%s ⇒ exit 2 naming the problem", async (execution, message) => {
    await writeScript(dirs.bin, "agent", "exit 0\n");
    expect(await run(["agent"], { AGENT_EXECUTION: execution })).toBe(2);
    expect(captured.stderr.join("\n")).toContain(message);
    expect(captured.stdout).toEqual([]);
  });
});

describe("exit codes and the event sequence", () => {
  it.each<[string, string, unknown[], number]>([
    ["exit 0 after a result line", `${echo(claudeResult)}\nexit 0`, [JSON.parse(claudeResult), succeeded], 0],
    ["the agent's own non-zero code", `${echo("working")}\nexit 3`, ["working", failedWith(3)], 3],
    // The process exit decides even after a successful terminal line.
    [
      "a successful result line but exit 4",
      `${echo(claudeResult)}\nexit 4`,
      [JSON.parse(claudeResult), failedWith(4)],
      4,
    ],
    [
      "a last line without newline",
      `printf '%s' '${claudeResult}'`,
      [JSON.parse(claudeResult), succeeded],
      0,
    ],
    ["empty lines skipped", `printf '\\n\\nfirst\\n\\n\\nsecond\\n\\n'`, ["first", "second", succeeded], 0],
    ["killed by its own SIGTERM ⇒ 128 + 15", `${echo("bye")}\nkill -TERM $$`, ["bye", failedWith(143)], 143],
  ])("%s", async (_name, script, body, code) => {
    await writeScript(dirs.bin, "agent", script);
    expect(await run(["agent"])).toBe(code);
    expect(parsedLines(captured.stdout)).toEqual([started, ...body]);
    expect(await exitCodeFile()).toBe(`${code}\n`);
    // Written through a temporary file that is renamed, so only the final file remains.
    expect(await readdir(join(dirs.home, "run"))).toEqual(["exit-code"]);
  });

  it("passes the argv through untouched and gives the agent /dev/null as stdin", async () => {
    await writeScript(
      dirs.bin,
      "agent",
      [
        'for a in "$@"; do printf "arg:%s\\n" "$a"; done',
        'if read -r line; then echo "stdin:$line"; else echo "stdin:eof"; fi',
      ].join("\n"),
    );
    expect(await run(["agent", "--print", "a b", "--", "it's $HOME"])).toBe(0);
    expect(captured.stdout.slice(1, -1)).toEqual([
      "arg:--print",
      "arg:a b",
      "arg:--",
      "arg:it's $HOME",
      "stdin:eof",
    ]);
  });

  it("re-emits the agent's stderr lines prefixed [agent] and keeps them off stdout", async () => {
    await writeScript(dirs.bin, "agent", `echo "warming up" >&2\n${echo("out")}\necho "last words" >&2\n`);
    expect(await run(["agent"])).toBe(0);
    expect(captured.stderr).toEqual(expect.arrayContaining(["[agent] warming up", "[agent] last words"]));
    expect(captured.stdout.slice(1, -1)).toEqual(["out"]);
  });

  it("returns within the EOF wait when a grandchild keeps the pipes open", async () => {
    await writeScript(dirs.bin, "agent", `sleep 4 &\n${echo(claudeResult)}\nexit 0\n`);
    expect(await run(["agent"])).toBe(0);
    expect(parsedLines(captured.stdout)).toEqual([started, JSON.parse(claudeResult), succeeded]);
  });
});

describe("argv[0] that cannot run (docs/supervisor.md#order-of-one-interactive-run)", () => {
  it.each<[string, string, () => Promise<string>]>([
    ["not on PATH", "not-found", async () => "no-such-agent-cli"],
    ["a path that does not exist", "not-found", async () => join(dirs.bin, "missing")],
    [
      "a file on PATH without the execute bit",
      "not-found",
      async () => {
        await writeFile(join(dirs.bin, "plain"), "#!/bin/sh\nexit 0\n", { mode: 0o644 });
        return "plain";
      },
    ],
    [
      "an executable whose interpreter does not exist",
      "spawn",
      async () => {
        await writeScript(dirs.bin, "broken", "#!/nonexistent/interpreter\n");
        return "broken";
      },
    ],
  ])("%s ⇒ agent/failed reason=%s, exit 1, no agent/started", async (_name, reason, setup) => {
    const sink = await RecordingListener.start();
    try {
      const command = await setup();
      const code = await run([command, "--print"], {
        AGENT_SINKS: j([{ type: "http", url: sink.url("/sink") }]),
        AGENT_WATCH: j([{ event: "report", path: "report.md" }]),
      });
      expect(code).toBe(1);
      const event = { kind: "lifecycle", phase: "agent", status: "failed", reason };
      expect(parsedLines(captured.stdout)).toEqual([event]);
      expect(sink.jsonBodies("/sink")).toEqual([{ source, event }]);
      expect(await exitCodeFile()).toBe("1\n");
    } finally {
      await sink.close();
    }
  });
});

describe("sinks (docs/events.md: sinks, envelope, output.select, delivery guarantees)", () => {
  let sink: RecordingListener;
  beforeEach(async () => {
    sink = await RecordingListener.start();
  });
  afterEach(async () => {
    await sink.close();
  });

  it("sends envelopes in order, with the headers_secret headers, filtered by output.select with role", async () => {
    await writeScript(
      dirs.bin,
      "agent",
      echo(claudeInit, claudeUser, claudeAssistant, claudeToolUse, "plain text", claudeResult),
    );
    const code = await run(["agent"], {
      AGENT_SINKS: j([
        { type: "stdout" },
        { type: "http", url: sink.url("/sink"), headers_secret: "SINK_AUTH" },
        { type: "file", path: "events.ndjson" },
      ]),
      SINK_AUTH: "Authorization: Bearer s3cret\n\nX-Run: 42\n",
      AGENT_NOTIFY_URL: sink.url("/notify"),
      AGENT_SELECT: j([{ event: "message", role: "assistant" }, { event: "result" }]),
    });
    expect(code).toBe(0);

    // stdout is the unfiltered record: every line bare, in order.
    expect(captured.stdout).toEqual([
      j(started),
      claudeInit,
      claudeUser,
      claudeAssistant,
      claudeToolUse,
      "plain text",
      claudeResult,
      j(succeeded),
    ]);
    // Sinks: lifecycle events always; lines only when selected (the user message is not, by role).
    const want = [started, JSON.parse(claudeAssistant), JSON.parse(claudeResult), succeeded].map((event) => ({
      source,
      event,
    }));
    expect(sink.jsonBodies("/sink")).toEqual(want);
    expect(sink.jsonBodies("/notify")).toEqual(want);
    const fileSink = await readFile(join(dirs.home, "events.ndjson"), "utf8");
    expect(
      fileSink
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual(want);

    const auth = sink.requests.filter((r) => r.path === "/sink");
    for (const r of auth) {
      expect(r.method).toBe("POST");
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers.authorization).toBe("Bearer s3cret");
      expect(r.headers["x-run"]).toBe("42");
    }
    for (const r of sink.requests.filter((r) => r.path === "/notify")) {
      expect(r.headers.authorization).toBeUndefined();
    }
  });

  it("without output.select sends every line, non-JSON ones as strings, but never a line that already is an envelope (docs/decisions.md D-36)", async () => {
    const envelopeLike = j({ source: { agent: "x" }, event: { kind: "fake" } });
    await writeScript(dirs.bin, "agent", echo("plain text", envelopeLike, claudeUser));
    expect(await run(["agent"], { AGENT_SINKS: j([{ type: "http", url: sink.url("/sink") }]) })).toBe(0);
    expect(captured.stdout).toEqual([j(started), "plain text", envelopeLike, claudeUser, j(succeeded)]);
    expect(sink.jsonBodies("/sink")).toEqual(
      [started, "plain text", JSON.parse(claudeUser), succeeded].map((event) => ({ source, event })),
    );
    expect(captured.stderr.join("\n")).toContain("already is an envelope");
  });

  it("logs an undeliverable sink once, not once per event, and still serves the others", async () => {
    await writeScript(dirs.bin, "agent", echo("one", "two", "three", "four"));
    const code = await run(["agent"], {
      AGENT_SINKS: j([
        { type: "http" },
        { type: "carrier-pigeon" },
        { type: "http", url: sink.url("/sink") },
      ]),
    });
    expect(code).toBe(0);
    expect(sink.jsonBodies("/sink")).toHaveLength(6);
    const skipped = captured.stderr
      .filter((l) => l.includes("sink skipped"))
      .map((l) => JSON.parse(l).reason);
    expect(skipped).toEqual([
      "output.sinks[0]: http sink has no url",
      'output.sinks[1]: unknown sink type "carrier-pigeon"',
    ]);
  });

  it("delivers the deadline's terminal event and the file events, which select never filters", async () => {
    await writeFile(join(dirs.workspace, "report.md"), "# report\n");
    await writeScript(dirs.bin, "agent", `${echo(claudeInit)}\nexec sleep 30\n`);
    const code = await run(["agent"], {
      AGENT_SINKS: j([{ type: "http", url: sink.url("/sink") }]),
      AGENT_SELECT: j([{ event: "result" }]),
      AGENT_WATCH: j([{ event: "report", path: "report.md" }]),
      AGENT_DEADLINE_MS: "300",
      AGENT_EXIT_GRACE_MS: "100",
    });
    expect(code).toBe(124);
    const file = {
      kind: "file",
      event: "report",
      path: join(dirs.workspace, "report.md"),
      content: "# report\n",
    };
    const deadline = {
      kind: "lifecycle",
      phase: "agent",
      status: "failed",
      reason: "deadline",
      exitCode: 124,
    };
    expect(sink.jsonBodies("/sink")).toEqual([started, file, deadline].map((event) => ({ source, event })));
  });
});

describe("ending the agent (docs/supervisor.md#order-of-one-interactive-run)", () => {
  const aliveAfter = (line: string, ignoreTerm: boolean) =>
    `${ignoreTerm ? "trap '' TERM\n" : ""}${echo(line)}\nwhile :; do sleep 0.05; done\n`;

  it.each<[string, string, string, number]>([
    [
      "claude: successful result, ignores SIGTERM ⇒ SIGKILL, 0",
      "claude-sonnet-4-6",
      aliveAfter(claudeResult, true),
      0,
    ],
    ["claude: is_error result ⇒ stopped, 1", "claude-sonnet-4-6", aliveAfter(claudeErrorResult, false), 1],
    ["exec: result ⇒ stopped, 0", "exec", aliveAfter(claudeResult, false), 0],
    [
      "codex: turn.completed ⇒ 0",
      "gpt-5-codex",
      aliveAfter(j({ type: "turn.completed", usage: {} }), false),
      0,
    ],
    [
      "codex: turn.failed ⇒ 1 (docs/decisions.md D-29)",
      "gpt-5-codex",
      aliveAfter(j({ type: "turn.failed", error: {} }), true),
      1,
    ],
    [
      "gemini: status success ⇒ 0",
      "gemini-3-pro",
      aliveAfter(j({ type: "result", status: "success" }), false),
      0,
    ],
    [
      "gemini: status error ⇒ 1",
      "gemini-3-pro",
      aliveAfter(j({ type: "result", status: "error" }), false),
      1,
    ],
  ])("terminal line, process alive after the grace: %s", async (_name, model, script, code) => {
    await writeScript(dirs.bin, "agent", script);
    expect(await run(["agent"], { AGENT_MODEL: model })).toBe(code);
    const last = parsedLines(captured.stdout).at(-1);
    expect(last).toEqual(code === 0 ? succeeded : failedWith(1));
    expect(captured.stderr.join("\n")).toContain("printed its terminal line but is still running");
  });

  it.each<[string, string, string, number]>([
    [
      "a terminal line, then its own exit within the grace ⇒ its code",
      "claude",
      `${echo(claudeResult)}\nsleep 0.05\nexit 5`,
      5,
    ],
    // opencode has no terminal line: a result-looking line does not start the grace.
    [
      "opencode: only the process exit ends the run",
      "opencode/big-pickle",
      `${echo(claudeErrorResult)}\nsleep 0.6\nexit 0`,
      0,
    ],
    // Only the first terminal line counts.
    [
      "claude: the first terminal line decides",
      "claude",
      `${echo(claudeErrorResult, claudeResult)}\nsleep 0.05\nexit 6`,
      6,
    ],
  ])("%s", async (_name, model, script, code) => {
    await writeScript(dirs.bin, "agent", script);
    expect(await run(["agent"], { AGENT_MODEL: model, AGENT_EXIT_GRACE_MS: "300" })).toBe(code);
    expect(captured.stderr.join("\n")).not.toContain("still running");
  });

  it("deadline: SIGTERM, then SIGKILL for an agent that ignores it ⇒ 124 and reason=deadline (docs/decisions.md D-35)", async () => {
    await writeScript(
      dirs.bin,
      "agent",
      `trap 'echo "got TERM" >&2' TERM\n${echo(claudeInit)}\nwhile :; do sleep 0.05; done\n`,
    );
    expect(await run(["agent"], { AGENT_DEADLINE_MS: "500", AGENT_EXIT_GRACE_MS: "400" })).toBe(124);
    expect(parsedLines(captured.stdout)).toEqual([
      started,
      JSON.parse(claudeInit),
      { kind: "lifecycle", phase: "agent", status: "failed", reason: "deadline", exitCode: 124 },
    ]);
    const stderr = captured.stderr.join("\n");
    expect(stderr).toContain("agent deadline reached");
    expect(stderr).toContain("[agent] got TERM");
    expect(stderr).toContain("sending SIGKILL");
    expect(await exitCodeFile()).toBe("124\n");
  });

  it("deadline: an agent that obeys SIGTERM still ends the run with 124", async () => {
    await writeScript(dirs.bin, "agent", "exec sleep 30\n");
    expect(await run(["agent"], { AGENT_DEADLINE_MS: "200", AGENT_EXIT_GRACE_MS: "5000" })).toBe(124);
    expect(captured.stderr.join("\n")).not.toContain("sending SIGKILL");
  });

  it.each<[string, string]>([
    ["0", "zero"],
    ["-5", "a negative value"],
    ["soon", "a word"],
  ])("AGENT_DEADLINE_MS=%s (%s) means no deadline", async (value) => {
    await writeScript(dirs.bin, "agent", "sleep 0.3\nexit 0\n");
    expect(await run(["agent"], { AGENT_DEADLINE_MS: value })).toBe(0);
  });
});

describe("signals (docs/supervisor.md#start-settings-and-signals)", () => {
  it.each<[NodeJS.Signals, number]>([
    ["SIGTERM", 7],
    ["SIGINT", 8],
  ])("%s reaches the agent, whose exit code is the run's", async (signal, code) => {
    await writeScript(
      dirs.bin,
      "agent",
      [
        "trap 'echo got-TERM; exit 7' TERM",
        "trap 'echo got-INT; exit 8' INT",
        "echo ready",
        "while :; do sleep 0.05; done",
      ].join("\n"),
    );
    captured.onStdout = (line) => {
      if (line === "ready") captured.signals.emit(signal);
    };
    expect(await run(["agent"])).toBe(code);
    expect(captured.stdout.slice(1)).toEqual(["ready", `got-${signal.slice(3)}`, j(failedWith(code))]);
    // The supervisor stops listening once the run is over.
    expect(captured.signals.listenerCount(signal)).toBe(0);
  });

  it("keeps handling SIGTERM after the agent exited, so the run still finishes", async () => {
    await writeScript(dirs.bin, "agent", "exit 0\n");
    const listening: number[] = [];
    captured.onStdout = (line) => {
      if (!line.includes('"status":"succeeded"')) return;
      listening.push(captured.signals.listenerCount("SIGTERM"));
      captured.signals.emit("SIGTERM");
    };
    expect(await run(["agent"])).toBe(0);
    expect(listening).toEqual([1]);
    expect(captured.stderr.join("\n")).toContain("received SIGTERM after the agent ended; finishing the run");
    expect(await exitCodeFile()).toBe("0\n");
  });
});
