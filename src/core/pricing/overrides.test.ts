import { describe, expect, it } from "vitest";
import { estimateCostUsd, NO_TOKENS } from "./estimate.js";
import { parsePriceOverrides } from "./overrides.js";
import { priceFor } from "./prices.js";
import { runUsage } from "./run-usage.js";

const M = 1_000_000;

describe("price overrides: good entries apply", () => {
  it.each([
    {
      name: "a new model with every rate",
      text: "prices:\n  - model: acme-coder-2\n    input: 3\n    output: 12\n    cacheRead: 0.3\n    cacheWrite: 3.75\n    cacheWrite1h: 6\n    source: contract 2026-11",
      model: "acme-coder-2",
      rates: { input: 3, output: 12, cacheRead: 0.3, cacheWrite: 3.75, cacheWrite1h: 6 },
    },
    {
      name: "cache rates default to the input rate",
      text: "prices:\n  - {model: gpt-6.1-sol, input: 6, output: 40}",
      model: "gpt-6.1-sol",
      rates: { input: 6, output: 40, cacheRead: 6, cacheWrite: 6, cacheWrite1h: 6 },
    },
    {
      name: "a negotiated rate for a built-in model",
      text: "prices:\n  - {model: gpt-5.5, input: 4, output: 24, cacheRead: 0.4}",
      model: "gpt-5.5",
      rates: { input: 4, output: 24, cacheRead: 0.4, cacheWrite: 4, cacheWrite1h: 4 },
    },
    {
      name: "zero is a price (a private deployment)",
      text: "prices:\n  - {model: local-llm, input: 0, output: 0}",
      model: "local-llm",
      rates: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 },
    },
  ])("$name", ({ text, model, rates }) => {
    const parsed = parsePriceOverrides(text);
    expect(parsed.errors).toEqual([]);
    expect(parsed.table[model]?.rates).toEqual(rates);
    // The override wins over the built-in table, for every id form of the model.
    expect(priceFor(model, parsed.table)?.rates).toEqual(rates);
    expect(priceFor(`${model}-2026-01-01`, parsed.table)?.rates).toEqual(rates);
  });

  it.each([undefined, "", "  \n", "# nothing yet\n"])("no overrides in %j", (text) => {
    expect(parsePriceOverrides(text)).toEqual({ table: {}, errors: [] });
  });
});

describe("price overrides: bad input refused, naming the field", () => {
  it.each([
    {
      text: "prices:\n  - {model: m, input: -1, output: 2}",
      field: "prices[0].input",
      message: /must not be negative, got -1/,
    },
    {
      text: "prices:\n  - {model: m, input: 1, output: 'two'}",
      field: "prices[0].output",
      message: /must be a number, got "two"/,
    },
    {
      text: "prices:\n  - {model: m, input: '1.5', output: 2}",
      field: "prices[0].input",
      message: /must be a number, got "1.5"/,
    },
    {
      text: "prices:\n  - {input: 1, output: 2}",
      field: "prices[0].model",
      message: /missing: every price names the model/,
    },
    {
      text: "prices:\n  - {model: '', input: 1, output: 2}",
      field: "prices[0].model",
      message: /must not be empty/,
    },
    { text: "prices:\n  - {model: m, input: 1}", field: "prices[0].output", message: /missing/ },
    {
      text: "prices:\n  - {model: m, input: 1, output: 2, cacheRaed: 1}",
      field: "prices[0].cacheRaed",
      message: /not a known field/,
    },
    {
      text: "prices:\n  - {model: m, input: 1, output: 2, cacheWrite: -0.5}",
      field: "prices[0].cacheWrite",
      message: /negative/,
    },
    {
      text: "prices:\n  - {model: m, input: 1e300, output: 2}",
      field: "prices[0].input",
      message: /at most/,
    },
    { text: "prices:\n  - {model: m, input: .nan, output: 2}", field: "prices[0].input", message: /./ },
    { text: "prices: {model: m}", field: "prices", message: /must be of type array/ },
    { text: "price:\n  - {model: m, input: 1, output: 2}", field: "price", message: /not a known field/ },
    { text: "prices: [\n", field: "prices.yaml", message: /not YAML/ },
  ])("$field: $message", ({ text, field, message }) => {
    const { errors } = parsePriceOverrides(text);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]?.field).toBe(field);
    expect(errors[0]?.message).toMatch(message);
  });

  it("one bad entry leaves the others applied and keeps the bad model's last good price", () => {
    const good = parsePriceOverrides(
      "prices:\n  - {model: a, input: 1, output: 2}\n  - {model: b, input: 3, output: 4}",
    ).table;
    const next = parsePriceOverrides(
      "prices:\n  - {model: a, input: -1, output: 2}\n  - {model: b, input: 5, output: 6}\n  - {model: c, input: 7, output: 8}",
      good,
    );
    expect(next.errors.map((e) => e.field)).toEqual(["prices[0].input"]);
    expect(next.table.a?.rates.input).toBe(1);
    expect(next.table.b?.rates.input).toBe(5);
    expect(next.table.c?.rates.input).toBe(7);
  });

  it("an unreadable document keeps the whole last good table", () => {
    const good = parsePriceOverrides("prices:\n  - {model: a, input: 1, output: 2}").table;
    for (const text of ["prices: [\n", "prices: 7", "- just a list"]) {
      const next = parsePriceOverrides(text, good);
      expect(next.errors.length, text).toBeGreaterThan(0);
      expect(next.table, text).toBe(good);
      expect(next.errors[0]?.message, text).toMatch(/the last good prices stay/);
    }
  });

  it("a model listed twice: the first applies, the second is refused", () => {
    const parsed = parsePriceOverrides(
      "prices:\n  - {model: a, input: 1, output: 2}\n  - {model: a, input: 9, output: 9}",
    );
    expect(parsed.table.a?.rates.input).toBe(1);
    expect(parsed.errors).toEqual([
      { field: "prices[1].model", message: '"a" is already priced by prices[0], which applies' },
    ]);
  });
});

describe("a run priced with the overrides", () => {
  it("prices a model the built-in table lacks at the override, not the vendor ceiling", () => {
    const { table } = parsePriceOverrides("prices:\n  - {model: gpt-6.1-sol, input: 6, output: 40}");
    const lines = JSON.stringify({
      type: "turn.completed",
      usage: { input_tokens: M, cached_input_tokens: 0, output_tokens: M },
    });
    const without = runUsage({ vendor: "codex", execution: "interactive", model: "gpt-6.1-sol", lines });
    const priced = runUsage({
      vendor: "codex",
      execution: "interactive",
      model: "gpt-6.1-sol",
      lines,
      prices: table,
    });
    expect(without?.unpricedModels).toEqual(["gpt-6.1-sol"]);
    expect(priced?.unpricedModels).toBeUndefined();
    expect(priced?.costUsd).toBeCloseTo(46, 9);
    expect(
      estimateCostUsd("gpt-6.1-sol", { ...NO_TOKENS, inputTokens: M }, true, undefined, table),
    ).toBeCloseTo(3, 9);
  });
});
