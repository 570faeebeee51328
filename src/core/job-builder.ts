/**
 * Builds the run's Job from the Station's pod template (docs/run-pod.md#the-job-and-its-pod-template, docs/agent-clis.md#compatibility, docs/supervisor.md#realtime-sessions). The Station
 * template is deep-copied and only the listed elements are changed; everything else (labels,
 * annotations, extra containers, nodeSelector, tolerations, …) is kept.
 */
import { createHash, createHmac } from "node:crypto";
import type {
  V1Container,
  V1EnvVar,
  V1Job,
  V1PodSpec,
  V1PodTemplateSpec,
  V1SecurityContext,
  V1Volume,
} from "@kubernetes/client-node";
import { AGENT_BASE_URL_SETTINGS, AGENT_CLIS, MODEL_API_FAMILIES } from "./agent-clis.js";
import { cliArgv, execCommand, mcpHeaderEnvName, SUPERVISOR_PATH } from "./argv.js";
import { deliveryBranch } from "./delivery-bounds.js";
import type { ControllerSettings } from "./input.js";
import { jobNameFor, shortenName } from "./names.js";
import { effectiveModel, routeModel } from "./routing.js";
import { RUN_VOLUME_NAMES, stationTemplateProblem, withoutNulls } from "./station-policy.js";
import { renderPrompt } from "./templating.js";
import type { Agent, AgentDefinition, Station } from "./types.js";

export const WORKSPACE_DIR = "/workspace";
export const AGENT_HOME = "/agent";
export const RUN_PATH = "/agent/.local/bin:/agent/.opencode/bin:/usr/local/bin:/usr/bin:/bin";
export const SECRET_NAME = "agent-secrets";
export const REALTIME_PORT = 8090;
export const COURIER_COMMAND = ["/usr/local/bin/ai-agent-courier"];
/** The agent container's first process: runs the supervisor as uid 1000 and records its result. */
export const WITNESS_PATH = "/agent/bin/ai-agent-witness";
/** Where the witness records the result (the `agent-result` volume), writable by root alone. */
export const AGENT_RESULT_DIR = "/run/ai-agent-result";
export const RESULT_VOLUME = "agent-result";
/** Where the courier talks to GitHub unless the controller says otherwise (GITHUB_API_URL / _SERVER_URL). */
export const DEFAULT_GITHUB_API_URL = "https://api.github.com";
export const DEFAULT_GITHUB_SERVER_URL = "https://github.com";

export const LABEL_COMPONENT = "agents.re-cinq.com/component";
export const LABEL_AGENT = "agents.re-cinq.com/agent";
export const LABEL_STATION = "agents.re-cinq.com/station";
export const LABEL_EXECUTION = "agents.re-cinq.com/execution";

/** Names the controller owns; a recipe entry with one of these names is dropped. */
export const RESERVED_ENV = new Set([
  "AGENT_SINKS",
  "AGENT_REPOS",
  "AGENT_SKILLS",
  "AGENT_SKILLS_SOURCE",
  "AGENT_CONVERSATION_SOURCE",
  "AGENT_CONVERSATION_ID",
  "AGENT_CONVERSATION_PIN",
  "AGENT_CONVERSATION_AUTH",
  "AGENT_SELECT",
  "AGENT_WATCH",
  "WORKSPACE_DIR",
  "AGENT_PARAMETERS",
  "TARGET_REPO",
  "BRANCH_NAME",
  "AGENT_MODEL",
  "AGENT_NAME",
  "STATION_NAME",
  "TASK_ID",
  "POD_NAME",
  "POD_NAMESPACE",
  "AGENT_DEADLINE_MS",
  "AGENT_DEADLINE_AT",
  "AGENT_TAIL_MS",
  "HOME",
  "PATH",
  "AGENT_FILES",
  "AGENT_EXECUTION",
  "AGENT_RESUME_SESSION",
  "AGENT_RECIPE",
  "AGENT_DISALLOWED_TOOLS",
  "AGENT_REALTIME_TOKEN_SHA256",
  "AGENT_DELIVERY",
  "DELIVERY_TOKEN",
  "AGENT_CLI_VERSION",
  "AGENT_RESULT_DIR",
]);

