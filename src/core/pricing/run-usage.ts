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

import { opencodeStepUsage } from "../cli/opencode-lines.js";
import type { Vendor } from "../cli/routing.js";
import { type JsonLine, parseJsonLine } from "../cli/vendors.js";
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
 * unpricedModels); unpriced: no longer written (runs recorded before every token was priced);
 * bounded: the run was charged the most it could have cost (src/core/pricing/run-bound.ts);
 * metered: priced from the model gateway's meter of the providers' own answers (./metered.ts).
 */
export type CostSource = "reported" | "estimated" | "unpriced" | "bounded" | "metered";

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

/** When and with which overrides a run is priced. */
interface Pricing {
  at?: number;
  prices: PriceTable;
}

/** The most model names a run's cost lists as unpriced (the CRD's maxItems), each at most 253 characters. */
export const MAX_UNPRICED_MODELS = 32;
const MODEL_NAME_MAX = 253;

/**
 * Running sums over a run's parts, each priced once as it arrives (so memory does not grow with
 * the lines). A reported figure is believed only up to what the reporting parts' tokens could cost
 * at the vendor's highest rates (docs/cost-and-budgets.md#a-bill-the-agent-cannot-inflate): the
 * agent prints those lines itself. Above it, every reported part is priced from its tokens
 * instead; both sums are kept, so the decision can wait for the last line.
 */
class PartSums {
  count = 0;
  private usage: TokenUsage = NO_TOKENS;
  private reported = 0;
  private reportingBound = 0;
  private reporting = false;
  private believedCost = 0;
  private refusedCost = 0;
  private estimatedIfBelieved = false;
  private estimatedIfRefused = false;
  private readonly unpriced = new Set<string>();
  private readonly ceiling: ReturnType<typeof vendorCeilingRates>;

  constructor(
    vendor: Vendor,
    private readonly batch: boolean,
    private readonly pricing: Pricing,
  ) {
    this.ceiling = vendorCeilingRates(vendor, pricing.prices);
  }

  add(p: Part): void {
    this.count += 1;
    this.usage = addUsage(this.usage, p.usage);
    const tokens = totalTokens(p.usage) > 0;
    if (p.reported !== undefined) {
      this.reporting = true;
      this.reported += p.reported;
      this.reportingBound += costAtRates(p.usage, this.ceiling);
      this.believedCost += p.reported;
      if (!tokens) return;
      // If the report is refused: priced from its tokens; a model the table does not price at the vendor's highest rates.
      this.refusedCost +=
        estimateCostUsd(p.model, p.usage, false, this.pricing.at, this.pricing.prices) ??
        costAtRates(p.usage, this.ceiling);
      this.estimatedIfRefused = true;
      return;
    }
    if (!tokens) return;
    let est = estimateCostUsd(p.model, p.usage, this.batch, this.pricing.at, this.pricing.prices);
    if (est === undefined) {
      // No price: the vendor's highest rates, never $0 under a budget.
      est = costAtRates(p.usage, this.ceiling) * (this.batch ? BATCH_DISCOUNT : 1);
      if (this.unpriced.size < MAX_UNPRICED_MODELS)
        this.unpriced.add((p.model || "default").slice(0, MODEL_NAME_MAX));
    }
    this.believedCost += est;
    this.refusedCost += est;
    this.estimatedIfBelieved = true;
    this.estimatedIfRefused = true;
  }

