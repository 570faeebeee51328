import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLAUDE_MAX_RETRIES, claudeSetup } from "./claude.js";
import { cliEnv, writeCliFiles } from "./index.js";

const input = (env: Record<string, string>, home = "/agent") => ({ env, home, workspace: "/workspace" });

describe("claudeSetup", () => {
  it("turns the CLI's non-essential traffic off and bounds its API retries", () => {
    const setup = claudeSetup(input({ ANTHROPIC_API_KEY: "sk-ant-x" }));
    expect(setup.env).toEqual({
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      CLAUDE_CODE_MAX_RETRIES: CLAUDE_MAX_RETRIES,
    });
    expect(setup.notices).toEqual([
      `claude: API calls retried at most ${CLAUDE_MAX_RETRIES} times (CLAUDE_CODE_MAX_RETRIES)`,
    ]);
  });

  it("keeps a retry bound the run sets itself", () => {
    const setup = claudeSetup(input({ CLAUDE_CODE_MAX_RETRIES: "0" }));
    expect(setup.env).toEqual({ CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1" });
    expect(cliEnv({ CLAUDE_CODE_MAX_RETRIES: "0" }, setup).CLAUDE_CODE_MAX_RETRIES).toBe("0");
    expect(setup.notices).toEqual([]);
  });

  it("never writes a secret: the key stays in the environment the CLI reads", () => {
    const setup = claudeSetup(input({ ANTHROPIC_API_KEY: "sk-ant-secret" }));
    expect(JSON.stringify(setup)).not.toContain("sk-ant-secret");
  });
});

describe("claude's settings file, as the supervisor writes it", () => {
  let home: string;
  beforeEach(async () => {
    home = await mkdtemp(join(tmpdir(), "claude-setup-"));
  });
  afterEach(async () => {
    await rm(home, { recursive: true, force: true });
  });

  it("creates $HOME/.claude/settings.json when the init left none, so --settings always finds it", async () => {
    await writeCliFiles(claudeSetup(input({}, home)));
    expect(JSON.parse(await readFile(join(home, ".claude", "settings.json"), "utf8"))).toEqual({});
  });

  it("keeps a settings file the init fetched from skills_source", async () => {
    const fetched = '{"permissions":{"allow":["Bash(npm test)"]}}\n';
    await mkdir(join(home, ".claude"), { recursive: true });
    await writeFile(join(home, ".claude", "settings.json"), fetched);
    await writeCliFiles(claudeSetup(input({}, home)));
    expect(await readFile(join(home, ".claude", "settings.json"), "utf8")).toBe(fetched);
  });
});
