/**
 * The env of each container the controller adds to a run's pod: init, agent and courier
 * (docs/run-pod.md#injected-environment). An ordered list where the first entry for a name wins:
 * the controller's own names, then the recipe's, then (for the agent) the Station's, then the
 * installation's base URLs. With the model gateway on, the agent's list starts with the gateway's
 * base URLs and the run credential (gateway-env.ts), and no provider key from the recipe's
 * secrets reaches any container; with its egress proxy too, every list starts with the proxy
 * variables and the container's own egress credential (egress-env.ts).
 */
import { createHash, createHmac } from "node:crypto";
import type { V1EnvVar } from "@kubernetes/client-node";
import { AGENT_BASE_URL_SETTINGS, AGENT_CLIS, MODEL_API_FAMILIES } from "../cli/agent-clis.js";
import { mcpHeaderEnvName } from "../cli/argv.js";
import { routeModel } from "../cli/routing.js";
import { renderPrompt } from "../cli/templating.js";
import type { ControllerSettings } from "../input.js";
import { deliveryBranch } from "../policy/delivery-bounds.js";
import type { Agent, AgentDefinition, Station } from "../types.js";
import { deadlineBudget, deadlineMinutesOf } from "./deadline.js";
import { egressEnv } from "./egress-env.js";
import { gatewayAgentEnv, PROVIDER_KEY_VARIABLES } from "./gateway-env.js";
import {
  AGENT_HOME,
  AGENT_RESULT_DIR,
  DEFAULT_GITHUB_API_URL,
  DEFAULT_GITHUB_SERVER_URL,
  RESERVED_ENV,
  RUN_PATH,
  SECRET_NAME,
  WORKSPACE_DIR,
} from "./layout.js";

const VALID_ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The realtime run token (docs/decisions.md D-40): lowercase hex HMAC-SHA256 of the Agent uid under signing-key. */
export function realtimeRunToken(signingKey: string, agentUid: string): string {
  return createHmac("sha256", signingKey).update(agentUid).digest("hex");
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

/** What one run's Job is built from. */
export interface RunContext {
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
export function buildEnv(ctx: RunContext, kind: "init" | "agent" | "courier"): V1EnvVar[] {
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

  // First of all, so nothing the recipe or the Station sets can point the container past the
  // gateway's egress proxy or replace its role's credential (docs/gateway.md#egress).
  if (settings.gateway?.egressProxyUrl) {
    for (const v of egressEnv(ctx, settings.gateway, kind)) env.add(v);
  }
  // Before every other name, so nothing the recipe, the Station or the installation sets can
  // point the CLI past the gateway or replace its credential (docs/gateway.md#run-credentials).
  if (kind === "agent" && settings.gateway) {
    for (const v of gatewayAgentEnv(settings.gateway, agent, ctx.model)) env.add(v);
  }
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
    for (const s of res.secrets ?? []) {
      // The gateway reads these entries itself; the pod must not hold them.
      if (settings.gateway && PROVIDER_KEY_VARIABLES.has(s.name)) continue;
      secret(s.name, s.ref);
    }
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
export function installationCliEnv(ctx: RunContext, before: V1EnvVar[]): V1EnvVar[] {
  // With the gateway on, the gateway is every CLI's base URL (buildEnv), whatever is configured here.
  if (routeModel(ctx.model) === "exec" || ctx.settings.gateway) return [];
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
