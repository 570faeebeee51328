/**
 * A finished run's tokens and cost, read from its terminal lines (the pod log of a Job run, the
 * CLI-format lines of a batch run): what the controller writes to status.usage, status.costUSD
 * and status.costSource (docs/cost-and-budgets.md). Pure.
 *
 * Per vendor (docs/agent-clis.md, docs/cost-and-budgets.md):
 * - claude (and exec, which prints claude's lines): a `result` line with
 *   `model_usage_since_last_result` (claude 2.1.3xx) counts exactly that: each model's tokens and
 *   costUSD since the previous result of the process, side models included. Otherwise its `usage`
 *   covers its own query and `total_cost_usd` is reported; with several queries in one session (a
 *   realtime session resumes the session once per turn) `total_cost_usd` and `modelUsage` may be
 *   the session's running totals: when a line's `modelUsage` holds at least the previous line's
 *   tokens plus its own, its cost is the difference to the previous line, else the figure itself.
 * - codex: `turn.completed` usage is the thread's running total across `exec resume`, so a turn's
 *   own tokens are the difference to the previous turn of the same thread. No cost: estimated.
 * - gemini: each `result` line's `stats` cover the CLI process that printed it (one per turn),
 *   per model. No cost: estimated, per model.
 * - opencode: each `step_finish` reports its own tokens and cost; a step its catalog priced at 0
 *   (a model it does not know) is estimated.
 * - batch: the lines are the controller's own, so the cost is always estimated, at half price.
 */

import { opencodeStepUsage } from "../opencode-lines.js";
import type { Vendor } from "../routing.js";
import { type JsonLine, parseJsonLine } from "../vendors.js";
import {
  addUsage,
  BATCH_DISCOUNT,
  costAtRates,
  estimateCostUsd,
  NO_TOKENS,
  type PricedUsage,
  type TokenUsage,
  totalTokens,
} from "./estimate.js";
import type { PriceTable } from "./prices.js";
import { vendorCeilingRates } from "./vendor-ceiling.js";

/**
 * reported: every part of the figure is the vendor's own; estimated: at least one part was priced
 * from the price table (a model without a price at its vendor's highest rates, see
 * unpricedModels); unpriced: no longer written (runs recorded before every token was priced).
 */
export type CostSource = "reported" | "estimated" | "unpriced";

export interface RunUsage {
  usage: TokenUsage;
  /** Undefined only for runs recorded as unpriced before every token was priced. */
  costUsd?: number;
  costSource: CostSource;
  /**
   * The lines reported more than their tokens can cost at the vendor's highest known rates: the
   * figure they reported, not believed; costUsd is then priced from the tokens.
   */
  rejectedReportUsd?: number;
  /**
   * The run printed no result line with its usage: the tokens were summed from the model
   * responses it streamed (claude's `assistant` lines), and costUsd is an estimate from them.
   */
  fromMessages?: number;
  /**
   * Models the table has no price for: their tokens were priced at the vendor's highest known
   * rates (docs/cost-and-budgets.md#no-run-is-free), so a budget counts them.
   */
  unpricedModels?: string[];
}

/**
 * Headroom above the tokens' cost at the vendor's highest rates before a reported figure is
 * refused: a vendor's figure may include charges that are not tokens (claude's web searches), and
 * rates change before the table does. Per run, so many forged lines cannot each add it.
 */
export const REPORT_HEADROOM = { factor: 1.25, usd: 1 } as const;

