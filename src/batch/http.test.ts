import { describe, expect, it } from "vitest";
import { describeErrorEnvelope, parseRetryAfter } from "./http.js";
import { BASE_URL_ENV, DEFAULT_BASE_URL, providerFor } from "./index.js";
import type { BatchProvider } from "./provider.js";

describe("parseRetryAfter", () => {
  const now = Date.parse("2026-10-01T10:00:00Z");
  it.each([
    { ms: null, value: "7", want: 7 },
    { ms: null, value: " 0 ", want: 0 },
    { ms: "1500", value: "7", want: 2 },
    { ms: null, value: "Thu, 01 Oct 2026 10:00:30 GMT", want: 30 },
    { ms: null, value: "Thu, 01 Oct 2026 09:00:00 GMT", want: 0 },
    { ms: null, value: "soon", want: undefined },
    { ms: null, value: null, want: undefined },
  ])("retry-after-ms=$ms retry-after=$value → $want", ({ ms, value, want }) => {
    expect(parseRetryAfter(ms, value, now)).toBe(want);
  });
});

describe("describeErrorEnvelope", () => {
  it.each([
    [
      { type: "error", error: { type: "rate_limit_error", message: "slow down" } },
      "rate_limit_error: slow down",
    ],
    [{ error: { code: 429, message: "quota", status: "RESOURCE_EXHAUSTED" } }, "RESOURCE_EXHAUSTED: quota"],
    [
      { error: { message: "No such File", type: "invalid_request_error", param: "id", code: null } },
      "invalid_request_error: No such File",
    ],
    [{ error: { message: "only a message" } }, "only a message"],
    ["not json", undefined],
    [{ detail: "other shape" }, undefined],
  ])("%j → %s", (body, want) => {
    expect(describeErrorEnvelope(body)).toBe(want);
  });
});

/** Every vendor client exposes the base URL it resolved. */
type WithBaseUrl = BatchProvider & { readonly baseUrl: string };

describe("providerFor", () => {
  it.each(["anthropic", "gemini", "openai"] as const)("%s: option, then env, then the real host", (name) => {
    const fromDefault = providerFor(name, { env: {} }) as WithBaseUrl;
    expect(fromDefault.name).toBe(name);
    expect(fromDefault.baseUrl).toBe(DEFAULT_BASE_URL[name]);
    const fromEnv = providerFor(name, {
      env: { [BASE_URL_ENV[name]]: "http://127.0.0.1:9/" },
    }) as WithBaseUrl;
    expect(fromEnv.baseUrl).toBe("http://127.0.0.1:9/");
    const fromOption = providerFor(name, {
      baseUrl: "http://127.0.0.1:8",
      env: { [BASE_URL_ENV[name]]: "http://127.0.0.1:9" },
    }) as WithBaseUrl;
    expect(fromOption.baseUrl).toBe("http://127.0.0.1:8");
  });

  it("names the bad provider", () => {
    expect(() => providerFor("azure" as never)).toThrow(
      'unknown batch provider "azure": expected anthropic, gemini or openai',
    );
  });

  it("uses the documented real hosts by default", () => {
    expect(DEFAULT_BASE_URL).toEqual({
      anthropic: "https://api.anthropic.com",
      gemini: "https://generativelanguage.googleapis.com",
      openai: "https://api.openai.com/v1",
    });
    expect(BASE_URL_ENV).toEqual({
      anthropic: "ANTHROPIC_BASE_URL",
      gemini: "GEMINI_BASE_URL",
      openai: "OPENAI_BASE_URL",
    });
  });
});