const VALID_ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export type JobBuildResult = { ok: true; job: V1Job } | { ok: false; reason: string };

/** Deadline in minutes, clamped to at least 1; default 30. */
export function deadlineMinutesOf(station: Station): number {
  return Math.max(1, Math.trunc(station.spec.deadlineMinutes ?? 30));
}

/** Time the supervisor keeps after the agent's deadline to report (stop, save, terminal event, drain). */
export const TAIL_MARGIN_MS = 30_000;
/** Time the courier keeps after that to deliver. */
export const COURIER_MARGIN_MS = 120_000;

/**
 * How a run's deadline is shared out (docs/run-pod.md#deadlines): the agent runs for `agentMs`,
 * then the supervisor has `tailMs` to report its result and, with delivery, the courier
 * `courierMs` to push, all inside the Job's `jobMs`. The margins are 30 s and 120 s; when they
 * would leave the agent less than half the Job's time, the agent gets half and the margins share
 * the other half in their 30 : 120 proportion (`shared`), so a short deadline is never shrunk to
 * nothing.
 */
export interface DeadlineBudget {
  jobMs: number;
  agentMs: number;
  tailMs: number;
  courierMs: number;
  shared: boolean;
}

export function deadlineBudget(deadlineMinutes: number, delivery: boolean): DeadlineBudget {
  const jobMs = deadlineMinutes * 60_000;
  const courierMargin = delivery ? COURIER_MARGIN_MS : 0;
  const margins = TAIL_MARGIN_MS + courierMargin;
  if (jobMs - margins >= jobMs / 2) {
    return {
      jobMs,
      agentMs: jobMs - margins,
      tailMs: TAIL_MARGIN_MS,
      courierMs: courierMargin,
      shared: false,
    };
  }
  const agentMs = Math.ceil(jobMs / 2);
  const tailMs = Math.floor(((jobMs - agentMs) * TAIL_MARGIN_MS) / margins);
  return { jobMs, agentMs, tailMs, courierMs: jobMs - agentMs - tailMs, shared: true };
}

/** AGENT_DEADLINE_MS: the agent's share of the Job's deadline (deadlineBudget). */
export function agentDeadlineMs(deadlineMinutes: number, delivery: boolean): number {
  return deadlineBudget(deadlineMinutes, delivery).agentMs;
}

/** The realtime run token (docs/decisions.md D-40): lowercase hex HMAC-SHA256 of the Agent uid under signing-key. */
export function realtimeRunToken(signingKey: string, agentUid: string): string {
  return createHmac("sha256", signingKey).update(agentUid).digest("hex");
}

/** Why the Station template cannot run, or undefined when it can (station-policy.ts). */
export function templateProblem(
  template: unknown,
  settings?: Pick<ControllerSettings, "runPodPolicy">,
): string | undefined {
  return stationTemplateProblem(template, settings?.runPodPolicy);
}

const secretEnv = (name: string, key: string): V1EnvVar => ({
  name,
  valueFrom: { secretKeyRef: { name: SECRET_NAME, key, optional: false } },
});
const fieldEnv = (name: string, path: string): V1EnvVar => ({
  name,
  valueFrom: { fieldRef: { fieldPath: path } },
});

/** An ordered env list where the first entry for a name wins. */
class EnvList {
  readonly vars: V1EnvVar[] = [];
  private readonly names = new Set<string>();
  add(v: V1EnvVar): void {
    if (this.names.has(v.name)) return;
    this.names.add(v.name);
    this.vars.push(v);
  }
  has(name: string): boolean {
    return this.names.has(name);
  }
}