export interface RunUsageInput {
  /** The vendor whose lines these are (for a batch run, the vendor its model routes to). */
  vendor: Vendor;
  execution: "interactive" | "realtime" | "batch";
  /** The run's effective model, for lines that do not name theirs. */
  model: string;
  /** The lines, newline-separated (the uncapped log). */
  lines: string;
  /**
   * The run's time (epoch ms), which decides rates that change on a date (gemini-3.8-flash);
   * without it the first rates apply.
   */
  at?: number;
  /** The installation's price overrides (src/core/pricing/overrides.ts). */
  prices?: PriceTable;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
/** A token count; capped at 2^53 - 1, so a forged count still serialises as a JSON integer. */
const count = (v: unknown): number =>
  typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.min(Math.floor(v), Number.MAX_SAFE_INTEGER) : 0;
const money = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined;

/** One priced part of a run (a query, a turn, a step, a model's share). */
interface Part {
  usage: PricedUsage;
  reported?: number;
  model: string;
  /** A refused report's part of a model without a price: its tokens at the vendor's highest rates. */
  ceilingUsd?: number;
}

/**
 * A reported figure is believed only up to what the reporting parts' tokens could cost at the
 * vendor's highest rates (docs/cost-and-budgets.md#a-bill-the-agent-cannot-inflate): the agent
 * prints those lines itself. Above it, every reported part is priced from its tokens instead.
 */
/** When and with which overrides a run is priced. */
interface Pricing {
  at?: number;
  prices: PriceTable;
}

function believed(parts: Part[], vendor: Vendor, p: Pricing): { parts: Part[]; rejectedUsd?: number } {
  const reporting = parts.filter((p) => p.reported !== undefined);
  if (reporting.length === 0) return { parts };
  const ceiling = vendorCeilingRates(vendor, p.prices);
  const reported = reporting.reduce((sum, p) => sum + (p.reported ?? 0), 0);
  const bound = reporting.reduce((sum, p) => sum + costAtRates(p.usage, ceiling), 0);
  if (reported <= bound * REPORT_HEADROOM.factor + REPORT_HEADROOM.usd) return { parts };
  const repriced = parts.map((part): Part => {
    if (part.reported === undefined) return part;
    // A model the table does not price is charged at the vendor's highest rates: never free.
    const fallback =
      estimateCostUsd(part.model, part.usage, false, p.at, p.prices) === undefined
        ? costAtRates(part.usage, ceiling)
        : undefined;
    return {
      usage: part.usage,
      model: part.model,
      ...(fallback !== undefined ? { ceilingUsd: fallback } : {}),
    };
  });
  return { parts: repriced, rejectedUsd: reported };
}

function summed(all: Part[], batch: boolean, vendor: Vendor, pricing: Pricing): RunUsage | undefined {
  if (all.length === 0) return undefined;
  const { parts, rejectedUsd } = believed(all, vendor, pricing);
  let usage = NO_TOKENS;
  let cost = 0;
  let estimated = false;
  const unpriced = new Set<string>();
  for (const p of parts) {
    usage = addUsage(usage, p.usage);
    if (p.reported !== undefined) {
      cost += p.reported;
      continue;
    }
    if (totalTokens(p.usage) === 0) continue;
    let est = p.ceilingUsd ?? estimateCostUsd(p.model, p.usage, batch, pricing.at, pricing.prices);
    if (est === undefined) {
      // No price: the vendor's highest rates, never $0 under a budget.
      est = costAtRates(p.usage, vendorCeilingRates(vendor, pricing.prices)) * (batch ? BATCH_DISCOUNT : 1);
      unpriced.add(p.model || "default");
    }
    cost += est;
    estimated = true;
  }
  const rejected = rejectedUsd !== undefined ? { rejectedReportUsd: rejectedUsd } : {};
  const noPrice = unpriced.size > 0 ? { unpricedModels: [...unpriced].sort() } : {};
  return {
    usage,
    costUsd: cost,
    costSource: estimated || batch ? "estimated" : "reported",
    ...rejected,
    ...noPrice,
  };
}

function jsonLines(text: string): JsonLine[] {
  const out: JsonLine[] = [];
  for (const line of text.split("\n")) {
    const parsed = parseJsonLine(line);
    if (parsed !== undefined) out.push(parsed);
  }
  return out;
}

/**
 * Anthropic usage; `cache_creation.ephemeral_1h_input_tokens` is the part of the cache writes made
 * to the one-hour cache (twice the input rate, the five-minute writes 1.25 times).
 */
function anthropicUsage(u: unknown): PricedUsage {
  const o = isObject(u) ? u : {};
  const oneHour = isObject(o.cache_creation) ? count(o.cache_creation.ephemeral_1h_input_tokens) : 0;
  return {
    inputTokens: count(o.input_tokens),
    outputTokens: count(o.output_tokens),
    cacheReadTokens: count(o.cache_read_input_tokens),
    cacheWriteTokens: count(o.cache_creation_input_tokens),
    ...(oneHour > 0 ? { cacheWrite1hTokens: oneHour } : {}),
  };
}

/** Tokens in a claude result's modelUsage (session running totals); undefined when absent. */
function modelUsageTokens(mu: unknown): number | undefined {
  if (!isObject(mu)) return undefined;
  let sum = 0;
  for (const m of Object.values(mu)) {
    if (!isObject(m)) continue;
    sum +=
      count(m.inputTokens) +
      count(m.outputTokens) +
      count(m.cacheReadInputTokens) +
      count(m.cacheCreationInputTokens);
  }
  return sum;
}

/** `model_usage_since_last_result`: one part per model, its own tokens and reported costUSD. */
function sinceLastResult(v: unknown): Part[] | undefined {
  if (!isObject(v)) return undefined;
  const parts: Part[] = [];
  for (const [model, m] of Object.entries(v)) {
    if (!isObject(m)) continue;
    const cost = money(m.costUSD);
    parts.push({
      model,
      usage: {
        inputTokens: count(m.inputTokens),
        outputTokens: count(m.outputTokens),
        cacheReadTokens: count(m.cacheReadInputTokens),
        cacheWriteTokens: count(m.cacheCreationInputTokens),
      },
      ...(cost !== undefined ? { reported: cost } : {}),
    });
  }
  return parts;
}

/**
 * Tokens of the model responses claude streamed (`assistant` lines), one part per message id:
 * claude prints a message once per content block with the same usage, so the last line of an
 * id counts, once. For a run that printed no result line (it was killed, or its result was
 * hidden), so what it spent is still priced.
 */
function claudeMessageParts(lines: JsonLine[], fallbackModel: string): Part[] {
  const byId = new Map<string, Part>();
  for (const line of lines) {
    if (line.type !== "assistant" || !isObject(line.message) || !isObject(line.message.usage)) continue;
    const id = typeof line.message.id === "string" ? line.message.id : `#${byId.size}`;
    const model = typeof line.message.model === "string" ? line.message.model : fallbackModel;
    byId.set(id, { model, usage: anthropicUsage(line.message.usage) });
  }
  return [...byId.values()];
}

function claudeParts(lines: JsonLine[], fallbackModel: string, batch: boolean): Part[] {
  const parts: Part[] = [];
  let prev: { cost: number; modelTokens: number } | undefined;
  let lastModel = fallbackModel;
  for (const line of lines) {
    if (line.type === "system" && line.subtype === "init" && typeof line.model === "string")
      lastModel = line.model;
    if (line.type !== "result") continue;
    if (!isObject(line.usage) && money(line.total_cost_usd) === undefined) continue;
    const usage = anthropicUsage(line.usage);
    const models = isObject(line.modelUsage) ? Object.keys(line.modelUsage) : [];
    const model = models.length === 1 ? (models[0] as string) : lastModel;
    const cost = money(line.total_cost_usd);
    const modelTokens = modelUsageTokens(line.modelUsage);
    const since = batch ? undefined : sinceLastResult(line.model_usage_since_last_result);
    if (since !== undefined) {
      parts.push(...since);
    } else if (batch || cost === undefined) {
      // The batch lines' total_cost_usd has a narrower rule (docs/cost-and-budgets.md); the status prices all tokens.
      parts.push({ usage, model });
    } else {
      const runningTotal =
        prev !== undefined &&
        modelTokens !== undefined &&
        modelTokens >= prev.modelTokens + totalTokens(usage) &&
        cost >= prev.cost;
      parts.push({ usage, model, reported: runningTotal && prev ? cost - prev.cost : cost });
    }
    prev = cost !== undefined && modelTokens !== undefined ? { cost, modelTokens } : undefined;
  }
  return parts;
}

interface CodexTotals {
  input: number;
  cached: number;
  write: number;
  output: number;
}

function codexParts(lines: JsonLine[], model: string): Part[] {
  const parts: Part[] = [];
  let thread = "";
  let prev: CodexTotals | undefined;
  for (const line of lines) {
    if (line.type === "thread.started") {
      const id = typeof line.thread_id === "string" ? line.thread_id : "";
      if (id !== thread) prev = undefined;
      thread = id;
      continue;
    }
    if (line.type !== "turn.completed" || !isObject(line.usage)) continue;
    const u = line.usage;
    const now: CodexTotals = {
      input: count(u.input_tokens),
      cached: count(u.cached_input_tokens),
      write: count(u.cache_write_input_tokens),
      output: count(u.output_tokens),
    };
    const grew =
      prev !== undefined &&
      now.input >= prev.input &&
      now.cached >= prev.cached &&
      now.write >= prev.write &&
      now.output >= prev.output;
    const own: CodexTotals =
      grew && prev
        ? {
            input: now.input - prev.input,
            cached: now.cached - prev.cached,
            write: now.write - prev.write,
            output: now.output - prev.output,
          }
        : now;
    prev = now;
    parts.push({
      model,
      usage: {
        // input_tokens includes the cached part (docs/agent-clis.md#codex); output_tokens includes reasoning.
        inputTokens: Math.max(0, own.input - own.cached - own.write),
        outputTokens: own.output,
        cacheReadTokens: own.cached,
        cacheWriteTokens: own.write,
      },
    });
  }
  return parts;
}

/** One gemini stats block (the run's, or one model's). */
function geminiUsage(s: Json): TokenUsage {
  const prompt = count(s.input_tokens);
  const cached = count(s.cached);
  const output = count(s.output_tokens);
  // total_tokens also counts thinking tokens, which Google bills as output; stats print no own field.
  const thoughts = Math.max(0, count(s.total_tokens) - prompt - output);
  return {
    inputTokens: typeof s.input === "number" ? count(s.input) : Math.max(0, prompt - cached),
    outputTokens: output + thoughts,
    cacheReadTokens: cached,
    cacheWriteTokens: 0,
  };
}

function geminiParts(lines: JsonLine[], fallbackModel: string): Part[] {
  const parts: Part[] = [];
  for (const line of lines) {
    if (line.type !== "result" || !isObject(line.stats)) continue;
    const models = isObject(line.stats.models) ? Object.entries(line.stats.models) : [];
    const own = models.filter((e): e is [string, Json] => isObject(e[1]));
    if (own.length > 0) for (const [model, s] of own) parts.push({ model, usage: geminiUsage(s) });
    else parts.push({ model: fallbackModel, usage: geminiUsage(line.stats) });
  }
  return parts;
}

function opencodeParts(lines: JsonLine[], model: string): Part[] {
  const parts: Part[] = [];
  for (const line of lines) {
    const step = opencodeStepUsage(line);
    if (step === undefined) continue;
    const usage: TokenUsage = {
      inputTokens: step.inputTokens ?? 0,
      outputTokens: step.outputTokens ?? 0,
      cacheReadTokens: step.cacheReadTokens ?? 0,
      cacheWriteTokens: step.cacheWriteTokens ?? 0,
    };
    // A catalog without the model prices it 0 (docs/agent-clis.md, opencode): that is no price.
    const reported = step.cost !== undefined && step.cost > 0 ? step.cost : undefined;
    parts.push({ model, usage, ...(reported !== undefined ? { reported } : {}) });
  }
  return parts;
}

/** The run's tokens and cost; undefined when its lines carry no usage at all. */
export function runUsage(input: RunUsageInput): RunUsage | undefined {
  const lines = jsonLines(input.lines);
  const batch = input.execution === "batch";
  const at: Pricing = { prices: input.prices ?? {}, ...(input.at !== undefined ? { at: input.at } : {}) };
  switch (input.vendor) {
    case "claude":
    case "exec": {
      const parts = claudeParts(lines, input.model, batch);
      if (parts.length > 0 || batch) return summed(parts, batch, input.vendor, at);
      const messages = claudeMessageParts(lines, input.model);
      const u = summed(messages, batch, input.vendor, at);
      return u && { ...u, fromMessages: messages.length };
    }
    case "codex":
      return summed(codexParts(lines, input.model), batch, input.vendor, at);
    case "gemini":
      return summed(geminiParts(lines, input.model), batch, input.vendor, at);
    case "opencode":
      return summed(opencodeParts(lines, input.model), batch, input.vendor, at);
  }
}
