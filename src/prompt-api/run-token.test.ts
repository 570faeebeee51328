import { describe, expect, it } from "vitest";
import { realtimeRunToken } from "../core/run-job/job.js";
import { bearerMatches, bearerToken, runToken, secretsEqual, sha256Hex } from "./run-token.js";

describe("runToken (docs/decisions.md D-40: lowercase hex HMAC-SHA256 of the uid under signing-key)", () => {
  it("matches RFC 4231 test case 2", () => {
    expect(runToken("Jefe", "what do ya want for nothing?")).toBe(
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    );
  });

  it("matches a vector computed with openssl for a uid-shaped message", () => {
    // printf '%s' UID | openssl dgst -sha256 -hmac KEY
    const token = runToken("s3cr3t-signing-key", "3f6b2a4e-8c1d-4e5f-9a7b-0c2d4e6f8a1b");
    expect(token).toBe("e3dff239c339aa0e1c6c7c4a402ce4679185beda19d6f53e8c7c61d092df6fa1");
    // What the Job builder hands the pod as AGENT_REALTIME_TOKEN_SHA256 (sha256sum of the hex).
    expect(sha256Hex(token)).toBe("e8c31f6bf3172e91f38c5a6e5b6399f3cc22bd890a4cf4fca0444b6bf44757c9");
  });

  it("agrees with the Job builder's derivation, so the pod accepts what the controller signs", () => {
    for (const [key, uid] of [
      ["k", "u"],
      ["s3cr3t-signing-key", "3f6b2a4e-8c1d-4e5f-9a7b-0c2d4e6f8a1b"],
      ["ключ", "uid-ü"],
    ] as const) {
      expect(runToken(key, uid)).toBe(realtimeRunToken(key, uid));
    }
  });

  it("differs per uid and per key", () => {
    expect(runToken("k", "uid-1")).not.toBe(runToken("k", "uid-2"));
    expect(runToken("k1", "uid-1")).not.toBe(runToken("k2", "uid-1"));
  });
});

describe("bearer token parsing and comparison", () => {
  it.each([
    ["Bearer abc", "abc"],
    ["bearer abc", "abc"],
    ["BEARER abc", "abc"],
    ["Bearer   abc ", "abc"],
    ["Bearer", undefined],
    ["Bearer ", undefined],
    ["Basic abc", undefined],
    ["abc", undefined],
    ["Bearer a b", undefined],
    ["", undefined],
    [undefined, undefined],
    [null, undefined],
  ] as const)("%j ⇒ %j", (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });

  it.each([
    ["Bearer api-token", true],
    ["Bearer api-token-", false],
    ["Bearer api-toke", false],
    ["Bearer API-TOKEN", false],
    ["Token api-token", false],
    [undefined, false],
  ] as const)("bearerMatches(%j, api-token) ⇒ %s", (header, ok) => {
    expect(bearerMatches(header, "api-token")).toBe(ok);
  });

  it("compares secrets of different lengths without throwing", () => {
    expect(secretsEqual("a", "a")).toBe(true);
    expect(secretsEqual("a", "ab")).toBe(false);
    expect(secretsEqual("", "x")).toBe(false);
  });
});
