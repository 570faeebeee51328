/**
 * The most a token can cost at a vendor: per token kind, the highest rate of any model the price
 * table lists for that vendor, long-prompt tiers included. It bounds a cost figure the run's own
 * lines report (docs/cost-and-budgets.md#a-bill-the-agent-cannot-inflate): the agent writes those
 * lines, so a figure above what its tokens could cost anywhere at that vendor is not believed.
 * Derived from the table, so it follows every model added to it. Pure.
 */
import { routeModel, type Vendor } from "../cli/routing.js";
import { MODEL_PRICES, type PriceTable, type Rates } from "./prices.js";

const kinds = ["input", "output", "cacheRead", "cacheWrite"] as const;

function maxRates(all: Rates[]): Rates {
  const out: Rates = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  let oneHour = 0;
  for (const rates of all) {
    for (const k of kinds) out[k] = Math.max(out[k], rates[k]);
    oneHour = Math.max(oneHour, rates.cacheWrite1h ?? rates.cacheWrite);
  }
  return { ...out, cacheWrite1h: Math.max(oneHour, out.cacheWrite) };
}

/** opencode runs any vendor's models, so its ceiling is the whole table's; exec prints claude's lines. */
function pricesOf(vendor: Vendor, overrides: PriceTable): Rates[] {
  const out: Rates[] = [];
  for (const [model, price] of [...Object.entries(MODEL_PRICES), ...Object.entries(overrides)]) {
    const own = routeModel(model);
    const matches = vendor === "opencode" || own === (vendor === "exec" ? "claude" : vendor);
    if (!matches) continue;
    out.push(price.rates);
    if (price.longPrompt) out.push(price.longPrompt.rates);
    for (const change of price.from ?? []) out.push(change.rates);
  }
  return out;
}

/** The installation's price overrides count too: a negotiated rate above the list is still believed. */
export function vendorCeilingRates(vendor: Vendor, overrides: PriceTable = {}): Rates {
  return maxRates(pricesOf(vendor, overrides));
}
