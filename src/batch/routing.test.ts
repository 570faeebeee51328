import { describe, expect, it } from "vitest";
import { batchProviderForModel } from "./routing.js";

describe("batchProviderForModel (docs/templating-and-routing.md#routing)", () => {
  it.each([
    ["", "anthropic"],
    ["claude-sonnet-4-6", "anthropic"],
    ["claude-opus-5-5", "anthropic"],
    ["something-weird", "anthropic"],
    ["executive-model", "anthropic"],
    ["gemini-3.1-flash-lite", "gemini"],
    ["Gemini-2.5-Pro", "gemini"],
    ["gpt-5-mini", "openai"],
    ["gpt-5-codex", "openai"],
    ["GPT-4.1", "openai"],
    ["o1-preview", "openai"],
    ["o3-mini", "openai"],
    ["o4-mini", "openai"],
    ["acme-codex-ft", "openai"],
    ["gemini-codex", "gemini"],
    ["exec", undefined],
    ["EXEC", undefined],
    ["opencode", undefined],
    ["opencode/openai/gpt-4.1", undefined],
    ["opencode/google/gemini-2.5-pro", undefined],
  ])("%j → %s", (model, provider) => {
    expect(batchProviderForModel(model)).toBe(provider);
  });
});