interface RunContext {
  agent: Agent;
  station: Station;
  def: AgentDefinition["spec"];
  settings: ControllerSettings;
  realtime: boolean;
  model: string;
  prompt: string;
  /** When the Job is created (epoch ms, the controller's clock); the deadline counts from it. */
  createdAt?: number;
}

/** Env for one container kind (docs/run-pod.md#injected-environment). */
function buildEnv(ctx: RunContext, kind: "init" | "agent" | "courier"): V1EnvVar[] {
  const { agent, station, def, settings, realtime } = ctx;
  const env = new EnvList();
  const res = def.resources ?? {};
  const out = def.output ?? {};
  const delivery = def.delivery?.pullRequest;
  const sinks = (out.sinks ?? []).map((s) => ({
    ...s,
    ...(s.headers_secret !== undefined && RESERVED_ENV.has(s.headers_secret) ? { headers_secret: "" } : {}),
  }));
  const pod = kind !== "courier";
  // docs/decisions.md D-32: with delivery the agent cannot push, so clone tokens go to the init only; the courier
  // pushes with DELIVERY_TOKEN alone (docs/security.md, the courier).
  const repoTokens = kind === "init" || (kind === "agent" && !delivery);
  const secret = (name: string, key: string) => {
    if (!RESERVED_ENV.has(name)) env.add(secretEnv(name, key));
  };

  env.add({ name: "AGENT_SINKS", value: JSON.stringify(sinks) });
  // The courier delivers a declared clone, trusting the spec over a config the agent could rewrite.
  if (pod || delivery) env.add({ name: "AGENT_REPOS", value: JSON.stringify(res.repos ?? []) });
  for (const s of out.sinks ?? [])
    if (s.type === "http" && s.headers_secret) secret(s.headers_secret, s.headers_secret);
  if (pod) {
    for (const m of res.mcp_servers ?? []) {
      if (m.headers_secret) secret(mcpHeaderEnvName(m.headers_secret), m.headers_secret);
    }
    env.add({ name: "AGENT_SKILLS", value: JSON.stringify(res.skills ?? []) });
    env.add({ name: "AGENT_SKILLS_SOURCE", value: res.skills_source ?? "" });
    const conv = res.conversation ?? {};
    if (conv.headers_secret) secret(conv.headers_secret, conv.headers_secret);
    env.add({ name: "AGENT_CONVERSATION_AUTH", value: conv.headers_secret ?? "" });
    env.add({ name: "AGENT_CONVERSATION_SOURCE", value: conv.source ?? "" });
    env.add({ name: "AGENT_CONVERSATION_ID", value: conv.id ?? "" });
    env.add({ name: "AGENT_CONVERSATION_PIN", value: conv.pin ?? "" });
  }
  // The courier needs it too: it waits for the agent's result at most until this deadline (docs/decisions.md D-48).
  const budget = deadlineBudget(deadlineMinutesOf(station), !!delivery);
  env.add({ name: "AGENT_DEADLINE_MS", value: String(budget.agentMs) });
  if (kind !== "init") {
    // The Job's deadline counts from its creation, not from the supervisor's start: a slow
    // schedule, image pull or init must not eat the time left to report (docs/run-pod.md#deadlines).
    if (ctx.createdAt !== undefined) {
      env.add({ name: "AGENT_DEADLINE_AT", value: String(ctx.createdAt + budget.agentMs) });
    }
    env.add({ name: "AGENT_TAIL_MS", value: String(budget.tailMs) });
  }
  if (repoTokens) {
    for (const r of res.repos ?? []) {
      if (r.token_secret && VALID_ENV_NAME.test(r.token_secret)) secret(r.token_secret, r.token_secret);
    }
    const first = (res.repos ?? []).find((r) => r.token_secret);
    if (first?.token_secret) secret("GH_TOKEN", first.token_secret);
  }
  if (pod) {
    if (out.select?.length) env.add({ name: "AGENT_SELECT", value: JSON.stringify(out.select) });
    if (out.watch?.length) env.add({ name: "AGENT_WATCH", value: JSON.stringify(out.watch) });
  }
  env.add({ name: "WORKSPACE_DIR", value: WORKSPACE_DIR });
  const params = agent.spec.parameters ?? {};
  if (pod && Object.keys(params).length > 0)
    env.add({ name: "AGENT_PARAMETERS", value: JSON.stringify(params) });
  if (agent.spec.targetRepo) env.add({ name: "TARGET_REPO", value: agent.spec.targetRepo });
  const branch = delivery ? deliveryBranch(agent) : (agent.spec.branch ?? "");
  if (branch) env.add({ name: "BRANCH_NAME", value: branch });
  if (pod) env.add({ name: "AGENT_MODEL", value: ctx.model });
  env.add({ name: "AGENT_NAME", value: agent.metadata.name ?? "" });
  // The courier marks its commits with it, and rewrites only a branch whose tip carries it.
  if (delivery && kind === "courier") env.add({ name: "AGENT_UID", value: agent.metadata.uid ?? "" });
  env.add({ name: "STATION_NAME", value: station.metadata.name ?? "" });
  env.add({ name: "TASK_ID", value: agent.spec.taskId ?? "" });
  env.add(fieldEnv("POD_NAME", "metadata.name"));
  env.add(fieldEnv("POD_NAMESPACE", "metadata.namespace"));
  if (pod) {
    for (const e of res.env ?? []) if (!RESERVED_ENV.has(e.name)) env.add({ name: e.name, value: e.value });
    for (const s of res.secrets ?? []) secret(s.name, s.ref);
  }
  env.add({ name: "HOME", value: AGENT_HOME });
  env.add({ name: "PATH", value: RUN_PATH });
  if (kind === "init") {
    const files = agent.spec.files ?? [];
    if (files.length > 0) env.add({ name: "AGENT_FILES", value: JSON.stringify(files) });
    for (const f of files) if (f.headers_secret) secret(f.headers_secret, f.headers_secret);
  }
  if (kind === "agent") env.add({ name: "AGENT_EXECUTION", value: realtime ? "realtime" : "interactive" });
  if (kind !== "init") env.add({ name: "AGENT_RESULT_DIR", value: AGENT_RESULT_DIR });
  const vendor = routeModel(ctx.model);
  if (kind === "agent" && vendor !== "exec") {
    // The version the supervisor installs when the Station image lacks the CLI (docs/agent-clis.md).
    env.add({
      name: "AGENT_CLI_VERSION",
      value: settings.cliVersions?.[vendor] ?? AGENT_CLIS[vendor].version,
    });
  }
  const disallowed = ctx.def.disallowed_tools ?? [];
  if (kind === "agent" && vendor === "gemini" && disallowed.length > 0) {
    // gemini takes no deny list on its command line: its CLI setup turns this into policy rules
    // (docs/agent-clis.md).
    env.add({ name: "AGENT_DISALLOWED_TOOLS", value: JSON.stringify(disallowed) });
  }
  if (pod && realtime && agent.spec.resumeSession) {
    env.add({ name: "AGENT_RESUME_SESSION", value: agent.spec.resumeSession });
  }
  if (kind === "agent" && realtime) {
    env.add({ name: "AGENT_RECIPE", value: JSON.stringify(recipeOf(ctx)) });
    const token = realtimeRunToken(settings.realtimeSigningKey ?? "", agent.metadata.uid ?? "");
    env.add({ name: "AGENT_REALTIME_TOKEN_SHA256", value: createHash("sha256").update(token).digest("hex") });
  }
  if (kind === "courier" && delivery) {
    env.add({ name: "AGENT_DELIVERY", value: JSON.stringify(deliveryOf(ctx)) });
    if (delivery.tokenSecret) env.add(secretEnv("DELIVERY_TOKEN", delivery.tokenSecret));
    // The forge the courier pushes to and opens the PR on: GitHub, or a GitHub Enterprise server.
    env.add({ name: "GITHUB_API_URL", value: settings.githubApiUrl ?? DEFAULT_GITHUB_API_URL });
    env.add({ name: "GITHUB_SERVER_URL", value: settings.githubServerUrl ?? DEFAULT_GITHUB_SERVER_URL });
  }
  return env.vars;
}