  result(): RunUsage | undefined {
    if (this.count === 0) return undefined;
    const refused =
      this.reporting && this.reported > this.reportingBound * REPORT_HEADROOM.factor + REPORT_HEADROOM.usd;
    const estimated = refused ? this.estimatedIfRefused : this.estimatedIfBelieved;
    return {
      usage: this.usage,
      costUsd: refused ? this.refusedCost : this.believedCost,
      costSource: estimated || this.batch ? "estimated" : "reported",
      ...(refused ? { rejectedReportUsd: this.reported } : {}),
      ...(this.unpriced.size > 0 ? { unpricedModels: [...this.unpriced].sort() } : {}),
    };
  }
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

/** How many streamed claude messages are held open at once (a message is printed once per content block). */
const OPEN_MESSAGES = 64;

/** One vendor's reading of the lines: each line once, in order, into running sums. */
interface VendorReader {
  line(line: JsonLine): void;
  result(): RunUsage | undefined;
}

/**
 * claude (and exec): result lines; failing any, the model responses it streamed (`assistant`
 * lines), one part per message id: claude prints a message once per content block with the same
 * usage, so the last line of an id counts, once. The last OPEN_MESSAGES ids are held open; an
 * older one is counted as it was last seen. For a run that printed no result line (it was killed,
 * or its result was hidden), so what it spent is still priced.
 */
class ClaudeReader implements VendorReader {
  private readonly results: PartSums;
  private readonly messages: PartSums;
  private readonly open = new Map<string, Part>();
  private prev: { cost: number; modelTokens: number } | undefined;
  private lastModel: string;
  private unnamed = 0;

  constructor(
    private readonly fallbackModel: string,
    private readonly batch: boolean,
    vendor: Vendor,
    pricing: Pricing,
  ) {
    this.results = new PartSums(vendor, batch, pricing);
    this.messages = new PartSums(vendor, batch, pricing);
    this.lastModel = fallbackModel;
  }

  line(line: JsonLine): void {
    if (line.type === "assistant") {
      this.message(line);
      return;
    }
    if (line.type === "system" && line.subtype === "init" && typeof line.model === "string")
      this.lastModel = line.model;
    if (line.type !== "result") return;
    if (!isObject(line.usage) && money(line.total_cost_usd) === undefined) return;
    const usage = anthropicUsage(line.usage);
    const models = isObject(line.modelUsage) ? Object.keys(line.modelUsage) : [];
    const model = models.length === 1 ? (models[0] as string) : this.lastModel;
    const cost = money(line.total_cost_usd);
    const modelTokens = modelUsageTokens(line.modelUsage);
    const since = this.batch ? undefined : sinceLastResult(line.model_usage_since_last_result);
    const prev = this.prev;
    if (since !== undefined) {
      for (const part of since) this.results.add(part);
    } else if (this.batch || cost === undefined) {
      // The batch lines' total_cost_usd has a narrower rule (docs/cost-and-budgets.md); the status prices all tokens.
      this.results.add({ usage, model });
    } else {
      const runningTotal =
        prev !== undefined &&
        modelTokens !== undefined &&
        modelTokens >= prev.modelTokens + totalTokens(usage) &&
        cost >= prev.cost;
      this.results.add({ usage, model, reported: runningTotal && prev ? cost - prev.cost : cost });
    }
    this.prev = cost !== undefined && modelTokens !== undefined ? { cost, modelTokens } : undefined;
  }

  private message(line: JsonLine): void {
    if (!isObject(line.message) || !isObject(line.message.usage)) return;
    const id = typeof line.message.id === "string" ? line.message.id : `#${this.unnamed++}`;
    const model = typeof line.message.model === "string" ? line.message.model : this.fallbackModel;
    this.open.delete(id);
    this.open.set(id, { model, usage: anthropicUsage(line.message.usage) });
    if (this.open.size > OPEN_MESSAGES) {
      const [oldest, part] = this.open.entries().next().value as [string, Part];
      this.open.delete(oldest);
      this.messages.add(part);
    }
  }

  result(): RunUsage | undefined {
    if (this.results.count > 0 || this.batch) return this.results.result();
    for (const part of this.open.values()) this.messages.add(part);
    this.open.clear();
    const u = this.messages.result();
    return u && { ...u, fromMessages: this.messages.count };
  }
}

interface CodexTotals {
  input: number;
  cached: number;
  write: number;
  output: number;
}

class CodexReader implements VendorReader {
  private thread = "";
  private prev: CodexTotals | undefined;

  constructor(
    private readonly model: string,
    private readonly sums: PartSums,
  ) {}

