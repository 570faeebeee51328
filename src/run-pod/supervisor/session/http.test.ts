import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { tokenMatches } from "./http.js";

const TOKEN = "run-token-3f9a";
const SHA = createHash("sha256").update(TOKEN).digest("hex");

describe("tokenMatches: the run token on the pod, parsed as the controller parses it", () => {
  it.each([
    ["Bearer run-token-3f9a", true],
    ["bearer run-token-3f9a", true],
    ["BEARER  run-token-3f9a ", true],
    ["Bearer run-token-3f9b", false],
    ["Basic run-token-3f9a", false],
    ["Bearer", false],
    ["run-token-3f9a", false],
    ["", false],
  ])("%j → %s", (header, ok) => {
    expect(tokenMatches(header, SHA)).toBe(ok);
  });

  it("no expected hash accepts nothing", () => {
    expect(tokenMatches(`Bearer ${TOKEN}`, "")).toBe(false);
    expect(tokenMatches(undefined, SHA)).toBe(false);
  });
});
