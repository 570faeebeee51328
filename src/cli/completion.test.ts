import { describe, expect, it } from "vitest";
import { complete, DIRECTIVE_DEFAULT, DIRECTIVE_NO_FILES, formatCompletion } from "./completion.js";

const lookup = async (kind: "agents" | "stations") =>
  kind === "agents" ? ["run-1", "run-2", "other"] : ["writer", "reviewer"];

describe("completion", () => {
  it.each([
    ["subcommands", [""], ["run", "logs", "prompt", "close", "status", "validate", "completion", "help"]],
    ["a subcommand by prefix", ["st"], ["status"]],
    ["Stations after run", ["run", ""], ["writer", "reviewer"]],
    ["Agents after logs, by prefix", ["logs", "run"], ["run-1", "run-2"]],
    ["Agents after a global flag and its value", ["-n", "team", "status", ""], ["run-1", "run-2", "other"]],
    ["nothing after the positional", ["logs", "run-1", ""], []],
    ["-o values of the command", ["prompt", "-o", ""], ["json", "yaml"]],
    ["--station values", ["status", "--station", "re"], ["reviewer"]],
    ["shells", ["completion", ""], ["bash", "zsh"]],
    [
      "flags of logs (no -o)",
      ["logs", "--"],
      ["--follow", "--raw", "--namespace", "--context", "--kubeconfig", "--help"],
    ],
  ])("%s", async (_name, words, expected) => {
    const result = await complete(words, lookup);
    expect(result).toEqual({ candidates: expected, directive: DIRECTIVE_NO_FILES });
  });

  it("file names after -f", async () => {
    expect(await complete(["validate", "-f", ""], lookup)).toEqual({
      candidates: [],
      directive: DIRECTIVE_DEFAULT,
    });
  });

  it("prints cobra's protocol: one candidate a line, then :directive", () => {
    expect(formatCompletion({ candidates: ["a", "b"], directive: 4 })).toBe("a\nb\n:4\n");
  });
});
