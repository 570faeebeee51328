import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliName, type FakeCliScript, outputLines, parseInvocation } from "./fake-cli.js";
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
    ["gemini", ["--output-format", "stream-json", "--prompt=ask"], "fallback", "ask"],
  ] as [CliName, string[], string, string][])("%s %j", (cli, argv, session, prompt) => {
    const inv = parseInvocation(cli, argv, "fallback");
    expect(inv.sessionId).toBe(session);
    expect(inv.prompt).toBe(prompt);
    expect(inv.usageError).toBeUndefined();
  });

  it("refuses claude stream-json without --verbose as the real CLI does", () => {
    expect(
      parseInvocation("claude", ["--print", "--output-format", "stream-json", "--", "x"], "s").usageError,
    ).toBe("Error: When using --print, --output-format=stream-json requires --verbose");
  });
});

describe("outputLines: each CLI's NDJSON (cli-output.md)", () => {
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
});
