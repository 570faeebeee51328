/** opencode's argv (docs/agent-clis.md, "opencode"): what the real opencode 1.18 CLI accepts. */
import { describe, expect, it } from "vitest";
import type { AgentDefinitionSpec } from "../types.js";
import { cliArgv } from "./argv.js";

describe("opencode argv", () => {
  it.each<[string, Partial<AgentDefinitionSpec>, string, string[]]>([
    [
      "bare opencode: the CLI's default model",
      {},
      "opencode",
      ["opencode", "run", "--format", "json", "--", "P"],
    ],
    [
      "provider/model after the opencode/ prefix",
      {},
      "opencode/anthropic/claude-sonnet-4-6",
      ["opencode", "run", "--format", "json", "--model", "anthropic/claude-sonnet-4-6", "--", "P"],
    ],
    [
      "bypass approves every permission not explicitly denied",
      { permission_mode: "bypass" },
      "opencode/anthropic/claude-sonnet-4-6",
      ["opencode", "run", "--format", "json", "--model", "anthropic/claude-sonnet-4-6", "--auto", "--", "P"],
    ],
    [
      "auto keeps opencode's own rules (requests it would ask about are refused)",
      { permission_mode: "auto", allowed_tools: ["Bash"], max_turns: 3 },
      "opencode/openai/gpt-4.1",
      ["opencode", "run", "--format", "json", "--model", "openai/gpt-4.1", "--", "P"],
    ],
  ])("%s", (_name, def, model, argv) => {
    expect(cliArgv({ prompt: "p", ...def } as AgentDefinitionSpec, model, "P")).toEqual(argv);
  });

  it("keeps a prompt that looks like an option after --", () => {
    expect(cliArgv({ prompt: "p" } as AgentDefinitionSpec, "opencode", "--auto").slice(-2)).toEqual([
      "--",
      "--auto",
    ]);
  });
});
