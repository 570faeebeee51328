import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { agent, definition, station } from "../../../test/support/core-builders.js";
import { build, container, envOf, secretRef, settings, wiredJob } from "../../../test/support/job-build.js";
import { cliArgv } from "../cli/argv.js";
import type { AgentDefinitionSpec } from "../types.js";
import { realtimeRunToken } from "./env.js";
import { buildJob } from "./job.js";

describe("pod template wiring: the controller's containers (docs/run-pod.md#the-job-and-its-pod-template)", () => {
  const job = wiredJob();
  const agentC = container(job, "agent");
  it("rewires the agent container", () => {
    expect(agentC.args).toBeUndefined();
    // The witness starts as root with SETUID, SETGID and KILL only, and runs the supervisor as
    // 1000:1000; its record of the result goes to a volume only root can write (docs/security.md).
    expect(agentC.command?.slice(0, 4)).toEqual([
      "/agent/bin/ai-agent-witness",
      "--",
      "/agent/bin/ai-agent-supervisor",
      "--",
    ]);
    expect(agentC.volumeMounts).toEqual([
      { name: "cache", mountPath: "/cache" },
      { name: "agent", mountPath: "/agent" },
      { name: "workspace", mountPath: "/workspace" },
      { name: "agent-result", mountPath: "/run/ai-agent-result" },
    ]);
    expect(agentC.securityContext).toEqual({
      readOnlyRootFilesystem: true,
      runAsNonRoot: false,
      runAsUser: 0,
      runAsGroup: 0,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"], add: ["SETUID", "SETGID", "KILL"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    const env = envOf(agentC);
    expect(env.STATION_VAR).toBe("s");
    expect(env.HOME).toBe("/agent");
    expect(env.SHARED).toBe("recipe");
  });
  it("defaults the agent's resources and working dir when the Station sets none", () => {
    const c = container(build(), "agent");
    expect(c.resources).toEqual({ requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "2Gi" } });
    expect(c.workingDir).toBe("/workspace");
  });
  it("builds the init container", () => {
    const init = container(job, "init");
    expect(init.image).toBe(settings.agentImage);
    expect(init.command).toBeUndefined();
    expect(init.securityContext).toEqual({
      runAsUser: 0,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"], add: ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(init.resources).toEqual({ requests: { cpu: "50m", memory: "128Mi" }, limits: { memory: "2Gi" } });
    expect(init.volumeMounts).toEqual([
      { name: "agent", mountPath: "/agent" },
      { name: "workspace", mountPath: "/workspace" },
    ]);
  });
});

describe("agent argv per vendor (docs/agent-clis.md#compatibility)", () => {
  const full: AgentDefinitionSpec = {
    prompt: "p",
    allowed_tools: ["Read", "Bash(npm run test:*)"],
    disallowed_tools: ["Bash(rm *)"],
    max_turns: 7,
    resources: {
      mcp_servers: [
        { name: "lore", transport: "http", url: "https://lore/mcp", headers_secret: "lore-mcp-auth" },
        { name: "fs", transport: "stdio", command: "mcp-fs", args: ["/workspace"] },
      ],
      skills_source: "https://skills.example",
      conversation: { source: "https://conv", id: "c-1", pin: "c-2" },
    },
  };
  it.each([
    [
      "claude, every flag",
      full,
      "claude-sonnet-4-6",
      [
        "claude",
        "--print",
        "--verbose",
        "--output-format",
        "stream-json",
        "--model",
        "claude-sonnet-4-6",
        "--allowedTools",
        "Read",
        "--allowedTools",
        "Bash(npm run test:*)",
        "--disallowedTools",
        "Bash(rm *)",
        "--mcp-config",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the CLI expands ${VAR}; the literal is the point.
        '{"mcpServers":{"lore":{"type":"http","url":"https://lore/mcp","headers":{"Authorization":"${LORE_MCP_AUTH}"}},"fs":{"type":"stdio","command":"mcp-fs","args":["/workspace"]}}}',
        "--strict-mcp-config",
        "--settings",
        "/agent/.claude/settings.json",
        "--max-turns",
        "7",
        "--resume",
        "c-1",
        "--fork-session",
        "--session-id",
        "c-2",
        "--",
        "PROMPT",
      ],
    ],
    [
      "claude bypass, empty model (docs/decisions.md D-19)",
      { prompt: "p", permission_mode: "bypass", allowed_tools: ["Read"] },
      "",
      [
        "claude",
        "--print",
        "--verbose",
        "--output-format",
        "stream-json",
        "--dangerously-skip-permissions",
        "--",
        "PROMPT",
      ],
    ],
    [
      "codex fresh",
      { prompt: "p", permission_mode: "bypass" },
      "gpt-5-mini",
      [
        "codex",
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--model",
        "gpt-5-mini",
        "--dangerously-bypass-approvals-and-sandbox",
        "--",
        "PROMPT",
      ],
    ],
    [
      "codex fresh, auto: the sandbox may write the workspace",
      { prompt: "p" },
      "gpt-5.5",
      [
        "codex",
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--model",
        "gpt-5.5",
        "-c",
        'sandbox_mode="danger-full-access"',
        "--",
        "PROMPT",
      ],
    ],
    [
      "codex resume",
      { prompt: "p", resources: { conversation: { id: "t-1" } } },
      "gpt-5-codex",
      [
        "codex",
        "exec",
        "resume",
        "t-1",
        "--json",
        "--skip-git-repo-check",
        "--model",
        "gpt-5-codex",
        "-c",
        'sandbox_mode="danger-full-access"',
        "--",
        "PROMPT",
      ],
    ],
    [
      "gemini",
      { prompt: "p", allowed_tools: ["ReadFile"], resources: { conversation: { id: "g-1" } } },
      "gemini-3.1-flash-lite",
      [
        "gemini",
        "--output-format",
        "stream-json",
        "--model=gemini-3.1-flash-lite",
        "--allowed-tools=ReadFile",
        "--resume=g-1",
        "--prompt=PROMPT",
      ],
    ],
    [
      "gemini bypass",
      { prompt: "p", permission_mode: "bypass" },
      "gemini-2.5-pro",
      ["gemini", "--output-format", "stream-json", "--model=gemini-2.5-pro", "--yolo", "--prompt=PROMPT"],
    ],
    [
      "gemini resume: an id that looks like an option stays the option's value",
      { prompt: "p", resources: { conversation: { id: "--yolo" } } },
      "gemini-2.5-pro",
      [
        "gemini",
        "--output-format",
        "stream-json",
        "--model=gemini-2.5-pro",
        "--resume=--yolo",
        "--prompt=PROMPT",
      ],
    ],
    ["opencode bare", { prompt: "p" }, "opencode", ["opencode", "run", "--format", "json", "--", "PROMPT"]],
    [
      "opencode with model",
      { prompt: "p" },
      "opencode/openai/gpt-4.1",
      ["opencode", "run", "--format", "json", "--model", "openai/gpt-4.1", "--", "PROMPT"],
    ],
    [
      "exec",
      { prompt: "p", tool_config: { command: ["my-agent", "--ndjson"] } },
      "exec",
      ["my-agent", "--ndjson", "PROMPT"],
    ],
  ] as [string, AgentDefinitionSpec, string, string[]][])("%s", (_n, def, model, want) => {
    expect(cliArgv(def, model, "PROMPT")).toEqual(want);
  });

  it("puts the rendered prompt last in the supervisor command", () => {
    expect(container(build({ def: { model: "claude-sonnet-4-6" } }), "agent").command).toEqual([
      "/agent/bin/ai-agent-witness",
      "--",
      "/agent/bin/ai-agent-supervisor",
      "--",
      "claude",
      "--print",
      "--verbose",
      "--output-format",
      "stream-json",
      "--model",
      "claude-sonnet-4-6",
      "--",
      "Fix ENG-1.",
    ]);
  });
  it("uses the Agent's model override for the CLI", () => {
    const cmd = container(
      build({ def: { model: "claude-sonnet-4-6" }, agentSpec: { model: "gemini-3.1-flash-lite" } }),
      "agent",
    ).command;
    expect(cmd?.[4]).toBe("gemini");
  });
});

describe("realtime Job (docs/supervisor.md#realtime-sessions)", () => {
  const job = build({ mode: "realtime", def: { execution: "realtime" } });
  const c = container(job, "agent");
  it("labels the pod and serves on 8090", () => {
    expect(job.spec?.template.metadata?.labels?.["agents.re-cinq.com/execution"]).toBe("realtime");
    expect(job.metadata?.labels?.["agents.re-cinq.com/execution"]).toBe("realtime");
    expect(c.ports).toEqual([{ name: "prompt", containerPort: 8090 }]);
    expect(c.readinessProbe).toEqual({
      httpGet: { path: "/healthz", port: 8090 },
      periodSeconds: 2,
      failureThreshold: 1,
    });
  });
  it("passes only the initial prompt after --", () => {
    expect(c.command).toEqual([
      "/agent/bin/ai-agent-witness",
      "--",
      "/agent/bin/ai-agent-supervisor",
      "--",
      "Fix ENG-1.",
    ]);
  });
  it("derives the run token hash from the uid (docs/decisions.md D-40)", () => {
    const token = realtimeRunToken("signing-key", "uid-run-1");
    const env = envOf(c);
    expect(env.AGENT_REALTIME_TOKEN_SHA256).toBe(createHash("sha256").update(token).digest("hex"));
    expect(env.AGENT_EXECUTION).toBe("realtime");
    expect(JSON.parse(env.AGENT_RECIPE as string)).toMatchObject({ model: "", permission_mode: "auto" });
  });
  it("sends no prompt when resuming", () => {
    const resumed = build({
      mode: "realtime",
      def: { execution: "realtime", resources: { conversation: { source: "https://c" } } },
      agentSpec: { resumeSession: "s-1" },
    });
    expect(container(resumed, "agent").command).toEqual([
      "/agent/bin/ai-agent-witness",
      "--",
      "/agent/bin/ai-agent-supervisor",
      "--",
    ]);
    expect(envOf(container(resumed, "agent")).AGENT_RESUME_SESSION).toBe("s-1");
    expect(envOf(container(resumed, "init")).AGENT_RESUME_SESSION).toBe("s-1");
  });
});

describe("delivery courier (docs/run-pod.md#delivery, docs/decisions.md D-32, D-47)", () => {
  const job = build({
    def: {
      delivery: { pullRequest: { tokenSecret: "forge-token", title: "Fix {ticket}" } },
      resources: { repos: [{ name: "api", url: "o/api", token_secret: "API_TOKEN" }] },
    },
  });
  const courier = container(job, "courier");
  it("adds the courier container", () => {
    expect(courier.image).toBe(settings.agentImage);
    expect(courier.resources).toEqual({
      requests: { cpu: "50m", memory: "64Mi" },
      limits: { memory: "512Mi" },
    });
    const env = envOf(courier);
    expect(env.DELIVERY_TOKEN).toEqual(secretRef("forge-token"));
    expect(JSON.parse(env.AGENT_DELIVERY as string)).toEqual({ title: "Fix ENG-1", draft: false });
    expect(env.BRANCH_NAME).toBe("agent/run-1");
    // It reads the agent's result from the witness's volume, which it cannot write.
    expect(env.AGENT_RESULT_DIR).toBe("/run/ai-agent-result");
    expect(courier.volumeMounts).toContainEqual({
      name: "agent-result",
      mountPath: "/run/ai-agent-result",
      readOnly: true,
    });
    // The clone tokens stay with the init: the courier's git never needs them.
    expect(env.API_TOKEN).toBeUndefined();
    expect(env.GH_TOKEN).toBeUndefined();
    expect(env.AGENT_DEADLINE_MS).toBe("1650000");
    expect(JSON.parse(env.AGENT_REPOS as string)).toEqual([
      { name: "api", url: "o/api", token_secret: "API_TOKEN" },
    ]);
  });
  it.each([
    ["GitHub by default", {}, "https://api.github.com", "https://github.com"],
    [
      "a GitHub Enterprise server",
      { githubApiUrl: "https://ghe.example.com/api/v3", githubServerUrl: "https://ghe.example.com" },
      "https://ghe.example.com/api/v3",
      "https://ghe.example.com",
    ],
    [
      "local test servers",
      { githubApiUrl: "http://127.0.0.1:4001", githubServerUrl: "http://127.0.0.1:4002" },
      "http://127.0.0.1:4001",
      "http://127.0.0.1:4002",
    ],
  ] as const)("points the courier at %s, and only the courier", (_name, forge, apiUrl, serverUrl) => {
    const built = buildJob(
      agent("run-1").build(),
      station().build(),
      definition()
        .spec({ delivery: { pullRequest: { tokenSecret: "forge-token" } } })
        .build(),
      { ...settings, ...forge },
      "interactive",
    );
    if (!built.ok) throw new Error(built.reason);
    expect(envOf(container(built.job, "courier"))).toMatchObject({
      GITHUB_API_URL: apiUrl,
      GITHUB_SERVER_URL: serverUrl,
    });
    for (const name of ["init", "agent"]) {
      const env = envOf(container(built.job, name));
      expect([env.GITHUB_API_URL, env.GITHUB_SERVER_URL], name).toEqual([undefined, undefined]);
    }
  });
  it.each([
    ["no prefix, no spec.branch", {}, {}, "agent/run-1"],
    ["a definition's prefix leaves the default agent/<name>", { branchPrefix: "bots/" }, {}, "agent/run-1"],
    ["spec.branch as given", {}, { branch: "fix/#128" }, "fix/#128"],
  ] as const)("BRANCH_NAME: %s", (_name, pr, spec, branch) => {
    const built = buildJob(
      agent("run-1").spec(spec).build(),
      station().build(),
      definition()
        .spec({ delivery: { pullRequest: { tokenSecret: "forge-token", ...pr } } })
        .build(),
      settings,
      "interactive",
    );
    if (!built.ok) throw new Error(built.reason);
    expect(envOf(container(built.job, "courier")).BRANCH_NAME).toBe(branch);
  });
  it("keeps clone tokens out of the agent container and shortens its deadline", () => {
    const env = envOf(container(job, "agent"));
    expect(env.API_TOKEN).toBeUndefined();
    expect(env.GH_TOKEN).toBeUndefined();
    expect(env.DELIVERY_TOKEN).toBeUndefined();
    expect(env.BRANCH_NAME).toBe("agent/run-1");
    expect(env.AGENT_DEADLINE_MS).toBe("1650000");
  });
});
