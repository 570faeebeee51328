/**
 * Model resolution and vendor routing (docs/templating-and-routing.md#routing). Every component that
 * needs to know "which CLI / which batch API" asks this one function so they cannot drift.
 */
import type { BatchProviderName } from "../batch-port.js";
import type { Agent, AgentDefinition } from "../types.js";

export type Vendor = "claude" | "codex" | "gemini" | "opencode" | "exec";

/** The batch request's model when neither the Agent nor the definition names one. */
export const DEFAULT_BATCH_MODEL = "claude-opus-5-5";

/** Agent.spec.model when non-empty, else the definition's, else "" (the CLI's own default). */
export function effectiveModel(agent: Agent, definition: AgentDefinition | undefined): string {
  const own = agent.spec.model ?? "";
  if (own !== "") return own;
  return definition?.spec.model ?? "";
}

/** First matching rule wins; the model is compared lower-cased. */
export function routeModel(model: string): Vendor {
  const m = model.toLowerCase();
  if (m === "exec") return "exec";
  if (m.includes("opencode")) return "opencode";
  if (m.includes("gemini")) return "gemini";
  if (m.includes("codex") || /^(gpt|o1|o3|o4)/.test(m)) return "codex";
  return "claude";
}

export interface VendorCapabilities {
  /** The batch API this vendor's models go to; undefined when batch rejects the vendor. */
  batchProvider?: BatchProviderName;
  /** The resources.secrets entry name batch reads the API key from. */
  batchKeySecretName?: string;
  /** Can continue a saved conversation (resumeSession). */
  canResume: boolean;
  /** Can serve a multi-turn realtime session (docs/decisions.md D-11). */
  canRealtime: boolean;
}

export const VENDOR_CAPABILITIES: Readonly<Record<Vendor, VendorCapabilities>> = {
  claude: {
    batchProvider: "anthropic",
    batchKeySecretName: "ANTHROPIC_API_KEY",
    canResume: true,
    canRealtime: true,
  },
  codex: {
    batchProvider: "openai",
    batchKeySecretName: "OPENAI_API_KEY",
    canResume: true,
    canRealtime: true,
  },
  gemini: {
    batchProvider: "gemini",
    batchKeySecretName: "GEMINI_API_KEY",
    canResume: true,
    canRealtime: true,
  },
  opencode: { canResume: false, canRealtime: false },
  exec: { canResume: false, canRealtime: false },
};
