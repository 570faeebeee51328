import { createHash } from "node:crypto";
import type { V1Container, V1EnvVar, V1Job } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { agent, definition, input, station } from "../../test/support/core-builders.js";
import { AGENT_CLIS } from "./agent-clis.js";
import { cliArgv } from "./argv.js";
import type { ControllerSettings } from "./input.js";
import { buildJob, deadlineBudget, realtimeRunToken, templateProblem } from "./job-builder.js";
import type { AgentDefinitionSpec } from "./types.js";

// The installation lets Stations name the `runner` ServiceAccount (RUN_POD_SERVICE_ACCOUNTS).
const settings: ControllerSettings = {
  ...input().settings,
  runPodPolicy: { serviceAccounts: ["runner"], volumeKinds: [] },
};

function build(
  opts: {
    def?: Partial<AgentDefinitionSpec>;
    agentSpec?: Parameters<ReturnType<typeof agent>["spec"]>[0];
    stationSpec?: Parameters<ReturnType<typeof station>["spec"]>[0];
    mode?: "interactive" | "realtime";
    name?: string;
  } = {},
): V1Job {
  const r = buildJob(
    agent(opts.name ?? "run-1")
      .spec({ parameters: { ticket: "ENG-1" }, ...opts.agentSpec })
      .build(),
    station()
      .spec(opts.stationSpec ?? {})
      .build(),
    definition()
      .spec(opts.def ?? {})
      .build(),
    settings,
    opts.mode ?? "interactive",
  );
  if (!r.ok) throw new Error(r.reason);
  return r.job;
}
const podSpec = (job: V1Job) =>
  job.spec?.template.spec as NonNullable<V1Job["spec"]>["template"]["spec"] & object;
const container = (job: V1Job, name: string) =>
  [...(podSpec(job).initContainers ?? []), ...podSpec(job).containers].find(
    (c) => c.name === name,
  ) as V1Container;
const envOf = (c: V1Container) =>
  Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
const secretRef = (key: string) => ({ secretKeyRef: { name: "agent-secrets", key, optional: false } });

