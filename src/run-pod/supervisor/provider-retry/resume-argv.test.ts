import { describe, expect, it } from "vitest";
import { cliArgv } from "../../../core/cli/argv.js";
import type { AgentDefinitionSpec } from "../../../core/types.js";
import { RESUME_PROMPT, resumeArgv } from "./resume-argv.js";

const argvOf = (model: string, extra: Partial<AgentDefinitionSpec> = {}, prompt = "Fix the bug") =>
  cliArgv({ model, prompt, ...extra } as AgentDefinitionSpec, model, prompt);
const ID = "7843b0b1-5d57-4bbe-9524-84bd2e3a2e58";

describe("the argv that continues a session after a provider limit", () => {
  it("claude: every option kept, --resume with the announced session and the continuation prompt", () => {
    const argv = argvOf("claude-sonnet-4-6", {
      allowed_tools: ["Edit"],
      max_turns: 5,
      resources: { mcp_servers: [{ name: "x", transport: "http", url: "http://x" }] },
    });
    expect(resumeArgv("claude", argv, ID)).toEqual([
      ...argv.slice(0, -2),
      "--resume",
      ID,
      "--",
      RESUME_PROMPT,
    ]);
  });

  it("claude: a resumed, pinned or forked session continues as the session the CLI announced", () => {
    const pinned = argvOf("claude-sonnet-4-6", { resources: { conversation: { id: "old", pin: ID } } });
    expect(pinned).toEqual(expect.arrayContaining(["--resume", "old", "--fork-session", "--session-id", ID]));
    const resumed = resumeArgv("claude", pinned, ID) ?? [];
    expect(resumed.slice(-4)).toEqual(["--resume", ID, "--", RESUME_PROMPT]);
    expect(resumed).not.toContain("--fork-session");
    expect(resumed).not.toContain("--session-id");
    expect(resumed).not.toContain("old");
  });

  it("codex: exec resume <thread>, the sandbox and model options kept", () => {
    const argv = argvOf("gpt-5.5");
    expect(resumeArgv("codex", argv, "t-1", "go")).toEqual([
      "codex",
      "exec",
      "resume",
      "t-1",
      ...argv.slice(2, -2),
      "--",
      "go",
    ]);
    const again = argvOf("gpt-5.5", { resources: { conversation: { id: "t-0" } } });
    expect(resumeArgv("codex", again, "t-1", "go")?.slice(0, 5)).toEqual([
      "codex",
      "exec",
      "resume",
      "t-1",
      "--json",
    ]);
  });

  it("gemini: --resume=<id> and --prompt=<continuation>, the rest kept", () => {
    const argv = argvOf("gemini-2.5-pro", {
      allowed_tools: ["write_file"],
      resources: { conversation: { id: "x" } },
    });
    expect(resumeArgv("gemini", argv, ID, "go")).toEqual([
      "gemini",
      "--output-format",
      "stream-json",
      "--model=gemini-2.5-pro",
      "--allowed-tools=write_file",
      `--resume=${ID}`,
      "--prompt=go",
    ]);
  });

  it("opencode: --session <id> within the run's HOME", () => {
    const argv = argvOf("opencode/anthropic/claude-sonnet-4-6", { permission_mode: "bypass" });
    expect(resumeArgv("opencode", argv, "ses_abc", "go")).toEqual([
      "opencode",
      "run",
      "--format",
      "json",
      "--model",
      "anthropic/claude-sonnet-4-6",
      "--auto",
      "--session",
      "ses_abc",
      "--",
      "go",
    ]);
  });

  it("nothing continues an exec command, an argv of another shape or an id that reads as an option", () => {
    expect(resumeArgv("exec", ["sh", "-c", "x", "prompt"], ID)).toBeUndefined();
    expect(resumeArgv("claude", ["claude", "-p", "hi"], ID)).toBeUndefined();
    expect(resumeArgv("codex", ["sh", "--", "x"], ID)).toBeUndefined();
    expect(resumeArgv("gemini", ["gemini", "hi"], ID)).toBeUndefined();
    expect(
      resumeArgv("claude", argvOf("claude-sonnet-4-6"), "--dangerously-skip-permissions"),
    ).toBeUndefined();
    expect(resumeArgv("claude", argvOf("claude-sonnet-4-6"), "")).toBeUndefined();
  });
});