/**
 * The installation's model API base URLs (AGENT_<API>_BASE_URL) as the variables the CLIs read,
 * for every CLI run: the lowest precedence, below the recipe's `resources.env` and the Station's
 * own env (docs/agent-clis.md).
 */
function installationCliEnv(ctx: RunContext, before: V1EnvVar[]): V1EnvVar[] {
  if (routeModel(ctx.model) === "exec") return [];
  const taken = new Set(before.map((e) => e.name));
  const out: V1EnvVar[] = [];
  for (const api of MODEL_API_FAMILIES) {
    const value = ctx.settings.agentBaseUrls?.[api];
    const name = AGENT_BASE_URL_SETTINGS[api].variable;
    if (value !== undefined && value !== "" && !taken.has(name)) out.push({ name, value });
  }
  return out;
}

/** The CLI-relevant definition fields a realtime supervisor needs to build each turn (docs/decisions.md D-41). */
function recipeOf(ctx: RunContext): Record<string, unknown> {
  const d = ctx.def;
  return {
    model: ctx.model,
    permission_mode: d.permission_mode ?? "auto",
    allowed_tools: d.allowed_tools ?? [],
    disallowed_tools: d.disallowed_tools ?? [],
    ...(d.max_turns !== undefined ? { max_turns: d.max_turns } : {}),
    mcp_servers: d.resources?.mcp_servers ?? [],
    ...(d.resources?.skills_source ? { skills_source: d.resources.skills_source } : {}),
    ...(d.tool_config ? { tool_config: d.tool_config } : {}),
    ...(d.output?.schema ? { output_schema: d.output.schema } : {}),
  };
}

