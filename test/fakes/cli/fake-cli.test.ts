import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  answerText,
  type CliName,
  type FakeCliScript,
  gateOf,
  outputLines,
  parseInvocation,
  TRANSCRIPT_DIRS,
} from "./fake-cli.js";
import { installFakeClis } from "./install.js";

const run = promisify(execFile);
const parse = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
const now = new Date("2026-01-01T00:00:00Z");

describe("parseInvocation: the session a run reports, from the argv the controller builds", () => {
  it.each([
    [
      "claude",
      ["--print", "--verbose", "--output-format", "stream-json", "--session-id", "pin-1", "--", "hi"],
      "pin-1",
      "hi",
    ],
    [
      "claude",
      ["--print", "--verbose", "--output-format", "stream-json", "--resume", "old", "--", "hi"],
      "old",
      "hi",
    ],
    [
      "claude",
      ["--print", "--verbose", "--resume", "old", "--fork-session", "--session-id", "pin-2", "--", "hi"],
      "pin-2",
      "hi",
    ],
    ["claude", ["--print", "--verbose", "--output-format", "stream-json", "--", "hi"], "fallback", "hi"],
    ["codex", ["exec", "--json", "--model", "gpt-5", "--", "do it"], "fallback", "do it"],
    ["codex", ["exec", "resume", "thread-9", "--json", "do it"], "thread-9", "do it"],
    ["gemini", ["--output-format", "stream-json", "--resume", "g-1", "--prompt=ask"], "g-1", "ask"],
    [
      "gemini",
      ["--output-format", "stream-json", "--model=gemini-2.5-pro", "--resume=g-1", "--prompt=ask"],
      "g-1",
      "ask",
    ],
    ["gemini", ["--output-format", "stream-json", "--prompt=ask"], "fallback", "ask"],
  ] as [CliName, string[], string, string][])("%s %j", (cli, argv, session, prompt) => {
    const inv = parseInvocation(cli, argv, "fallback");
    expect(inv.sessionId).toBe(session);
    expect(inv.prompt).toBe(prompt);
    expect(inv.usageError).toBeUndefined();
  });

  it.each([
    ["claude", ["--print", "--resume", "old", "--", "hi"], "old"],
    ["claude", ["--print", "--resume", "old", "--fork-session", "--session-id", "new", "--", "hi"], "old"],
    ["claude", ["--print", "--session-id", "pin", "--", "hi"], undefined],
    ["codex", ["exec", "resume", "t-9", "--json", "hi"], "t-9"],
    ["codex", ["exec", "--json", "--", "hi"], undefined],
    ["gemini", ["--resume", "g-1", "--prompt=hi"], "g-1"],
    ["gemini", ["--resume=--yolo", "--prompt=hi"], "--yolo"],
    ["opencode", ["run", "--format", "json", "--", "hi"], undefined],
  ] as [CliName, string[], string | undefined][])("%s %j continues %s", (cli, argv, from) => {
    expect(parseInvocation(cli, argv, "fallback").resumedFrom).toBe(from);
  });

  it("refuses claude stream-json without --verbose as the real CLI does", () => {
    expect(
      parseInvocation("claude", ["--print", "--output-format", "stream-json", "--", "x"], "s").usageError,
    ).toBe("Error: When using --print, --output-format=stream-json requires --verbose");
  });
});

describe("outputLines: each CLI's NDJSON (docs/agent-clis.md)", () => {
  const inv = (cli: CliName) =>
    parseInvocation(cli, cli === "codex" ? ["exec", "--json", "--", "p"] : ["--", "p"], "sid-1");

  it("claude: system init, assistant text, result with the answer and session", () => {
    const lines = parse(outputLines(inv("claude"), { answer: "Fixed." }, now, 5));
    expect(lines.map((l) => l.type)).toEqual(["system", "assistant", "result"]);
    expect(lines[0]).toMatchObject({ subtype: "init", session_id: "sid-1" });
    expect(lines[1]).toMatchObject({
      message: { role: "assistant", content: [{ type: "text", text: "Fixed." }] },
    });
    expect(lines[2]).toMatchObject({
      subtype: "success",
      is_error: false,
      result: "Fixed.",
      session_id: "sid-1",
    });
  });

  it("codex: thread.started … turn.completed, or turn.failed when failing", () => {
    expect(parse(outputLines(inv("codex"), { answer: "ok" }, now, 0)).map((l) => l.type)).toEqual([
      "thread.started",
      "turn.started",
      "item.completed",
      "turn.completed",
    ]);
    const failed = parse(outputLines(inv("codex"), { answer: "bad", fail: true }, now, 0));
    expect(failed.at(-1)).toEqual({ type: "turn.failed", error: { message: "bad" } });
    expect(failed[0]).toEqual({ type: "thread.started", thread_id: "sid-1" });
  });

  it("gemini: init, user echo, assistant delta, result with stats", () => {
    const lines = parse(outputLines(inv("gemini"), { answer: "A" }, now, 7));
    expect(lines.map((l) => [l.type, l.role])).toEqual([
      ["init", undefined],
      ["message", "user"],
      ["message", "assistant"],
      ["result", undefined],
    ]);
    expect(lines[0]).toMatchObject({ session_id: "sid-1", timestamp: now.toISOString() });
    expect(lines[3]).toMatchObject({ status: "success", stats: { duration_ms: 7, tool_calls: 0 } });
  });

  it.each<[CliName, FakeCliScript]>([
    ["claude", { terminal: false }],
    ["codex", { terminal: false }],
    ["gemini", { terminal: false }],
    ["opencode", { terminal: false }],
  ])("%s without its terminal line", (cli, script) => {
    const types = parse(outputLines(inv(cli), script, now, 0)).map((l) => l.type);
    expect(types).not.toContain("result");
    expect(types).not.toContain("turn.completed");
    expect(types).not.toContain("step_finish");
  });
});