describe("Job object (docs/run-pod.md#the-job-and-its-pod-template)", () => {
  const job = build();
  it("names, labels and owns the Job", () => {
    expect(job.apiVersion).toBe("batch/v1");
    expect(job.kind).toBe("Job");
    expect(job.metadata).toEqual({
      name: "agent-job-run-1",
      namespace: "ai-agents",
      labels: {
        "agents.re-cinq.com/component": "job",
        "agents.re-cinq.com/agent": "run-1",
        "agents.re-cinq.com/station": "st",
      },
      ownerReferences: [
        {
          apiVersion: "agents.re-cinq.com/v1beta1",
          kind: "Agent",
          name: "run-1",
          uid: "uid-run-1",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    });
  });
  it.each([
    [undefined, 1800],
    [45, 2700],
    [0, 60],
  ])(
    "deadlineMinutes %j → activeDeadlineSeconds %d, ttl 3600, backoffLimit 0",
    (deadlineMinutes, seconds) => {
      const j = build({ stationSpec: deadlineMinutes === undefined ? {} : { deadlineMinutes } });
      expect(j.spec?.activeDeadlineSeconds).toBe(seconds);
      expect(j.spec?.ttlSecondsAfterFinished).toBe(3600);
      expect(j.spec?.backoffLimit).toBe(0);
    },
  );
  it("shortens long Agent names in the Job name and labels", () => {
    const long = "a".repeat(80);
    const j = build({ name: long });
    expect(j.metadata?.name).toMatch(/^agent-job-a{44}-[0-9a-f]{8}$/);
    expect(j.metadata?.labels?.["agents.re-cinq.com/agent"]).toMatch(/^a{54}-[0-9a-f]{8}$/);
  });
});

describe("pod template wiring (docs/run-pod.md#the-job-and-its-pod-template)", () => {
  const template = {
    metadata: {
      labels: { team: "x", "agents.re-cinq.com/component": "spoofed" },
      annotations: { note: "kept" },
    },
    spec: {
      nodeSelector: { pool: "agents" },
      tolerations: [{ key: "k", operator: "Exists" }],
      serviceAccountName: "runner",
      volumes: [
        { name: "cache", emptyDir: {} },
        { name: "workspace", configMap: { name: "evil" } },
      ],
      initContainers: [{ name: "station-init", image: "busybox" }],
      containers: [
        {
          name: "agent",
          image: "node:22",
          args: ["--dropped"],
          env: [
            { name: "STATION_VAR", value: "s" },
            { name: "HOME", value: "/root" },
            { name: "SHARED", value: "station" },
          ],
          volumeMounts: [
            { name: "cache", mountPath: "/cache" },
            { name: "workspace", mountPath: "/elsewhere" },
          ],
          resources: { limits: { memory: "4Gi" } },
          workingDir: "/src",
          securityContext: { readOnlyRootFilesystem: true, runAsUser: 0 },
        },
        { name: "sidecar", image: "proxy" },
      ],
    },
  };
  const job = build({
    stationSpec: { template },
    def: { resources: { env: [{ name: "SHARED", value: "recipe" }] } },
  });
  const pod = podSpec(job);
  const agentC = container(job, "agent");

  it("merges labels (controller wins) and annotations", () => {
    expect(job.spec?.template.metadata?.labels).toEqual({
      team: "x",
      "agents.re-cinq.com/component": "job",
      "agents.re-cinq.com/agent": "run-1",
      "agents.re-cinq.com/station": "st",
    });
    expect(job.spec?.template.metadata?.annotations).toEqual({
      note: "kept",
      "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
    });
  });
  it("keeps everything else of the Station's pod", () => {
    expect(pod.nodeSelector).toEqual({ pool: "agents" });
    expect(pod.tolerations).toEqual([{ key: "k", operator: "Exists" }]);
    expect(pod.serviceAccountName).toBe("runner");
    expect(pod.containers.map((c) => c.name)).toEqual(["agent", "sidecar"]);
    expect(container(job, "sidecar")).toEqual({
      name: "sidecar",
      image: "proxy",
      // docs/security.md#the-station-template-policy: a container the Station adds never runs as root.
      securityContext: {
        privileged: false,
        runAsNonRoot: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
        seccompProfile: { type: "RuntimeDefault" },
      },
    });
    expect(agentC.image).toBe("node:22");
    expect(agentC.resources).toEqual({ limits: { memory: "4Gi" } });
    expect(agentC.workingDir).toBe("/src");
  });
  it("replaces pod-level settings", () => {
    expect(pod.restartPolicy).toBe("Never");
    expect(pod.securityContext).toEqual({ fsGroup: 1000, seccompProfile: { type: "RuntimeDefault" } });
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.volumes).toEqual([
      { name: "cache", emptyDir: {} },
      { name: "agent", emptyDir: {} },
      { name: "workspace", emptyDir: {} },
      { name: "agent-result", emptyDir: {} },
    ]);
    expect(pod.initContainers?.map((c) => c.name)).toEqual(["init", "station-init"]);
  });
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

describe("rejected templates (docs/run-pod.md#the-job-and-its-pod-template, docs/decisions.md D-17)", () => {
  it.each([
    [{}, "spec.containers is missing"],
    [{ spec: { containers: [{ name: "main" }] } }, "no container named agent"],
    [{ spec: { hostNetwork: true, containers: [{ name: "agent" }] } }, "hostNetwork is not allowed"],
    [{ spec: { hostPID: true, containers: [{ name: "agent" }] } }, "hostPID is not allowed"],
    [{ spec: { hostIPC: true, containers: [{ name: "agent" }] } }, "hostIPC is not allowed"],
    [
      { spec: { volumes: [{ name: "h", hostPath: { path: "/" } }], containers: [{ name: "agent" }] } },
      "hostPath volume h is not allowed",
    ],
    [
      { spec: { containers: [{ name: "agent" }, { name: "side", securityContext: { privileged: true } }] } },
      "container side is privileged",
    ],
    [{ spec: { containers: [{ name: "agent" }] } }, undefined],
  ])("%j → %j", (template, want) => {
    expect(templateProblem(template)).toBe(want);
  });
  it("fails the build with the invalid Station template reason", () => {
    const r = buildJob(
      agent().build(),
      station()
        .spec({ template: { spec: { containers: [] } } })
        .build(),
      definition().build(),
      settings,
      "interactive",
    );
    expect(r).toEqual({ ok: false, reason: "invalid Station template: no container named agent" });
  });
  it("builds from the template with its nulls dropped: the pod the API server reads is the one checked", () => {
    const job = build({
      stationSpec: {
        template: {
          metadata: { labels: null },
          spec: {
            nodeName: null,
            volumes: [{ name: "cfg", emptyDir: null, configMap: { name: "c", items: null } }],
            containers: [
              { name: "agent", image: "x", env: null, volumeMounts: [{ name: "cfg", mountPath: "/cfg" }] },
            ],
          },
        },
      } as never,
    });
    expect(JSON.stringify(job)).not.toContain("null");
    expect(job.spec?.template.spec?.volumes?.[0]).toEqual({ name: "cfg", configMap: { name: "c" } });
    expect(job.spec?.template.spec).not.toHaveProperty("nodeName");
  });
  it("refuses a hostPath hidden behind a null first key", () => {
    const r = buildJob(
      agent().build(),
      station()
        .spec({
          template: {
            spec: {
              containers: [{ name: "agent", image: "x" }],
              volumes: [{ name: "host", emptyDir: null, hostPath: { path: "/" } }],
            },
          },
        } as never)
        .build(),
      definition().build(),
      settings,
      "interactive",
    );
    expect(r).toEqual({ ok: false, reason: "invalid Station template: hostPath volume host is not allowed" });
  });
  it("fails exec without tool_config.command", () => {
    const r = buildJob(
      agent().build(),
      station().build(),
      definition().spec({ model: "exec" }).build(),
      settings,
      "interactive",
    );
    expect(r).toEqual({
      ok: false,
      reason:
        "invalid AgentDefinition: tool_config.command must be a non-empty array of strings for the exec model",
    });
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

describe("the execution label is the controller's (docs/decisions.md D-107)", () => {
  const forged = {
    template: {
      metadata: { labels: { "agents.re-cinq.com/execution": "realtime", team: "a" } },
      spec: { containers: [{ name: "agent", image: "node:22-bookworm-slim" }] },
    },
  };
  it("a Station template's execution: realtime is removed from an interactive run's pods", () => {
    const job = build({ stationSpec: forged });
    expect(job.spec?.template.metadata?.labels).not.toHaveProperty("agents.re-cinq.com/execution");
    expect(job.metadata?.labels).not.toHaveProperty("agents.re-cinq.com/execution");
    expect(job.spec?.template.metadata?.labels?.team).toBe("a");
  });
  it("a realtime run still gets it", () => {
    const job = build({ stationSpec: forged, mode: "realtime", def: { execution: "realtime" } });
    expect(job.spec?.template.metadata?.labels?.["agents.re-cinq.com/execution"]).toBe("realtime");
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

describe("deadlines (docs/run-pod.md#deadlines)", () => {
  it.each([
    [30, false, { agentMs: 1_770_000, tailMs: 30_000, courierMs: 0, shared: false }],
    [30, true, { agentMs: 1_650_000, tailMs: 30_000, courierMs: 120_000, shared: false }],
    [1, false, { agentMs: 30_000, tailMs: 30_000, courierMs: 0, shared: false }],
    // The margins (150 s) would leave nothing: the agent gets half, the margins share the rest.
    [2, true, { agentMs: 60_000, tailMs: 12_000, courierMs: 48_000, shared: true }],
    [1, true, { agentMs: 30_000, tailMs: 6000, courierMs: 24_000, shared: true }],
  ] as const)("deadlineMinutes %s, delivery %s", (minutes, delivery, want) => {
    expect(deadlineBudget(minutes, delivery)).toEqual({ jobMs: minutes * 60_000, ...want });
  });

  it("every share is positive and they add up to the Job's deadline", () => {
    for (let minutes = 1; minutes <= 600; minutes++) {
      for (const delivery of [false, true]) {
        const b = deadlineBudget(minutes, delivery);
        expect(b.agentMs + b.tailMs + b.courierMs).toBe(b.jobMs);
        expect(b.agentMs).toBeGreaterThanOrEqual(b.jobMs / 2);
        expect(b.tailMs).toBeGreaterThan(0);
        if (delivery) expect(b.courierMs).toBeGreaterThan(0);
      }
    }
  });

  it("a 2-minute Station with delivery leaves a short run a minute, not 1 s", () => {
    const env = envOf(
      container(
        build({
          stationSpec: { deadlineMinutes: 2 },
          def: { delivery: { pullRequest: { tokenSecret: "forge-token" } } },
        }),
        "agent",
      ),
    );
    expect(env.AGENT_DEADLINE_MS).toBe("60000");
    expect(env.AGENT_TAIL_MS).toBe("12000");
  });

  it("given the creation time, the supervisor and the courier get the deadline on the Job's clock; the init does not", () => {
    const createdAt = Date.UTC(2026, 11, 2, 4, 0, 0);
    const built = buildJob(
      agent("run-1").build(),
      station().build(),
      definition()
        .spec({ delivery: { pullRequest: { tokenSecret: "forge-token" } } })
        .build(),
      settings,
      "interactive",
      createdAt,
    );
    if (!built.ok) throw new Error(built.reason);
    for (const name of ["agent", "courier"]) {
      expect(envOf(container(built.job, name)), name).toMatchObject({
        AGENT_DEADLINE_MS: "1650000",
        AGENT_DEADLINE_AT: String(createdAt + 1_650_000),
        AGENT_TAIL_MS: "30000",
      });
    }
    expect(envOf(container(built.job, "init")).AGENT_DEADLINE_AT).toBeUndefined();
  });
});
