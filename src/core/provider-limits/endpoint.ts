/**
 * Which model provider endpoint and key a run spends its provider's limits on
 * (docs/provider-limits.md#one-limit-per-endpoint-and-key): the provider's rate limits belong to an
 * organisation's key at one API, so two Stations whose runs resolve to the same base URL and the
 * same key share them, and two keys do not.
 *
 * A Job run is resolved from the env its `agent` container gets (run-endpoint.ts). The key itself
 * is never part of an id or a message: a Secret reference is named, a literal value only by a
 * short digest.
 */
import { createHash } from "node:crypto";
import type { V1EnvVar } from "@kubernetes/client-node";
import { type ModelApiFamily, modelApiFamilyOf } from "../cli/agent-clis.js";
import { routeModel } from "../cli/routing.js";

/** One provider endpoint and key: what a provider limit applies to. */
export interface ProviderEndpoint {
  /** Stable identity: provider, API, endpoint and key reference (never the key). */
  id: string;
  /** anthropic, openai or gemini; `unknown` for a run whose provider the controller cannot tell (exec). */
  provider: ModelApiFamily | "unknown";
  /** The base URL the run talks to, `batch API` for a batch run, or the Station for an unknown provider. */
  endpoint: string;
  /** Where the key comes from, e.g. `secret agent-secrets/anthropic-key`; `no key` when none is set. */
  key: string;
}

/** The providers' own endpoints, used when nothing points a run elsewhere. */
export const DEFAULT_ENDPOINTS: Readonly<Record<ModelApiFamily, string>> = {
  anthropic: "https://api.anthropic.com",
  openai: "https://api.openai.com/v1",
  gemini: "https://generativelanguage.googleapis.com",
};

/** Per provider: the variables its CLIs read for the base URL and the key, first found wins. */
const VARIABLES: Readonly<Record<ModelApiFamily, { baseUrl: string[]; key: string[] }>> = {
  anthropic: {
    baseUrl: ["ANTHROPIC_BASE_URL"],
    key: ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"],
  },
  openai: { baseUrl: ["OPENAI_BASE_URL"], key: ["CODEX_API_KEY", "OPENAI_API_KEY"] },
  gemini: {
    baseUrl: ["GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL"],
    key: ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"],
  },
};

/** Per batch provider: the agent-secrets entry its submit reads the key from. */
export const BATCH_KEY_NAME: Readonly<Record<ModelApiFamily, string>> = {
  anthropic: "ANTHROPIC_API_KEY",
  openai: "OPENAI_API_KEY",
  gemini: "GEMINI_API_KEY",
};

/**
 * The provider a model's CLI talks to (modelApiFamilyOf); an opencode provider other than the three
 * counts as Anthropic, opencode's default.
 */
export function providerOfModel(model: string): ModelApiFamily | undefined {
  return modelApiFamilyOf(model) ?? (routeModel(model) === "opencode" ? "anthropic" : undefined);
}

const digest = (value: string) => createHash("sha256").update(value).digest("hex").slice(0, 12);

/** Where an env entry's value comes from, without revealing a literal secret. */
function sourceOf(v: V1EnvVar, secret: boolean): string {
  const from = v.valueFrom;
  if (from?.secretKeyRef) return `secret ${from.secretKeyRef.name}/${from.secretKeyRef.key}`;
  if (from?.configMapKeyRef) return `configmap ${from.configMapKeyRef.name}/${from.configMapKeyRef.key}`;
  if (from?.fieldRef) return `field ${from.fieldRef.fieldPath}`;
  if (from) return "another source";
  const value = v.value ?? "";
  return secret ? `value sha256:${digest(value)}` : value.replace(/\/+$/, "");
}

function first(env: V1EnvVar[], names: string[]): V1EnvVar | undefined {
  for (const name of names) {
    const v = env.find((e) => e.name === name && (e.valueFrom !== undefined || (e.value ?? "") !== ""));
    if (v) return v;
  }
  return undefined;
}

/** An endpoint with its stable identity. */
export const withId = (e: Omit<ProviderEndpoint, "id">): ProviderEndpoint => ({
  id: `${e.provider} ${e.endpoint} ${e.key}`,
  ...e,
});

/** The endpoint and key of a Job run's CLI, read from its agent container's env. */
export function endpointFromEnv(provider: ModelApiFamily, env: V1EnvVar[]): ProviderEndpoint {
  const vars = VARIABLES[provider];
  const base = first(env, vars.baseUrl);
  const key = first(env, vars.key);
  const e = {
    provider,
    endpoint: base ? sourceOf(base, false) : DEFAULT_ENDPOINTS[provider],
    key: key ? sourceOf(key, true) : "no key",
  };
  return withId(e);
}

/** How a message names the endpoint, e.g. `anthropic at https://api.anthropic.com (key secret agent-secrets/k)`. */
export function describeEndpoint(e: ProviderEndpoint): string {
  if (e.provider === "unknown") return `the provider of ${e.endpoint}`;
  const where = e.endpoint === "batch API" ? "the batch API" : e.endpoint;
  return `${e.provider} at ${where} (${e.key === "no key" ? "no key set" : `key ${e.key}`})`;
}