/** Delivery settings for the courier (docs/decisions.md D-47); title and body are templated like the prompt. */
function deliveryOf(ctx: RunContext): Record<string, unknown> {
  const pr: Partial<NonNullable<NonNullable<AgentDefinition["spec"]["delivery"]>["pullRequest"]>> =
    ctx.def.delivery?.pullRequest ?? {};
  const params = ctx.agent.spec.parameters;
  return {
    ...(pr.repo ? { repo: pr.repo } : {}),
    ...(pr.base ? { base: pr.base } : {}),
    title: pr.title ? renderPrompt(pr.title, params) : (ctx.agent.metadata.name ?? ""),
    ...(pr.body ? { body: renderPrompt(pr.body, params) } : {}),
    draft: pr.draft ?? false,
  };
}

const DROP_ALL: V1SecurityContext["capabilities"] = { drop: ["ALL"] };
const RUNTIME_DEFAULT = { type: "RuntimeDefault" };

/**
 * The agent container starts as root with only what the witness needs: SETUID and SETGID to run
 * the supervisor (and so the CLI) as 1000:1000, KILL to forward signals to it. The supervisor and
 * the CLI get no capabilities (docs/security.md, the agent's result).
 */
function witnessSecurityContext(): V1SecurityContext {
  return {
    runAsNonRoot: false,
    runAsUser: 0,
    runAsGroup: 0,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ["ALL"], add: ["SETUID", "SETGID", "KILL"] },
    seccompProfile: RUNTIME_DEFAULT,
  };
}

/**
 * A container the Station adds: never root, no escalation, no capability, the runtime's seccomp
 * profile, whatever its securityContext says (docs/security.md#the-station-template-policy; the
 * policy refuses a template that asks for more, this holds for what it leaves unsaid).
 */
