import { describe, expect, it } from "vitest";
import { fnv1a64Low32Hex, jobNameFor, shortenName } from "./names.js";

describe("job and label names (docs/run-pod.md#the-job-and-its-pod-template)", () => {
  it.each([
    ["", "84222325"],
    ["a", "8601ec8c"],
  ])("FNV-1a 64 of %j has low 32 bits %s", (text, want) => {
    expect(fnv1a64Low32Hex(text)).toBe(want);
  });

  it("prefixes short names unchanged", () => {
    expect(jobNameFor("ticket-summary-abc12")).toBe("agent-job-ticket-summary-abc12");
  });

  it("keeps a name of exactly 63 characters", () => {
    const name = "x".repeat(53);
    expect(jobNameFor(name)).toBe(`agent-job-${name}`);
    expect(jobNameFor(name)).toHaveLength(63);
  });

  it("shortens long names to 54 chars, trailing separators stripped, plus the hash of the full name", () => {
    const name = `${"a".repeat(43)}--.b${"c".repeat(20)}`;
    const full = `agent-job-${name}`;
    const got = jobNameFor(name);
    expect(got).toBe(`agent-job-${"a".repeat(43)}-${fnv1a64Low32Hex(full)}`);
    expect(got.length).toBeLessThanOrEqual(63);
  });

  it("is deterministic and distinguishes names sharing a long prefix", () => {
    const base = "p".repeat(70);
    expect(shortenName(`${base}1`)).toBe(shortenName(`${base}1`));
    expect(shortenName(`${base}1`)).not.toBe(shortenName(`${base}2`));
  });
});
