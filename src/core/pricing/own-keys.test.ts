/**
 * Model ids are the agent's (its log lines) and the author's (spec.model, price overrides): a table
 * lookup must read the table's own entries only. Every name Object.prototype carries is an
 * unknown model, never Object's function (docs/cost-and-budgets.md).
 */
import { describe, expect, it } from "vitest";
import { batchCostUsd } from "../../batch/pricing.js";
import { mcpConfigJson } from "../cli/argv.js";
import { estimateCostUsd, NO_TOKENS } from "./estimate.js";
import { parsePriceOverrides } from "./overrides.js";
import { priceFor } from "./prices.js";
import { runUsage } from "./run-usage.js";

const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype);
const M = 1_000_000;

describe("a model id named like a property of Object.prototype", () => {
  it("covers the names the attack used", () => {
    expect(PROTOTYPE_NAMES).toEqual(
      expect.arrayContaining(["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"]),
    );
  });

  it.each(PROTOTYPE_NAMES)(
    "%s has no price, bare or behind a provider prefix or a snapshot suffix",
    (name) => {
      for (const id of [name, `opencode/${name}`, `anthropic/${name}`, `${name}-20250101`, `${name}[1m]`]) {
        expect(priceFor(id), id).toBeUndefined();
        expect(estimateCostUsd(id, { ...NO_TOKENS, inputTokens: M, outputTokens: M }), id).toBeUndefined();
      }
    },
  );

  it.each(PROTOTYPE_NAMES)("%s is unknown to the batch seed's price table: 0", (name) => {
    expect(batchCostUsd(name, { input_tokens: M, output_tokens: M })).toBe(0);
  });

  it.each(PROTOTYPE_NAMES)(
    "%s in a claude result line: the run's usage is read, priced at the vendor ceiling",
    (name) => {
      const line = JSON.stringify({
        type: "result",
        subtype: "success",
        is_error: false,
        usage: { input_tokens: 1000, output_tokens: 1000 },
        modelUsage: { [name]: { inputTokens: 1000, outputTokens: 1000, costUSD: 0.01 } },
      });
      const read = () => runUsage({ vendor: "claude", execution: "interactive", model: name, lines: line });
      expect(read).not.toThrow();
      expect(read()?.usage.outputTokens).toBe(1000);
      expect(read()?.costUsd).toBeGreaterThan(0);
    },
  );

  it.each(PROTOTYPE_NAMES)("%s in a codex run: its tokens are read and its cost is not Object's", (name) => {
    const line = JSON.stringify({
      type: "turn.completed",
      usage: { input_tokens: 1000, cached_input_tokens: 0, output_tokens: 1000 },
    });
    const read = () => runUsage({ vendor: "codex", execution: "interactive", model: name, lines: line });
    expect(read).not.toThrow();
    expect(read()?.unpricedModels).toEqual([name]);
  });

  it.each(PROTOTYPE_NAMES)("%s as a price override prices that model and nothing else", (name) => {
    const { table, errors } = parsePriceOverrides(
      `prices:\n  - model: ${JSON.stringify(name)}\n    input: 1\n    output: 2\n`,
    );
    expect(errors).toEqual([]);
    expect(priceFor(name, table)?.rates.output).toBe(2);
    expect(Object.keys(table)).toEqual([name]);
    expect(priceFor("an-unknown-model", table)).toBeUndefined();
  });

  it("an MCP server named __proto__ is a server in claude's --mcp-config, not the object's prototype", () => {
    const json = mcpConfigJson([{ name: "__proto__", transport: "http", url: "https://mcp.example" }]);
    expect(Object.keys(JSON.parse(json).mcpServers)).toEqual(["__proto__"]);
  });
});
