/**
 * What a user copies must run: no example manifest, README or docs page names a model the price
 * table marks retired (src/core/pricing/prices.ts `retired`), since the provider refuses it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MODEL_PRICES } from "../../src/core/pricing/prices.js";

const ROOT = join(import.meta.dirname, "../..");
const retired = Object.entries(MODEL_PRICES)
  .filter(([, p]) => p.retired !== undefined)
  .map(([id]) => id);

/** The files a user copies from: the examples, the README, the docs (not the decisions log). */
function copiedFrom(): string[] {
  const examples = readdirSync(join(ROOT, "deploy/examples")).map((f) => join("deploy/examples", f));
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md") && f !== "decisions.md" && f !== "cost-and-budgets.md")
    .map((f) => join("docs", f));
  return ["README.md", ...examples, ...docs];
}

/** A model id as a whole word: `claude-sonnet-4-5` but not `claude-sonnet-4-5-foo`'s prefix. */
const mentions = (text: string, id: string) =>
  new RegExp(`(^|[^\\w.-])${id.replace(/\./g, "\\.")}(?![\\w.-])`).test(text);

describe("examples and docs name only models the providers still serve", () => {
  it("the table marks at least one retired model (the check below is not vacuous)", () => {
    expect(retired).toContain("claude-sonnet-4-5");
  });

  it.each(copiedFrom())("%s", (file) => {
    const text = readFileSync(join(ROOT, file), "utf8");
    expect(retired.filter((id) => mentions(text, id))).toEqual([]);
  });

  it("the whole-word match finds the id in a manifest line and not in a longer id", () => {
    expect(mentions("  model: claude-sonnet-4-5\n", "claude-sonnet-4-5")).toBe(true);
    expect(mentions("  model: claude-sonnet-4-5-20250929\n", "claude-sonnet-4-5")).toBe(false);
  });
});
