/**
 * What a request may cost at most, reserved against its Station's budget before it is forwarded
 * (docs/gateway.md#budgets-in-flight): its input at the model's input price, estimated from the
 * body's size, plus the most output it asks for at the output price. Pure.
 */
import type { PricedUsage } from "../core/pricing/estimate.js";
import { meteredRunUsage } from "../core/pricing/metered.js";
import type { GatewayVendor } from "./vendors.js";

/** Output tokens reserved when a request names no limit (codex and gemini often do not). */
export const DEFAULT_MAX_OUTPUT_TOKENS = 32_000;
/**
 * Bytes of request body per input token, rounded down so the estimate stays above the count the
 * provider will bill: JSON text of English and code is 3.5–4 bytes per token, its syntax more.
 */
export const BYTES_PER_INPUT_TOKEN = 3;

export interface RequestFacts {
  /** The model the body names (Gemini names it in the path). */
  model?: string;
  /** `max_tokens` (Anthropic), `max_output_tokens` (OpenAI), `generationConfig.maxOutputTokens` (Gemini). */
  maxOutputTokens?: number;
}

const positiveInt = (v: unknown) => (typeof v === "number" && Number.isInteger(v) && v > 0 ? v : undefined);

/** The body's model and output limit; nothing when it is not a JSON object. */
export function requestFacts(vendor: GatewayVendor, body: Buffer | undefined): RequestFacts {
  if (!body || body.byteLength === 0) return {};
  let parsed: Record<string, unknown>;
  try {
    const value = JSON.parse(body.toString("utf8")) as unknown;
    if (typeof value !== "object" || value === null || Array.isArray(value)) return {};
    parsed = value as Record<string, unknown>;
  } catch {
    return {};
  }
  const model = typeof parsed.model === "string" ? parsed.model : undefined;
  const limit =
    vendor === "anthropic"
      ? positiveInt(parsed.max_tokens)
      : vendor === "openai"
        ? positiveInt(parsed.max_output_tokens)
        : positiveInt((parsed.generationConfig as Record<string, unknown> | undefined)?.maxOutputTokens);
  return {
    ...(model !== undefined ? { model } : {}),
    ...(limit !== undefined ? { maxOutputTokens: limit } : {}),
  };
}

/** The most the request can cost, and how that was reckoned (said in a refusal). */
export function worstCaseUsd(
  vendor: GatewayVendor,
  model: string,
  bodyBytes: number,
  maxOutputTokens: number | undefined,
  at: number,
): { usd: number; why: string } {
  const input = Math.ceil(bodyBytes / BYTES_PER_INPUT_TOKEN);
  const output = maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
  const tokens = { inputTokens: input, outputTokens: output, cacheReadTokens: 0, cacheWriteTokens: 0 };
  const limit =
    maxOutputTokens === undefined ? `no output limit: ${output} reserved` : `output limit ${output}`;
  return {
    usd: callCostUsd(vendor, model, tokens, at),
    why: `about ${input} input tokens and ${limit}, at ${model}'s price`,
  };
}

/** What one answer cost at the gateway's built-in prices, as the controller prices a metered run. */
export function callCostUsd(vendor: GatewayVendor, model: string, usage: PricedUsage, at: number): number {
  const { inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, cacheWrite1hTokens } = usage;
  const entry = {
    model,
    inputTokens,
    outputTokens,
    cacheReadTokens,
    cacheWriteTokens,
    ...(cacheWrite1hTokens !== undefined ? { cacheWrite1hTokens } : {}),
  };
  return meteredRunUsage({ calls: 1, incompleteCalls: 0, models: [entry] }, { vendor, at }).costUsd ?? 0;
}
