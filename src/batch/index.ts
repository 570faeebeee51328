/**
 * The batch providers' entry point: a factory that builds a vendor client from its name, with
 * the base URL from the options, else the vendor's environment variable, else the real host.
 */
import { ANTHROPIC_DEFAULT_BASE_URL, AnthropicBatchProvider } from "./anthropic.js";
import { GEMINI_DEFAULT_BASE_URL, GeminiBatchProvider } from "./gemini.js";
import type { ProviderClientOptions } from "./http.js";
import { OPENAI_DEFAULT_BASE_URL, OpenAIBatchProvider } from "./openai.js";
import type { BatchProvider, BatchProviderName } from "./provider.js";

export { batchCostUsd, PRICE_TABLE_DATE } from "./pricing.js";
export type { BatchProvider, BatchProviderName } from "./provider.js";
export { BatchProviderError } from "./provider.js";
export { batchProviderForModel } from "./routing.js";

export const BASE_URL_ENV: Readonly<Record<BatchProviderName, string>> = {
  anthropic: "ANTHROPIC_BASE_URL",
  gemini: "GEMINI_BASE_URL",
  openai: "OPENAI_BASE_URL",
};

export const DEFAULT_BASE_URL: Readonly<Record<BatchProviderName, string>> = {
  anthropic: ANTHROPIC_DEFAULT_BASE_URL,
  gemini: GEMINI_DEFAULT_BASE_URL,
  openai: OPENAI_DEFAULT_BASE_URL,
};

export interface ProviderFactoryOptions extends ProviderClientOptions {
  /** Where the *_BASE_URL variables are read from; defaults to process.env. */
  env?: Readonly<Record<string, string | undefined>>;
}

export function providerFor(name: BatchProviderName, options: ProviderFactoryOptions = {}): BatchProvider {
  const env = options.env ?? process.env;
  const fromEnv = env[BASE_URL_ENV[name]];
  const baseUrl =
    options.baseUrl ?? (fromEnv !== undefined && fromEnv !== "" ? fromEnv : DEFAULT_BASE_URL[name]);
  const clientOptions: ProviderClientOptions = { baseUrl, timeoutMs: options.timeoutMs };
  switch (name) {
    case "anthropic":
      return new AnthropicBatchProvider(clientOptions);
    case "gemini":
      return new GeminiBatchProvider(clientOptions);
    case "openai":
      return new OpenAIBatchProvider(clientOptions);
    default:
      throw new Error(`unknown batch provider ${JSON.stringify(name)}: expected anthropic, gemini or openai`);
  }
}
