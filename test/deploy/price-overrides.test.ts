/** The shipped price-override ConfigMap parses (docs/cost-and-budgets.md#price-overrides), and so does its commented example. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { PRICE_OVERRIDES_CONFIGMAP } from "../../src/controller/price-overrides.js";
import { PRICE_OVERRIDES_KEY, parsePriceOverrides } from "../../src/core/pricing/overrides.js";

const file = join(import.meta.dirname, "../../deploy/base/price-overrides.yaml");
const cm = parse(readFileSync(file, "utf8")) as { metadata: { name: string }; data: Record<string, string> };

describe("deploy/base/price-overrides.yaml", () => {
  it("is the ConfigMap the controller reads, with no overrides and no errors", () => {
    expect(cm.metadata.name).toBe(PRICE_OVERRIDES_CONFIGMAP);
    expect(parsePriceOverrides(cm.data[PRICE_OVERRIDES_KEY])).toEqual({ table: {}, errors: [] });
  });

  it("its commented example, uncommented, is a valid override", () => {
    const example = (cm.data[PRICE_OVERRIDES_KEY] ?? "")
      .split("\n")
      .filter((l) => l.startsWith("# "))
      .map((l) => l.slice(2))
      .join("\n");
    const parsed = parsePriceOverrides(example);
    expect(parsed.errors).toEqual([]);
    expect(parsed.table["my-private-model"]?.rates).toMatchObject({ input: 1.5, output: 6, cacheRead: 0.15 });
  });
});
