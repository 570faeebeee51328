/**
 * Price overrides a platform team sets without a new image (docs/cost-and-budgets.md#price-overrides):
 * the `prices.yaml` key of the controller's ConfigMap, validated by schemas/config/price-overrides.yaml.
 * Pure: text in, a table and the refused entries out.
 *
 * One bad entry never stops counting: every entry is checked on its own, the good ones apply, a
 * refused one keeps the model's last good override (if it had one), and each refusal names its
 * field. A document that cannot be read at all keeps the whole last good table.
 */
import type { ErrorObject } from "ajv";
import { parse } from "yaml";
import type { PriceOverride, PriceOverrides } from "../../../generated/config/price-overrides.js";
import { validatePriceOverrides } from "../../../generated/config/price-overrides-validator.js";
import type { ModelPrice, PriceTable } from "./prices.js";

/** The ConfigMap key holding the overrides. */
export const PRICE_OVERRIDES_KEY = "prices.yaml";

export type { PriceTable };

export interface PriceOverrideError {
  /** The field, as a path into the document: `prices[2].input`. */
  field: string;
  message: string;
}

export interface ParsedPriceOverrides {
  table: PriceTable;
  errors: PriceOverrideError[];
}

const FIELDS = ["model", "input", "output", "cacheRead", "cacheWrite", "cacheWrite1h", "source"] as const;

/** `/prices/2/input` → `prices[2].input`. */
function fieldOf(path: string, missing?: string): string {
  const parts = path.split("/").filter((p) => p !== "");
  let out = PRICE_OVERRIDES_KEY;
  for (const p of parts)
    out = /^\d+$/.test(p) ? `${out}[${p}]` : out === PRICE_OVERRIDES_KEY ? p : `${out}.${p}`;
  if (missing !== undefined) out = out === PRICE_OVERRIDES_KEY ? missing : `${out}.${missing}`;
  return out;
}

const shown = (v: unknown): string => {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

function valueAt(doc: unknown, path: string): unknown {
  let v = doc;
  for (const p of path.split("/").filter((s) => s !== "")) {
    v = typeof v === "object" && v !== null ? (v as Record<string, unknown>)[p] : undefined;
  }
  return v;
}

function sentence(e: ErrorObject, doc: unknown): PriceOverrideError {
  const got = valueAt(doc, e.instancePath);
  switch (e.keyword) {
    case "required": {
      const missing = String(e.params.missingProperty);
      const why = missing === "model" ? "every price names the model it is for" : "it is required";
      return { field: fieldOf(e.instancePath, missing), message: `missing: ${why}` };
    }
    case "additionalProperties": {
      const extra = String(e.params.additionalProperty);
      const known = e.instancePath === "" ? "prices" : FIELDS.join(", ");
      return { field: fieldOf(e.instancePath, extra), message: `not a known field (known: ${known})` };
    }
    case "type":
      return {
        field: fieldOf(e.instancePath),
        message: `must be ${e.params.type === "number" ? "a number" : `of type ${e.params.type}`}, got ${shown(got)}`,
      };
    case "minimum":
      return { field: fieldOf(e.instancePath), message: `must not be negative, got ${shown(got)}` };
    case "maximum":
      return {
        field: fieldOf(e.instancePath),
        message: `must be at most ${e.params.limit} USD per million tokens, got ${shown(got)}`,
      };
    case "minLength":
      return {
        field: fieldOf(e.instancePath),
        message: "must not be empty: every price names the model it is for",
      };
    default:
      return { field: fieldOf(e.instancePath), message: `${e.message ?? "is not valid"}, got ${shown(got)}` };
  }
}

function toPrice(o: PriceOverride): ModelPrice {
  const cacheWrite = o.cacheWrite ?? o.input;
  return {
    rates: {
      input: o.input,
      output: o.output,
      cacheRead: o.cacheRead ?? o.input,
      cacheWrite,
      cacheWrite1h: o.cacheWrite1h ?? cacheWrite,
    },
    source: o.source ?? `price override (ConfigMap key ${PRICE_OVERRIDES_KEY})`,
    asOf: "override",
  };
}

/**
 * The overrides in `text` (the ConfigMap's `prices.yaml`; absent or empty: none), with `previous`
 * (the last good table) kept for what is refused.
 */
export function parsePriceOverrides(
  text: string | undefined,
  previous: PriceTable = {},
): ParsedPriceOverrides {
  if (text === undefined || text.trim() === "") return { table: {}, errors: [] };
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (error) {
    const message = `not YAML: ${(error as Error).message.split("\n")[0]}; the last good prices stay`;
    return { table: previous, errors: [{ field: PRICE_OVERRIDES_KEY, message }] };
  }
  if (doc === null || doc === undefined) return { table: {}, errors: [] };
  const valid = validatePriceOverrides(doc);
  const found = valid ? [] : (validatePriceOverrides.errors ?? []);
  const errors = found.map((e) => sentence(e, doc));
  const bad = new Set<number>();
  for (const e of found) {
    const m = /^\/prices\/(\d+)(\/|$)/.exec(e.instancePath);
    if (m === null) return { table: previous, errors: withKept(errors) };
    bad.add(Number(m[1]));
  }
  const entries = (doc as PriceOverrides).prices ?? [];
  errors.push(...duplicates(entries, bad));
  return { table: tableOf(entries, previous, bad), errors };
}

/** A model listed twice: the first entry applies, the later ones are refused. */
function duplicates(entries: PriceOverride[], bad: Set<number>): PriceOverrideError[] {
  const first = new Map<string, number>();
  const out: PriceOverrideError[] = [];
  entries.forEach((entry, i) => {
    if (bad.has(i)) return;
    const seen = first.get(entry.model);
    if (seen === undefined) first.set(entry.model, i);
    else
      out.push({
        field: `prices[${i}].model`,
        message: `${shown(entry.model)} is already priced by prices[${seen}], which applies`,
      });
  });
  return out;
}

function withKept(errors: PriceOverrideError[]): PriceOverrideError[] {
  return errors.map((e) => ({ ...e, message: `${e.message}; the last good prices stay` }));
}

function tableOf(entries: PriceOverride[], previous: PriceTable, bad: Set<number>): PriceTable {
  // No prototype: a model named `__proto__` or `constructor` is an entry like any other, and
  // lookups read own keys only (priceFor).
  const table: Record<string, ModelPrice> = Object.create(null);
  entries.forEach((entry, i) => {
    const model = typeof entry?.model === "string" && entry.model !== "" ? entry.model : undefined;
    if (model === undefined || Object.hasOwn(table, model)) return;
    if (bad.has(i)) {
      // A refused entry keeps the model's last good price, so an edit gone wrong never drops it.
      if (Object.hasOwn(previous, model)) table[model] = previous[model] as ModelPrice;
      return;
    }
    table[model] = toPrice(entry);
  });
  return table;
}