describe("gates and answers", () => {
  it("a prompt names its gate with [gate <name>]", () => {
    expect(gateOf("Summarise tests. [gate t1]")).toBe("t1");
    expect(gateOf("no gate here")).toBeUndefined();
    expect(gateOf("[gate ../x]")).toBeUndefined();
  });

  it("{prompt} and {transcript} in the answer", () => {
    expect(answerText("re: {prompt} (after: {transcript})", "c", ["a", "b"])).toBe("re: c (after: a | b)");
    expect(answerText("plain", "c", [])).toBe("plain");
  });
});

describe("the installed executables", () => {
  let bin: string;
  beforeAll(async () => {
    bin = mkdtempSync(join(tmpdir(), "fake-cli-"));
    await installFakeClis(bin);
  });
  afterAll(() => rmSync(bin, { recursive: true, force: true }));

  it("dispatch on their name, follow FAKE_CLI_SCRIPT and journal argv and environment", async () => {
    const journal = join(bin, "journal.ndjson");
    const script: FakeCliScript = {
      answer: "from script",
      exitCode: 3,
      stderr: ["warn 1"],
      files: { "out/a.txt": "A" },
    };
    const env = { FAKE_CLI_SCRIPT: JSON.stringify(script), FAKE_CLI_JOURNAL: journal, SECRET_LOOKING: "v" };
    const err = (await run(join(bin, "codex"), ["exec", "resume", "t-1", "--json", "go"], {
      env,
      cwd: bin,
    }).catch((e: unknown) => e)) as { code: number; stdout: string; stderr: string };
    expect(err.code).toBe(3);
    expect(err.stderr).toBe("warn 1\n");
    const lines = parse(err.stdout.trimEnd().split("\n"));
    expect(lines[0]).toEqual({ type: "thread.started", thread_id: "t-1" });
    expect(lines[2]).toMatchObject({ item: { type: "agent_message", text: "from script" } });
    expect(readFileSync(join(bin, "out/a.txt"), "utf8")).toBe("A");
    const entry = JSON.parse(readFileSync(journal, "utf8").trim()) as {
      cli: string;
      argv: string[];
      env: Record<string, string>;
    };
    expect(entry.cli).toBe("codex");
    expect(entry.argv).toEqual(["exec", "resume", "t-1", "--json", "go"]);
    expect(entry.env.SECRET_LOOKING).toBe("v");
  });

  const runCli = (cli: CliName, argv: string[], env: Record<string, string>) =>
    run(join(bin, cli), argv, { env, cwd: bin }).catch(
      (e: unknown) => e as { code: number; stdout: string; stderr: string },
    );

  it("transcript: a session keeps its prompts under $HOME and a resume reads them, or fails without them", async () => {
    const home = mkdtempSync(join(tmpdir(), "fake-cli-home-"));
    try {
      const env = {
        HOME: home,
        FAKE_CLI_SCRIPT: JSON.stringify({ transcript: true, answer: "re: {prompt} (after: {transcript})" }),
      };
      const claude = ["--print", "--verbose", "--output-format", "stream-json"];
      await runCli("claude", [...claude, "--session-id", "s-1", "--", "one"], env);
      const second = await runCli("claude", [...claude, "--resume", "s-1", "--", "two"], env);
      const answer = parse(second.stdout.trimEnd().split("\n")).find((l) => l.type === "result");
      expect(answer?.result).toBe("re: two (after: one)");
      expect(readFileSync(join(home, TRANSCRIPT_DIRS.claude, "s-1.ndjson"), "utf8")).toBe('"one"\n"two"\n');
      const missing = (await runCli("claude", [...claude, "--resume", "s-2", "--", "x"], env)) as {
        code: number;
        stderr: string;
      };
      expect(missing.code).toBe(1);
      expect(missing.stderr).toBe("No conversation found with session ID: s-2\n");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("a gated run prints nothing until its gate file exists", async () => {
    const gates = mkdtempSync(join(tmpdir(), "fake-cli-gates-"));
    try {
      const env = { FAKE_CLI_SCRIPT: JSON.stringify({ gates, answer: "{prompt}" }) };
      const outcome = runCli("codex", ["exec", "--json", "--", "wait [gate g1]"], env);
      let settled = false;
      void outcome.then(() => {
        settled = true;
      });
      // Ordering, not timing: the run cannot end before the gate exists, however long we look.
      await new Promise((r) => setTimeout(r, 300));
      expect(settled).toBe(false);
      expect(existsSync(join(gates, "g1"))).toBe(false);
      writeFileSync(join(gates, "g1"), "");
      const done = (await outcome) as { stdout: string };
      const lines = parse(done.stdout.trimEnd().split("\n"));
      expect(lines.at(-1)).toMatchObject({ type: "turn.completed" });
      expect(lines[2]).toMatchObject({ item: { text: "wait [gate g1]" } });
    } finally {
      rmSync(gates, { recursive: true, force: true });
    }
  });
});
