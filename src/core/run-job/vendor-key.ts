/**
 * Which of a definition's `resources.secrets` entries holds the key for a vendor
 * (docs/gateway.md#provider-keys): the entry named for the vendor's first key variable that has
 * one (CREDENTIAL_VARIABLES' order: `OPENAI_API_KEY` before `CODEX_API_KEY`, `GEMINI_API_KEY`
 * before `GOOGLE_GENERATIVE_AI_API_KEY`). One rule for both sides: the gateway picks the key it
 * sends upstream by it, and the Job builder refuses a run for which it finds none, since the
 * gateway would refuse every call that run makes.
 */
import type { AgentDefinition } from "../types.js";
import type { GatewayVendor } from "./gateway-credential.js";
import { CREDENTIAL_VARIABLES, gatewayVendorOf } from "./gateway-env.js";

export type SecretEntry = { name: string; ref: string };

/** The definition's entry that names the vendor's key, or undefined when none does (or no spec). */
export function vendorKeyEntry(
  def: Pick<AgentDefinition["spec"], "resources"> | undefined,
  vendor: GatewayVendor,
): SecretEntry | undefined {
  const entries = def?.resources?.secrets ?? [];
  for (const variable of CREDENTIAL_VARIABLES[vendor]) {
    const entry = entries.find((e) => e.name === variable);
    if (entry !== undefined) return entry;
  }
  return undefined;
}

/**
 * Why `where` (`AgentDefinition <ns>/<name>`) names no key for the vendor: the words the
 * gateway's `403` and the controller's failure reason share.
 */
export function noVendorKeyEntry(where: string, vendor: GatewayVendor): string {
  return `${where} has no resources.secrets entry named ${CREDENTIAL_VARIABLES[vendor].join(" or ")}`;
}

/**
 * The failure reason for a run the gateway could never serve, or undefined: its effective model
 * calls a vendor the gateway serves and its definition names no key for that vendor. A model
 * without a gateway vendor (exec, another opencode provider) is not checked.
 */
export function vendorKeyProblem(
  definition: AgentDefinition,
  /** The Agent's, named when the definition's metadata has none (the two share a namespace). */
  namespace: string,
  model: string,
): string | undefined {
  const vendor = gatewayVendorOf(model);
  if (vendor === undefined || vendorKeyEntry(definition.spec, vendor) !== undefined) return undefined;
  const where = `AgentDefinition ${definition.metadata?.namespace ?? namespace}/${definition.metadata?.name ?? ""}`;
  // No model anywhere runs claude (../cli/routing.ts); say so rather than quote an empty name.
  const named = model === "" ? "the default model (none set)" : `model ${JSON.stringify(model)}`;
  return `model gateway: ${noVendorKeyEntry(where, vendor)} (the key for ${named}, vendor ${vendor}); the gateway would refuse every call of the run (docs/gateway.md#provider-keys)`;
}
