import type { V1EnvVar } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { agent, definition, station } from "../../../test/support/core-builders.js";
import { build, container, envOf, secretRef, settings } from "../../../test/support/job-build.js";
import { AGENT_CLIS } from "../cli/agent-clis.js";
import type { ControllerSettings } from "../input.js";
import { buildJob } from "./job.js";

describe("injected environment (docs/run-pod.md#injected-environment)", () => {
  it("pins the minimal interactive agent env, in order", () => {
    const env = container(build(), "agent").env as V1EnvVar[];
    expect(env).toEqual([
      { name: "AGENT_SINKS", value: "[]" },
      { name: "AGENT_REPOS", value: "[]" },
      { name: "AGENT_SKILLS", value: "[]" },
      { name: "AGENT_SKILLS_SOURCE", value: "" },
      { name: "AGENT_CONVERSATION_AUTH", value: "" },
      { name: "AGENT_CONVERSATION_SOURCE", value: "" },
      { name: "AGENT_CONVERSATION_ID", value: "" },
      { name: "AGENT_CONVERSATION_PIN", value: "" },
      { name: "AGENT_DEADLINE_MS", value: "1770000" },
      { name: "AGENT_TAIL_MS", value: "30000" },
      { name: "WORKSPACE_DIR", value: "/workspace" },
      { name: "AGENT_PARAMETERS", value: '{"ticket":"ENG-1"}' },
      { name: "AGENT_MODEL", value: "" },
      { name: "AGENT_NAME", value: "run-1" },
      { name: "STATION_NAME", value: "st" },
      { name: "TASK_ID", value: "" },
      { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
      { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
      { name: "HOME", value: "/agent" },
      { name: "PATH", value: "/agent/.local/bin:/agent/.opencode/bin:/usr/local/bin:/usr/bin:/bin" },
      { name: "AGENT_EXECUTION", value: "interactive" },
      { name: "AGENT_RESULT_DIR", value: "/run/ai-agent-result" },
      { name: "AGENT_CLI_VERSION", value: AGENT_CLIS.claude.version },
    ]);
  });

  it("gives a gemini agent its definition's disallowed tools (its CLI setup makes them policy rules)", () => {
    for (const mode of ["interactive", "realtime"] as const) {
      const denied = build({ mode, def: { model: "gemini-2.5-pro", disallowed_tools: ["write_file"] } });
      expect(envOf(container(denied, "agent")).AGENT_DISALLOWED_TOOLS).toBe('["write_file"]');
      expect(envOf(container(denied, "init")).AGENT_DISALLOWED_TOOLS).toBeUndefined();
    }
    const claude = build({ def: { model: "claude-sonnet-4-6", disallowed_tools: ["Bash"] } });
    expect(envOf(container(claude, "agent")).AGENT_DISALLOWED_TOOLS).toBeUndefined();
    const none = build({ def: { model: "gemini-2.5-pro" } });
    expect(envOf(container(none, "agent")).AGENT_DISALLOWED_TOOLS).toBeUndefined();
  });

  const rich = build({
    agentSpec: {
      taskId: "T-9",
      targetRepo: "o/r",
      files: [{ path: "notes/brief.md", url: "https://files/brief.md", headers_secret: "files-auth" }],
    },
    def: {
      model: "claude-sonnet-4-6",
      resources: {
        env: [
          { name: "FOO", value: "bar" },
          { name: "AGENT_MODEL", value: "hijack" },
        ],
        secrets: [
          { name: "ANTHROPIC_API_KEY", ref: "anthropic-key" },
          { name: "PATH", ref: "evil" },
          { name: "GH_TOKEN", ref: "later-loses" },
        ],
        repos: [
          { name: "api", url: "o/api", token_secret: "API_TOKEN" },
          { name: "web", url: "o/web", token_secret: "not-an-env-name" },
        ],
        mcp_servers: [
          { name: "lore", transport: "http", url: "https://lore", headers_secret: "lore-mcp-auth" },
        ],
        conversation: { source: "https://conv", headers_secret: "conv-auth" },
      },
      output: {
        sinks: [
          { type: "http", url: "https://sink", headers_secret: "sink-auth" },
          { type: "http", url: "https://sink2", headers_secret: "HOME" },
        ],
        select: [{ event: "result" }],
        watch: [{ event: "report", path: "out.json" }],
      },
    },
  });
  const agentEnv = envOf(container(rich, "agent"));
  const initEnv = envOf(container(rich, "init"));

  it("injects secrets as secretKeyRef into agent-secrets, first name wins", () => {
    expect(agentEnv["sink-auth"]).toEqual(secretRef("sink-auth"));
    expect(agentEnv.LORE_MCP_AUTH).toEqual(secretRef("lore-mcp-auth"));
    expect(agentEnv["conv-auth"]).toEqual(secretRef("conv-auth"));
    expect(agentEnv.API_TOKEN).toEqual(secretRef("API_TOKEN"));
    expect(agentEnv["not-an-env-name"]).toBeUndefined();
    expect(agentEnv.GH_TOKEN).toEqual(secretRef("API_TOKEN"));
    expect(agentEnv.ANTHROPIC_API_KEY).toEqual(secretRef("anthropic-key"));
  });
  it("drops reserved names from the recipe and blanks a reserved sink header", () => {
    expect(agentEnv.AGENT_MODEL).toBe("claude-sonnet-4-6");
    expect(agentEnv.PATH).toBe("/agent/.local/bin:/agent/.opencode/bin:/usr/local/bin:/usr/bin:/bin");
    expect(agentEnv.FOO).toBe("bar");
    expect(JSON.parse(agentEnv.AGENT_SINKS as string)).toEqual([
      { type: "http", url: "https://sink", headers_secret: "sink-auth" },
      { type: "http", url: "https://sink2", headers_secret: "" },
    ]);
  });
  it("passes identity, select and watch", () => {
    expect(agentEnv.TASK_ID).toBe("T-9");
    expect(agentEnv.TARGET_REPO).toBe("o/r");
    expect(agentEnv.BRANCH_NAME).toBeUndefined();
    expect(agentEnv.AGENT_SELECT).toBe('[{"event":"result"}]');
    expect(agentEnv.AGENT_WATCH).toBe('[{"event":"report","path":"out.json"}]');
    expect(agentEnv.AGENT_CONVERSATION_AUTH).toBe("conv-auth");
  });
  it("gives spec.files and their header secrets to the init container only", () => {
    expect(initEnv.AGENT_FILES).toBe(
      '[{"path":"notes/brief.md","url":"https://files/brief.md","headers_secret":"files-auth"}]',
    );
    expect(initEnv["files-auth"]).toEqual(secretRef("files-auth"));
    expect(agentEnv.AGENT_FILES).toBeUndefined();
    expect(agentEnv["files-auth"]).toBeUndefined();
    expect(initEnv.AGENT_EXECUTION).toBeUndefined();
  });
});

describe("agent CLI installation settings (docs/agent-clis.md)", () => {
  const withSettings = (
    extra: Partial<ControllerSettings>,
    opts: { model?: string; recipeEnv?: { name: string; value: string }[]; stationEnv?: V1EnvVar[] } = {},
  ) => {
    const r = buildJob(
      agent("run-1").build(),
      station()
        .spec({
          template: {
            spec: {
              containers: [
                { name: "agent", image: "img", ...(opts.stationEnv ? { env: opts.stationEnv } : {}) },
              ],
            },
          },
        })
        .build(),
      definition()
        .spec({ model: opts.model ?? "claude-sonnet-4-6", resources: { env: opts.recipeEnv ?? [] } })
        .build(),
      { ...settings, ...extra },
      "interactive",
    );
    if (!r.ok) throw new Error(r.reason);
    const raw = container(r.job, "agent").env ?? [];
    return { agent: envOf(container(r.job, "agent")), init: envOf(container(r.job, "init")), raw };
  };
  const urls = {
    agentBaseUrls: {
      anthropic: "http://proxy.internal/anthropic",
      openai: "http://proxy.internal/openai/v1",
      gemini: "http://proxy.internal/gemini",
    },
  };

  it.each([
    ["claude-sonnet-4-6", "claude"],
    ["gpt-5-codex", "codex"],
    ["gemini-2.5-pro", "gemini"],
    ["opencode/anthropic/claude-sonnet-4-6", "opencode"],
  ] as const)("%s: the agent gets the pinned %s version as AGENT_CLI_VERSION", (model, vendor) => {
    const env = withSettings({}, { model });
    expect(env.agent.AGENT_CLI_VERSION).toBe(AGENT_CLIS[vendor].version);
    expect(env.init.AGENT_CLI_VERSION).toBeUndefined();
  });
  it("an installation's version setting wins for its vendor only", () => {
    const s = { cliVersions: { codex: "0.170.1" } };
    expect(withSettings(s, { model: "gpt-5-codex" }).agent.AGENT_CLI_VERSION).toBe("0.170.1");
    expect(withSettings(s, { model: "claude-x" }).agent.AGENT_CLI_VERSION).toBe(AGENT_CLIS.claude.version);
  });
  it("exec runs get neither a CLI version nor base URLs", () => {
    const r = buildJob(
      agent("run-1").build(),
      station().build(),
      definition()
        .spec({ model: "exec", tool_config: { command: ["make"] } })
        .build(),
      { ...settings, ...urls },
      "interactive",
    );
    if (!r.ok) throw new Error(r.reason);
    const env = envOf(container(r.job, "agent"));
    expect(env.AGENT_CLI_VERSION).toBeUndefined();
    expect(env.ANTHROPIC_BASE_URL).toBeUndefined();
  });
  it("the recipe cannot set AGENT_CLI_VERSION", () => {
    const env = withSettings({}, { recipeEnv: [{ name: "AGENT_CLI_VERSION", value: "9.9.9" }] });
    expect(env.agent.AGENT_CLI_VERSION).toBe(AGENT_CLIS.claude.version);
  });
  it("every configured base URL reaches the agent container of any CLI run, as the variable its CLI reads", () => {
    for (const model of ["claude-x", "gemini-2.5-pro"]) {
      const env = withSettings(urls, { model });
      expect(env.agent.ANTHROPIC_BASE_URL).toBe("http://proxy.internal/anthropic");
      expect(env.agent.OPENAI_BASE_URL).toBe("http://proxy.internal/openai/v1");
      expect(env.agent.GOOGLE_GEMINI_BASE_URL).toBe("http://proxy.internal/gemini");
      expect(env.init.ANTHROPIC_BASE_URL).toBeUndefined();
    }
    expect(withSettings({ agentBaseUrls: { openai: "http://o" } }).agent.ANTHROPIC_BASE_URL).toBeUndefined();
  });
  it("the Station's own env and the recipe's env win over the installation's base URL", () => {
    const station = withSettings(urls, {
      stationEnv: [{ name: "ANTHROPIC_BASE_URL", value: "http://station" }],
    });
    expect(station.agent.ANTHROPIC_BASE_URL).toBe("http://station");
    const recipe = withSettings(urls, {
      recipeEnv: [{ name: "ANTHROPIC_BASE_URL", value: "http://recipe" }],
      stationEnv: [{ name: "ANTHROPIC_BASE_URL", value: "http://station" }],
    });
    expect(recipe.agent.ANTHROPIC_BASE_URL).toBe("http://recipe");
    expect(station.raw.filter((e) => e.name === "ANTHROPIC_BASE_URL")).toHaveLength(1);
    expect(recipe.raw.filter((e) => e.name === "ANTHROPIC_BASE_URL")).toHaveLength(1);
  });
});
