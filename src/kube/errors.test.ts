import { describe, expect, it } from "vitest";
import { isPermanent, KubeApiError, parseRetryAfter } from "./errors.js";

const api = (status: number) => new KubeApiError(status, "", `POST /x: ${status}`);

describe("isPermanent (docs/decisions.md D-101)", () => {
  it.each([
    [400, true],
    [403, true],
    [404, true],
    [422, true],
    [408, false],
    [409, false],
    [429, false],
    [500, false],
    [503, false],
  ])("%i → %s", (status, want) => {
    expect(isPermanent(api(status))).toBe(want);
  });
  it("an error without an answer (network, timeout) is transient", () => {
    expect(isPermanent(new Error("connect ECONNREFUSED"))).toBe(false);
  });
});

describe("parseRetryAfter", () => {
  const now = Date.UTC(2026, 0, 1, 0, 0, 0);
  it.each([
    [undefined, undefined],
    ["", undefined],
    ["7", 7000],
    [["3"], 3000],
    ["Thu, 01 Jan 2026 00:00:10 GMT", 10_000],
    ["Wed, 31 Dec 2025 23:59:00 GMT", 0],
    ["soon", undefined],
  ])("%s → %s", (value, want) => {
    expect(parseRetryAfter(value, now)).toBe(want);
  });
});
