/**
 * The run pod's side of egress behind the model gateway (docs/gateway.md#egress): with the
 * gateway's egress proxy configured (GatewaySettings.egressProxyUrl), every container of the run
 * pod gets the proxy variables with its own role's egress credential, first in its env, so no
 * recipe, Station or installation variable can point it past the proxy. Without it nothing here
 * applies.
 */
import type { V1Container, V1EnvVar } from "@kubernetes/client-node";
import { routeModel } from "../cli/routing.js";
import {
  type EgressClaims,
  egressCredentialLength,
  issueEgressCredential,
  MAX_EGRESS_CREDENTIAL_LENGTH,
} from "../egress/credential.js";
import {
  allowHostsProblem,
  DEFAULT_NPM_REGISTRY,
  EGRESS_ROLES,
  type EgressInput,
  type EgressRole,
  egressDestinations,
} from "../egress/destinations.js";
import type { ControllerSettings, GatewaySettings } from "../input.js";
import type { Agent, AgentDefinition, Station } from "../types.js";
import { runRefProblem } from "./gateway-credential.js";
import { DEFAULT_GITHUB_API_URL, DEFAULT_GITHUB_SERVER_URL } from "./layout.js";

/** The variables that point a program at the proxy; in both cases, as tools read either. */
export const PROXY_VARIABLES = ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] as const;
export const NO_PROXY_VARIABLES = ["NO_PROXY", "no_proxy"] as const;
/** Every name egressEnv sets: a Station container's own entries of these are dropped. */
export const EGRESS_ENV_NAMES: ReadonlySet<string> = new Set([...PROXY_VARIABLES, ...NO_PROXY_VARIABLES]);

/** npm's registry settings, as the recipe or the Station may name them for the CLI install. */
const NPM_REGISTRY_VARIABLES = ["npm_config_registry", "NPM_CONFIG_REGISTRY"];

/** The parts of a run's context (env.ts's RunContext) its egress is computed from. */
export interface EgressContext {
  agent: Agent;
  station: Station;
  def: AgentDefinition["spec"];
  settings: ControllerSettings;
  /** The effective model: a CLI run may install its CLI from npm, an exec run does not. */
  model: string;
  /** A realtime session saves its conversation after each turn, pinned by its session id. */
  realtime?: boolean;
}

/** What the run's destinations are computed from: its spec's URLs and the controller's forge. */
export function egressInputOf(ctx: EgressContext): EgressInput {
  const { agent, def, station, settings } = ctx;
  const res = def.resources ?? {};
  const conv = res.conversation ?? {};
  const input: EgressInput = {
    fileUrls: (agent.spec.files ?? []).map((f) => f.url),
    repoUrls: (res.repos ?? []).map((r) => r.url ?? "").filter((u) => u !== ""),
    sinkUrls: (def.output?.sinks ?? []).flatMap((s) => (s.type === "http" && s.url ? [s.url] : [])),
    mcpUrls: (res.mcp_servers ?? []).flatMap((m) => (m.transport !== "stdio" && m.url ? [m.url] : [])),
    allowHosts: station.spec.egress?.allowHosts ?? [],
    githubApiUrl: settings.githubApiUrl ?? DEFAULT_GITHUB_API_URL,
    githubServerUrl: settings.githubServerUrl ?? DEFAULT_GITHUB_SERVER_URL,
  };
  if (res.skills_source) input.skillsSource = res.skills_source;
  if (conv.source) {
    input.conversationSource = conv.source;
    // The supervisor saves under the recipe's pin, and a realtime session under its session id
    // whatever the pin (src/run-pod/supervisor/realtime.ts): either way it reaches the store.
    if (conv.pin || ctx.realtime) input.conversationSave = conv.source;
  }
  // A CLI run's supervisor installs the CLI from npm when the Station image lacks it
  // (src/run-pod/supervisor/cli-install.ts): the registry the run's env names, else npm's own.
  if (routeModel(ctx.model) !== "exec") input.npmRegistry = npmRegistryOf(ctx) ?? DEFAULT_NPM_REGISTRY;
  return input;
}

function npmRegistryOf(ctx: EgressContext): string | undefined {
  const agentContainer = (
    ctx.station.spec.template as { spec?: { containers?: V1Container[] } }
  ).spec?.containers?.find((c) => c.name === "agent");
  // The recipe's env wins over the Station's (env.ts), so it is read first.
  const entries = [...(ctx.def.resources?.env ?? []), ...(agentContainer?.env ?? [])];
  return entries.find((e) => NPM_REGISTRY_VARIABLES.includes(e.name) && e.value)?.value;
}

function claimsFor(ctx: EgressContext, role: EgressRole): EgressClaims {
  const meta = ctx.agent.metadata;
  return {
    namespace: meta.namespace ?? "",
    name: meta.name ?? "",
    uid: meta.uid ?? "",
    role,
    destinations: egressDestinations(role, egressInputOf(ctx)),
  };
}

/**
 * Why no egress credential can be issued for this run, or undefined: an allowHosts entry that is
 * not one, an Agent whose names are not a run's, or a credential past its bound.
 */
export function egressProblem(ctx: EgressContext): string | undefined {
  const hosts = allowHostsProblem(ctx.station.spec.egress?.allowHosts ?? []);
  if (hosts) return `invalid Station egress: ${hosts}`;
  const meta = ctx.agent.metadata;
  const ref = runRefProblem({ namespace: meta.namespace ?? "", name: meta.name ?? "", uid: meta.uid ?? "" });
  if (ref) return `cannot issue the egress credential: the Agent's ${ref} is not valid`;
  for (const role of EGRESS_ROLES) {
    const length = egressCredentialLength(claimsFor(ctx, role));
    if (length > MAX_EGRESS_CREDENTIAL_LENGTH) {
      return `egress credential of the ${role} too long: ${length} characters, at most ${MAX_EGRESS_CREDENTIAL_LENGTH}; name fewer hosts in the Station's spec.egress.allowHosts or fewer URLs in the run (docs/gateway.md#egress)`;
    }
  }
  return undefined;
}

/**
 * The proxy variables of one role's container: HTTP(S)_PROXY in both cases as
 * `http://<role>:<credential>@<proxy host>:<port>`, and NO_PROXY (both cases) the gateway's model
 * API host, so the CLIs' model calls go to the gateway directly, and the pod's own loopback.
 */
export function egressEnv(ctx: EgressContext, gateway: GatewaySettings, role: EgressRole): V1EnvVar[] {
  if (!gateway.egressProxyUrl) return [];
  const proxy = new URL(gateway.egressProxyUrl);
  const credential = issueEgressCredential(gateway.credentialKey, claimsFor(ctx, role));
  const value = `http://${role}:${credential}@${proxy.hostname}:${proxy.port || "80"}`;
  const noProxy = `${new URL(gateway.url).hostname},localhost,127.0.0.1`;
  return [
    ...PROXY_VARIABLES.map((name) => ({ name, value })),
    ...NO_PROXY_VARIABLES.map((name) => ({ name, value: noProxy })),
  ];
}

/** A Station container (sidecar or init container) with the agent role's proxy variables first. */
export function withEgressEnv(c: V1Container, env: V1EnvVar[]): V1Container {
  if (env.length === 0) return c;
  return { ...c, env: [...env, ...(c.env ?? []).filter((e) => !EGRESS_ENV_NAMES.has(e.name))] };
}