function stationContainer(c: V1Container): V1Container {
  return {
    ...c,
    securityContext: {
      ...c.securityContext,
      privileged: false,
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      capabilities: DROP_ALL,
      seccompProfile: RUNTIME_DEFAULT,
    },
  };
}

function agentSecurityContext(): V1SecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: 1000,
    runAsGroup: 1000,
    allowPrivilegeEscalation: false,
    capabilities: DROP_ALL,
    seccompProfile: RUNTIME_DEFAULT,
  };
}

/** The volumes the controller owns; a Station volume or mount of the same name is replaced. */
const RUN_VOLUMES = RUN_VOLUME_NAMES;

const RUN_MOUNTS = [
  { name: "agent", mountPath: AGENT_HOME },
  { name: "workspace", mountPath: WORKSPACE_DIR },
];

/**
 * Builds the Job for an interactive run, a realtime run or a batch fallback. Returns a failure
 * reason (`invalid Station template: …` / `invalid AgentDefinition: …`) instead of throwing.
 */
export function buildJob(
  agent: Agent,
  station: Station,
  definition: AgentDefinition,
  settings: ControllerSettings,
  mode: "interactive" | "realtime",
  /** When the Job is created (epoch ms); without it the supervisor counts from its own start. */
  createdAt?: number,
): JobBuildResult {
  // One copy, its nulls dropped, is both checked and built from: the API server reads a null as
  // absent, so checking the raw template could judge a different pod (station-template/normalize.ts).
  const template = withoutNulls(station.spec.template) as V1PodTemplateSpec;
  const problem = templateProblem(template, settings);
  if (problem) return { ok: false, reason: `invalid Station template: ${problem}` };
  const def = definition.spec;
  const model = effectiveModel(agent, definition);
  if (routeModel(model) === "exec" && !execCommand(def)) {
    return {
      ok: false,
      reason:
        "invalid AgentDefinition: tool_config.command must be a non-empty array of strings for the exec model",
    };
  }
  const realtime = mode === "realtime";
  const prompt = renderPrompt(def.prompt, agent.spec.parameters);
  const ctx: RunContext = {
    agent,
    station,
    def,
    settings,
    realtime,
    model,
    prompt,
    ...(createdAt !== undefined ? { createdAt } : {}),
  };

  const spec = template.spec as V1PodSpec;
  const agentName = agent.metadata.name ?? "";
  const stationName = station.metadata.name ?? "";
  const runLabels: Record<string, string> = {
    [LABEL_COMPONENT]: "job",
    [LABEL_AGENT]: shortenName(agentName),
    [LABEL_STATION]: shortenName(stationName),
    ...(realtime ? { [LABEL_EXECUTION]: "realtime" } : {}),
  };
  // The execution label is the controller's alone: a Station template cannot make an interactive
  // run look realtime to the prompt API or the realtime NetworkPolicy (docs/decisions.md D-107).
  const { [LABEL_EXECUTION]: _forged, ...templateLabels } = template.metadata?.labels ?? {};
  template.metadata = {
    ...template.metadata,
    labels: { ...templateLabels, ...runLabels },
    annotations: {
      ...template.metadata?.annotations,
      "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
    },
  };

  const supervisorArgs = realtime ? (agent.spec.resumeSession ? [] : [prompt]) : cliArgv(def, model, prompt);
  spec.containers = spec.containers.map((c): V1Container => {
    if (c.name !== "agent") return stationContainer(c);
    const controllerEnv = buildEnv(ctx, "agent");
    const taken = new Set(controllerEnv.map((e) => e.name));
    // docs/decisions.md D-21: the Station's own env stays, below the controller's and the recipe's.
    const stationEnv = (c.env ?? []).filter((e) => !taken.has(e.name) && !RESERVED_ENV.has(e.name));
    const { args: _dropped, ...rest } = c;
    const container: V1Container = {
      ...rest,
      command: [WITNESS_PATH, "--", SUPERVISOR_PATH, "--", ...supervisorArgs],
      env: [...controllerEnv, ...stationEnv, ...installationCliEnv(ctx, [...controllerEnv, ...stationEnv])],
      volumeMounts: [
        ...(c.volumeMounts ?? []).filter((m) => !RUN_VOLUMES.has(m.name)),
        ...RUN_MOUNTS,
        { name: RESULT_VOLUME, mountPath: AGENT_RESULT_DIR },
      ],
      securityContext: { ...c.securityContext, ...witnessSecurityContext() },
      resources:
        c.resources && Object.keys(c.resources).length > 0
          ? c.resources
          : { requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "2Gi" } },
      workingDir: c.workingDir || WORKSPACE_DIR,
    };
    if (realtime) {
      container.ports = [
        ...(c.ports ?? []).filter((p) => p.containerPort !== REALTIME_PORT),
        { name: "prompt", containerPort: REALTIME_PORT },
      ];
      // The supervisor fails /healthz the moment its session stops taking turns: a short period
      // and one failure take the pod out of the prompt API's forwarding quickly (supervisor.md).
      container.readinessProbe = {
        httpGet: { path: "/healthz", port: REALTIME_PORT },
        periodSeconds: 2,
        failureThreshold: 1,
      };
    }
    return container;
  });
  if (def.delivery?.pullRequest) {
    spec.containers.push({
      name: "courier",
      image: settings.agentImage,
      command: COURIER_COMMAND,
      env: buildEnv(ctx, "courier"),
      volumeMounts: [
        { name: "agent", mountPath: AGENT_HOME, readOnly: true },
        { name: "workspace", mountPath: WORKSPACE_DIR },
        { name: RESULT_VOLUME, mountPath: AGENT_RESULT_DIR, readOnly: true },
      ],
      securityContext: agentSecurityContext(),
      resources: { requests: { cpu: "50m", memory: "64Mi" }, limits: { memory: "512Mi" } },
    });
  }
  const init: V1Container = {
    name: "init",
    image: settings.agentImage,
    env: buildEnv(ctx, "init"),
    volumeMounts: RUN_MOUNTS.map((m) => ({ ...m })),
    securityContext: {
      runAsUser: 0,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"], add: ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID"] },
      seccompProfile: RUNTIME_DEFAULT,
    },
    resources: { requests: { cpu: "50m", memory: "128Mi" }, limits: { memory: "2Gi" } },
    terminationMessagePolicy: "FallbackToLogsOnError",
  };
  // docs/decisions.md D-21: the Station's own init containers run after the controller's.
  spec.initContainers = [init, ...(spec.initContainers ?? []).map(stationContainer)];
  const volumes: V1Volume[] = (spec.volumes ?? []).filter((v) => !RUN_VOLUMES.has(v.name));
  spec.volumes = [
    ...volumes,
    { name: "agent", emptyDir: {} },
    { name: "workspace", emptyDir: {} },
    { name: RESULT_VOLUME, emptyDir: {} },
  ];
  spec.restartPolicy = "Never";
  spec.securityContext = { fsGroup: 1000, seccompProfile: RUNTIME_DEFAULT };
  spec.automountServiceAccountToken = false;

  const job: V1Job = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: jobNameFor(agentName),
      namespace: agent.metadata.namespace ?? settings.namespace,
      labels: runLabels,
      ownerReferences: [
        {
          apiVersion: "agents.re-cinq.com/v1beta1",
          kind: "Agent",
          name: agentName,
          uid: agent.metadata.uid ?? "",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      ttlSecondsAfterFinished: 3600,
      activeDeadlineSeconds: deadlineMinutesOf(station) * 60,
      backoffLimit: 0,
      template,
    },
  };
  return { ok: true, job };
}
