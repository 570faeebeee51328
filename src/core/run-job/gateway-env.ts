/**
 * The run pod's side of the model gateway (docs/gateway.md#run-credentials): with the gateway on,
 * every CLI's base URL is the gateway and its key variable holds the run's own credential, issued
 * for the vendor of the run's effective model; no provider key from a Secret may reach any
 * container of the pod. Without the gateway (AGENT_GATEWAY_URL unset) nothing here applies.
 */
import type { V1EnvVar, V1PodSpec } from "@kubernetes/client-node";
import { modelApiFamilyOf } from "../cli/agent-clis.js";
import { routeModel } from "../cli/routing.js";
import type { GatewaySettings } from "../input.js";
import type { Agent, AgentDefinition } from "../types.js";
import { claimsProblem, type GatewayVendor, issueRunCredential } from "./gateway-credential.js";
import { SECRET_NAME } from "./layout.js";

/**
 * Every variable a pinned CLI, or its setup in the run pod, reads a provider key or token from
 * (src/run-pod/supervisor/cli-setup/). With the gateway on, none of them comes from a Secret.
 */
export const PROVIDER_KEY_VARIABLES: ReadonlySet<string> = new Set([
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_AUTH_TOKEN",
  "CLAUDE_CODE_OAUTH_TOKEN",
  "OPENAI_API_KEY",
  "CODEX_API_KEY",
  "GEMINI_API_KEY",
  "GOOGLE_API_KEY",
  "GOOGLE_GENERATIVE_AI_API_KEY",
]);

/**
 * Per vendor, the key variables that carry the run credential: what claude (ANTHROPIC_API_KEY),
 * codex (CODEX_API_KEY; its setup copies OPENAI_API_KEY there), gemini (GEMINI_API_KEY) and
 * opencode (ANTHROPIC_API_KEY, OPENAI_API_KEY, GOOGLE_GENERATIVE_AI_API_KEY) send as their key.
 */
export const CREDENTIAL_VARIABLES: Readonly<Record<GatewayVendor, readonly string[]>> = {
  anthropic: ["ANTHROPIC_API_KEY"],
  openai: ["OPENAI_API_KEY", "CODEX_API_KEY"],
  gemini: ["GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"],
};

/**
 * The vendor whose API the run's effective model calls, the only one its credential allows;
 * undefined when the gateway serves none (exec, an opencode provider other than the three).
 */
export const gatewayVendorOf = (model: string): GatewayVendor | undefined => modelApiFamilyOf(model);

/**
 * The base URLs every CLI run gets with the gateway on, in the form each CLI's setup reads them
 * (docs/agent-clis.md): claude and opencode append `/v1/messages`-style paths to the origin, codex
 * and opencode's OpenAI client want `/v1` already there, gemini appends `/v1beta/…`. Gemini is held
 * to the Gemini API (not Vertex AI, which the gateway does not serve).
 */
export function gatewayBaseUrlEnv(url: string): V1EnvVar[] {
  return [
    { name: "ANTHROPIC_BASE_URL", value: url },
    { name: "OPENAI_BASE_URL", value: `${url}/v1` },
    { name: "GOOGLE_GEMINI_BASE_URL", value: url },
    { name: "GEMINI_BASE_URL", value: url },
    { name: "GOOGLE_GENAI_USE_VERTEXAI", value: "false" },
  ];
}

/** Why no credential can be issued for this Agent, or undefined (the uid and names are a run's). */
export function credentialProblem(agent: Agent, model: string): string | undefined {
  const vendor = gatewayVendorOf(model);
  if (vendor === undefined) return undefined;
  const problem = claimsProblem({
    namespace: agent.metadata.namespace ?? "",
    name: agent.metadata.name ?? "",
    uid: agent.metadata.uid ?? "",
    vendor,
  });
  return problem
    ? `cannot issue the model gateway's run credential: the Agent's ${problem} is not valid`
    : undefined;
}

/**
 * The agent container's gateway variables for a CLI run: the base URLs, then the run credential
 * in each key variable of the model's vendor. First in the container's env, so neither the
 * recipe's env nor the Station's nor the installation's base URLs can point the CLI elsewhere.
 * An exec run gets none: it runs no CLI.
 */
export function gatewayAgentEnv(gateway: GatewaySettings, agent: Agent, model: string): V1EnvVar[] {
  if (routeModel(model) === "exec") return [];
  const env = gatewayBaseUrlEnv(gateway.url);
  const vendor = gatewayVendorOf(model);
  if (vendor === undefined) return env;
  const credential = issueRunCredential(gateway.credentialKey, {
    namespace: agent.metadata.namespace ?? "",
    name: agent.metadata.name ?? "",
    uid: agent.metadata.uid ?? "",
    vendor,
  });
  return [...env, ...CREDENTIAL_VARIABLES[vendor].map((name) => ({ name, value: credential }))];
}

/**
 * The agent-secrets keys that hold a provider key: those the definition's provider-key entries
 * name, and the variables' own names (the seeds create agent-secrets with keys named so).
 */
function providerKeyRefs(def: AgentDefinition["spec"]): Set<string> {
  const refs = new Set(PROVIDER_KEY_VARIABLES);
  for (const s of def.resources?.secrets ?? []) if (PROVIDER_KEY_VARIABLES.has(s.name)) refs.add(s.ref);
  return refs;
}

/**
 * Where the built pod would hold a provider key from a Secret, or undefined when it would not: an
 * env entry of a provider-key variable from any Secret, any env entry from an agent-secrets key
 * that holds a provider key, an envFrom of agent-secrets (all its keys), or a volume projecting
 * agent-secrets' provider keys as files. Every container counts: the controller's, the Station's
 * sidecars and init containers. Checked on the built pod, so it judges what would be created.
 */
export function providerKeyInPod(spec: V1PodSpec, def: AgentDefinition["spec"]): string | undefined {
  const refs = providerKeyRefs(def);
  const heldKey = (secret: string, key: string) => secret === SECRET_NAME && refs.has(key);
  for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      if (!ref) continue;
      if (PROVIDER_KEY_VARIABLES.has(e.name) || heldKey(ref.name ?? "", ref.key)) {
        return `container "${c.name}" variable ${e.name} (Secret ${ref.name}, key ${ref.key})`;
      }
    }
    for (const f of c.envFrom ?? []) {
      if (f.secretRef?.name === SECRET_NAME) {
        return `container "${c.name}" envFrom Secret ${SECRET_NAME} (every key, the provider keys among them)`;
      }
    }
  }
  for (const v of spec.volumes ?? []) {
    const sources = [
      ...(v.secret ? [{ name: v.secret.secretName, items: v.secret.items }] : []),
      ...(v.projected?.sources ?? []).flatMap((s) =>
        s.secret ? [{ name: s.secret.name, items: s.secret.items }] : [],
      ),
    ];
    for (const s of sources) {
      if (s.name !== SECRET_NAME) continue;
      const keys = s.items?.map((i) => i.key);
      if (keys === undefined || keys.some((k) => refs.has(k))) {
        return `volume "${v.name}" (Secret ${SECRET_NAME}${keys ? `, keys ${keys.join(", ")}` : ", every key"})`;
      }
    }
  }
  return undefined;
}

/** The Agent's failure reason for a pod that would hold a provider key while the gateway is on. */
export function providerKeyRefusal(where: string): string {
  return `provider key in the run pod: ${where}; with the model gateway on, no run pod may hold a provider key (the gateway adds it; docs/gateway.md#run-credentials)`;
}
