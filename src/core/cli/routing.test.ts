import { describe, expect, it } from "vitest";
import { agent, definition } from "../../../test/support/core-builders.js";
import { effectiveModel, routeModel } from "./routing.js";

describe("routeModel (docs/templating-and-routing.md#routing)", () => {
  it.each([
    ["", "claude"],
    ["claude-sonnet-4-6", "claude"],
    ["something-weird", "claude"],
    ["executive-model", "claude"],
    ["EXEC", "exec"],
    ["exec", "exec"],
    ["opencode", "opencode"],
    ["opencode/anthropic/claude-sonnet-4-6", "opencode"],
    ["opencode/openai/gpt-4.1", "opencode"],
    ["opencode/google/gemini-2.5-pro", "opencode"],
    ["gemini-3.1-flash-lite", "gemini"],
    ["Gemini-2.5-Pro", "gemini"],
    ["gpt-5-mini", "codex"],
    ["gpt-5-codex", "codex"],
    ["o1-preview", "codex"],
    ["o3-mini", "codex"],
    ["o4-mini", "codex"],
    ["acme-codex-ft", "codex"],
  ])("%j routes to %s", (model, vendor) => {
    expect(routeModel(model)).toBe(vendor);
  });
});

describe("effectiveModel (docs/templating-and-routing.md#routing)", () => {
  it.each([
    ["gemini-3.1-flash-lite", "claude-sonnet-4-6", "gemini-3.1-flash-lite"],
    ["", "claude-sonnet-4-6", "claude-sonnet-4-6"],
    [undefined, "gpt-5-mini", "gpt-5-mini"],
    [undefined, undefined, ""],
  ])("Agent %j over definition %j gives %j", (own, def, want) => {
    const a = agent()
      .spec(own === undefined ? {} : { model: own })
      .build();
    const d = definition()
      .spec(def === undefined ? {} : { model: def })
      .build();
    expect(effectiveModel(a, d)).toBe(want);
  });
});
