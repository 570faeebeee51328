import { describe, expect, it } from "vitest";
import { downstreamResponseHeaders, presentedCredentials, upstreamRequestHeaders } from "./headers.js";

/** Header names of a flat [name, value, …] list, lower-cased. */
const names = (flat: string[]) => flat.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
const onlyValue = (flat: string[], name: string) =>
  flat.filter((_, i) => i % 2 === 0 && flat[i]?.toLowerCase() === name).length === 1
    ? flat[flat.findIndex((n, i) => i % 2 === 0 && n.toLowerCase() === name) + 1]
    : undefined;

describe("headers sent upstream (docs/gateway.md#what-reaches-upstream)", () => {
  const client = [
    ...["Host", "evil.example"],
    ...["X-Api-Key", "agw1.client.cred"],
    ...["authorization", "Bearer one"],
    ...["AUTHORIZATION", "Bearer two"],
    ...["x-goog-api-key", "g"],
    ...["Proxy-Authorization", "Basic abc"],
    ...["Cookie", "a=b"],
    ...["cookie", "c=d"],
    ...["X-Forwarded-For", "10.0.0.1"],
    ...["x-forwarded-host", "evil.example"],
    ...["X-FORWARDED-PROTO", "http"],
    ...["Forwarded", "for=1.2.3.4"],
    ...["api-key", "azure"],
    ...["Accept-Encoding", "gzip, br, zstd"],
    ...["Content-Length", "12"],
    ...["Transfer-Encoding", "chunked"],
    ...["Connection", "keep-alive, X-Hop"],
    ...["X-Hop", "1"],
    ...["anthropic-version", "2023-06-01"],
    ...["anthropic-beta", "a,b"],
    ...["Anthropic-Beta", "c"],
    ...["content-type", "application/json"],
    ...["user-agent", "claude-cli/2"],
  ];

  it("drops every client credential, forwarding and hop-by-hop header in any case and every repeat", () => {
    const out = upstreamRequestHeaders(client, "anthropic", "sk-real");
    const kept = names(out);
    for (const stripped of [
      "host",
      "authorization",
      "x-goog-api-key",
      "proxy-authorization",
      "cookie",
      "x-forwarded-for",
      "x-forwarded-host",
      "x-forwarded-proto",
      "forwarded",
      "api-key",
      "content-length",
      "transfer-encoding",
      "connection",
      "x-hop",
    ]) {
      expect(kept, stripped).not.toContain(stripped);
    }
    // The vendor's real key, once, and the identity encoding, once.
    expect(onlyValue(out, "x-api-key")).toBe("sk-real");
    expect(onlyValue(out, "accept-encoding")).toBe("identity");
  });

  it("keeps the API's own headers, repeated ones included", () => {
    const out = upstreamRequestHeaders(client, "anthropic", "sk-real");
    expect(out).toEqual(
      expect.arrayContaining([
        "anthropic-version",
        "2023-06-01",
        "anthropic-beta",
        "a,b",
        "Anthropic-Beta",
        "c",
      ]),
    );
    expect(onlyValue(out, "user-agent")).toBe("claude-cli/2");
  });

  it.each([
    ["anthropic", "x-api-key", "k"],
    ["openai", "authorization", "Bearer k"],
    ["gemini", "x-goog-api-key", "k"],
  ] as const)("%s gets its key as %s and no other credential header", (vendor, header, value) => {
    const out = upstreamRequestHeaders(client, vendor, "k");
    expect(onlyValue(out, header)).toBe(value);
    const credentialHeaders = names(out).filter((n) =>
      ["x-api-key", "authorization", "x-goog-api-key"].includes(n),
    );
    expect(credentialHeaders).toEqual([header]);
  });
});

describe("credentials a client presents", () => {
  it.each([
    ["x-api-key (claude)", ["x-api-key", "tok"], "", ["tok"]],
    ["a Bearer token (codex)", ["Authorization", "Bearer tok"], "", ["tok"]],
    ["x-goog-api-key (gemini)", ["X-Goog-Api-Key", "tok"], "", ["tok"]],
    ["the key query parameter", [], "alt=sse&key=tok", ["tok"]],
    ["KEY in any case", [], "KEY=tok", ["tok"]],
    ["the same one twice", ["x-api-key", "tok", "authorization", "bearer tok"], "key=tok", ["tok"]],
    ["two different ones", ["x-api-key", "a", "x-api-key", "b"], "", ["a", "b"]],
    ["a repeated Authorization", ["authorization", "Bearer a", "Authorization", "Bearer b"], "", ["a", "b"]],
    ["gemini's empty header", ["x-goog-api-key", ""], "", []],
    ["another scheme, as a whole", ["authorization", "Basic dXNlcg=="], "", ["Basic dXNlcg=="]],
    ["none", ["content-type", "application/json"], "", []],
  ])("%s", (_what, raw, query, expected) => {
    expect(presentedCredentials(raw, query)).toEqual(expected);
  });
});

describe("headers returned to the client", () => {
  it("drops hop-by-hop headers, what Connection lists and cookies; keeps the rest unchanged", () => {
    expect(
      downstreamResponseHeaders({
        "content-type": "text/event-stream",
        "request-id": "req_1",
        "transfer-encoding": "chunked",
        connection: "keep-alive, x-hop",
        "x-hop": "1",
        "set-cookie": ["__cf_bm=1"],
        "anthropic-ratelimit-requests-remaining": "99",
        "retry-after": "3",
      }),
    ).toEqual({
      "content-type": "text/event-stream",
      "request-id": "req_1",
      "anthropic-ratelimit-requests-remaining": "99",
      "retry-after": "3",
    });
  });
});