  line(line: JsonLine): void {
    if (line.type === "thread.started") {
      const id = typeof line.thread_id === "string" ? line.thread_id : "";
      if (id !== this.thread) this.prev = undefined;
      this.thread = id;
      return;
    }
    if (line.type !== "turn.completed" || !isObject(line.usage)) return;
    const u = line.usage;
    const now: CodexTotals = {
      input: count(u.input_tokens),
      cached: count(u.cached_input_tokens),
      write: count(u.cache_write_input_tokens),
      output: count(u.output_tokens),
    };
    const prev = this.prev;
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
    this.prev = now;
    this.sums.add({
      model: this.model,
      usage: {
        // input_tokens includes the cached part (docs/agent-clis.md#codex); output_tokens includes reasoning.
        inputTokens: Math.max(0, own.input - own.cached - own.write),
        outputTokens: own.output,
        cacheReadTokens: own.cached,
        cacheWriteTokens: own.write,
      },
    });
  }

  result = () => this.sums.result();
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

class GeminiReader implements VendorReader {
  constructor(
    private readonly fallbackModel: string,
    private readonly sums: PartSums,
  ) {}

  line(line: JsonLine): void {
    if (line.type !== "result" || !isObject(line.stats)) return;
    const models = isObject(line.stats.models) ? Object.entries(line.stats.models) : [];
    const own = models.filter((e): e is [string, Json] => isObject(e[1]));
    if (own.length > 0) for (const [model, s] of own) this.sums.add({ model, usage: geminiUsage(s) });
    else this.sums.add({ model: this.fallbackModel, usage: geminiUsage(line.stats) });
  }

  result = () => this.sums.result();
}

class OpencodeReader implements VendorReader {
  constructor(
    private readonly model: string,
    private readonly sums: PartSums,
  ) {}

  line(line: JsonLine): void {
    const step = opencodeStepUsage(line);
    if (step === undefined) return;
    const usage: TokenUsage = {
      inputTokens: step.inputTokens ?? 0,
      outputTokens: step.outputTokens ?? 0,
      cacheReadTokens: step.cacheReadTokens ?? 0,
      cacheWriteTokens: step.cacheWriteTokens ?? 0,
    };
    // A catalog without the model prices it 0 (docs/agent-clis.md, opencode): that is no price.
    const reported = step.cost !== undefined && step.cost > 0 ? step.cost : undefined;
    this.sums.add({ model: this.model, usage, ...(reported !== undefined ? { reported } : {}) });
  }

  result = () => this.sums.result();
}

/** What a run's lines are read and priced as: everything of RunUsageInput but the lines. */
export type RunUsagePlan = Omit<RunUsageInput, "lines">;

/**
 * A run's tokens and cost as its lines stream by (src/core/readback/log-meter.ts): each parsed line once,
 * O(1) work and memory per line, the figure at `result()`.
 */
export class RunUsageMeter {
  private readonly reader: VendorReader;

  constructor(plan: RunUsagePlan) {
    const batch = plan.execution === "batch";
    const pricing: Pricing = { prices: plan.prices ?? {}, ...(plan.at !== undefined ? { at: plan.at } : {}) };
    const sums = () => new PartSums(plan.vendor, batch, pricing);
    switch (plan.vendor) {
      case "claude":
      case "exec":
        this.reader = new ClaudeReader(plan.model, batch, plan.vendor, pricing);
        break;
      case "codex":
        this.reader = new CodexReader(plan.model, sums());
        break;
      case "gemini":
        this.reader = new GeminiReader(plan.model, sums());
        break;
      case "opencode":
        this.reader = new OpencodeReader(plan.model, sums());
        break;
    }
  }

  line(line: JsonLine): void {
    this.reader.line(line);
  }

  result(): RunUsage | undefined {
    return this.reader.result();
  }
}

/** The run's tokens and cost; undefined when its lines carry no usage at all. */
export function runUsage(input: RunUsageInput): RunUsage | undefined {
  const { lines, ...plan } = input;
  const meter = new RunUsageMeter(plan);
  for (const line of lines.split("\n")) {
    const parsed = parseJsonLine(line);
    if (parsed !== undefined) meter.line(parsed);
  }
  return meter.result();
}
