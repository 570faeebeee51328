/**
 * Which batch API a model goes to. Delegates to the core's single routing function
 * (docs/templating-and-routing.md#routing) so the batch path can never drift from the CLI path.
 */
import { routeModel, VENDOR_CAPABILITIES } from "../core/cli/routing.js";
import type { BatchProviderName } from "./provider.js";

/**
 * The batch provider for a model id: Claude models and "" → anthropic, ids containing gemini →
 * gemini, gpt* / o1* / o3* / o4* / ids containing codex → openai. undefined for the exec model
 * and opencode models, which batch does not accept (the core rejects those with its own message).
 */
export function batchProviderForModel(model: string): BatchProviderName | undefined {
  return VENDOR_CAPABILITIES[routeModel(model)].batchProvider;
}
