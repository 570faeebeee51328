import { describe, expect, it } from "vitest";
import { forwardedQuery, matchTarget } from "./routes.js";

describe("the native routes (docs/gateway.md#routes)", () => {
  it.each([
    ["POST", "/v1/messages?beta=true", "messages", ["anthropic"], "/v1/messages", "?beta=true"],
    [
      "POST",
      "/v1/messages/count_tokens?beta=true",
      "count_tokens",
      ["anthropic"],
      "/v1/messages/count_tokens",
      "?beta=true",
    ],
    ["POST", "/v1/responses", "responses", ["openai"], "/v1/responses", ""],
    ["GET", "/v1/models", "models", ["anthropic", "openai"], "/v1/models", ""],
    [
      "GET",
      "/v1/models/claude-sonnet-4-6",
      "model",
      ["anthropic", "openai"],
      "/v1/models/claude-sonnet-4-6",
      "",
    ],
    [
      "POST",
      "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
      "stream_generate_content",
      ["gemini"],
      "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
      "?alt=sse",
    ],
    [
      "POST",
      "/v1beta/models/gemini-2.5-flash:generateContent",
      "generate_content",
      ["gemini"],
      "/v1beta/models/gemini-2.5-flash:generateContent",
      "",
    ],
    [
      "POST",
      "/v1beta/models/gemini-2.5-flash:countTokens",
      "count_tokens",
      ["gemini"],
      "/v1beta/models/gemini-2.5-flash:countTokens",
      "",
    ],
    ["GET", "/v1beta/models", "models", ["gemini"], "/v1beta/models", ""],
  ])("%s %s is %s of %j", (method, target, name, vendors, path, query) => {
    const match = matchTarget(method, target);
    expect(match.ok).toBe(true);
    if (!match.ok) return;
    expect(match.target.route.name).toBe(name);
    expect(match.target.route.vendors).toEqual(vendors);
    expect(match.target.path).toBe(path);
    expect(match.target.query).toBe(query);
  });

  it("only model calls are metered", () => {
    const metered = (m: string, t: string) => {
      const r = matchTarget(m, t);
      return r.ok && r.target.route.metered;
    };
    expect(metered("POST", "/v1/messages")).toBe(true);
    expect(metered("POST", "/v1/responses")).toBe(true);
    expect(metered("POST", "/v1beta/models/g:streamGenerateContent")).toBe(true);
    expect(metered("POST", "/v1beta/models/g:generateContent")).toBe(true);
    expect(metered("POST", "/v1/messages/count_tokens")).toBe(false);
    expect(metered("POST", "/v1beta/models/g:countTokens")).toBe(false);
    expect(metered("GET", "/v1/models")).toBe(false);
  });
});

describe("targets that could reach another host or path are refused (docs/gateway.md#what-reaches-upstream)", () => {
  it.each([
    ["an absolute URL", "POST", "http://evil.example/v1/messages", "bad-request"],
    ["an https absolute URL", "POST", "https://evil.example:443/v1/messages", "bad-request"],
    ["a network-path reference", "POST", "//evil.example/v1/messages", "bad-request"],
    ["an authority-form target", "POST", "evil.example:443", "bad-request"],
    ["dot segments", "POST", "/v1/x/../messages", "not-found"],
    ["encoded dot segments", "POST", "/v1/%2e%2e/v1/messages", "not-found"],
    ["an encoded slash in a model", "POST", "/v1beta/models/a%2F..%2F..%2Fx:generateContent", "not-found"],
    ["a backslash", "POST", "/v1\\messages", "not-found"],
    ["a dot model", "POST", "/v1beta/models/..:generateContent", "not-found"],
    ["a path after the route", "POST", "/v1/messages/../../admin", "not-found"],
    ["a trailing slash", "POST", "/v1/messages/", "not-found"],
    ["a wrong method", "DELETE", "/v1/messages", "not-found"],
    ["another API of the vendor", "POST", "/v1/chat/completions", "not-found"],
    ["the batch API", "POST", "/v1/messages/batches", "not-found"],
    ["a file API", "GET", "/v1/files", "not-found"],
  ])("%s: %s %s", (_what, method, target, kind) => {
    const match = matchTarget(method, target);
    expect(match.ok).toBe(false);
    if (!match.ok) expect(match.kind).toBe(kind);
  });

  it("a WebSocket upgrade is refused with 426 and says to stream over HTTP", () => {
    const match = matchTarget("GET", "/v1/responses", true);
    expect(match).toMatchObject({ ok: false, kind: "upgrade-required" });
    if (!match.ok) expect(match.message).toContain("supports_websockets = false");
  });
});

describe("the forwarded query", () => {
  it.each([
    ["", ""],
    ["beta=true", "?beta=true"],
    ["alt=sse&key=secret", "?alt=sse"],
    ["key=a&KEY=b&Key=c&alt=sse", "?alt=sse"],
    ["key=only", ""],
    ["a=%2F%2Fevil&b=x y", "?a=%2F%2Fevil&b=x+y"],
  ])("%j → %j", (raw, expected) => {
    expect(forwardedQuery(raw)).toBe(expected);
  });
});
