import { describe, expect, it } from "vitest";
import type { Agent } from "../core/types.js";
import { RunMemory } from "./memory.js";

const agent = (name: string, phase?: string, extra: Partial<Agent["status"]> = {}): Agent =>
  ({
    metadata: { name, uid: `uid-${name}` },
    spec: { stationRef: "s" },
    status: phase ? { phase, ...extra } : undefined,
  }) as Agent;

describe("RunMemory", () => {
  it("counts issued creations per Station until the cache shows the Agent past Pending", () => {
    const m = new RunMemory();
    m.markIssued("a", "s1");
    m.markIssued("b", "s1");
    m.markIssued("c", "s2");
    expect(m.issuedFor("s1").sort()).toEqual(["a", "b"]);
    m.observe(agent("a"), false); // still Pending in the cache: keep counting
    expect(m.issuedFor("s1").sort()).toEqual(["a", "b"]);
    m.observe(agent("a", "Running"), false);
    m.observe(agent("b"), true);
    expect(m.issuedFor("s1")).toEqual([]);
    expect(m.issuedFor("s2")).toEqual(["c"]);
  });

  it("forgets a submit once the batchId is visible and all batch memory on delete", () => {
    const m = new RunMemory();
    m.batchFor("uid-a").submitted = { batchId: "b1", at: 1 };
    m.batchFor("uid-a").lastPollAt = 5;
    m.observe(agent("a", "Running", { batchId: "b1" }), false);
    expect(m.peekBatch("uid-a")).toEqual({ lastPollAt: 5 });
    m.observe(agent("a", "Running"), true);
    expect(m.peekBatch("uid-a")).toBeUndefined();
  });

  it("remembers a refused write's resourceVersion until the cache holds another version", () => {
    const m = new RunMemory();
    const at = (rv: string) => ({
      ...agent("a", "Running"),
      metadata: { name: "a", uid: "uid-a", resourceVersion: rv },
    });
    m.markConflict("uid-a", "7");
    m.observe(at("7"), false); // the write-through or a late event of the same version
    expect(m.conflictedAt("uid-a")).toBe("7");
    m.observe(at("8"), false);
    expect(m.conflictedAt("uid-a")).toBeUndefined();
    m.markConflict("uid-a", "8");
    m.observe(at("8"), true);
    expect(m.conflictedAt("uid-a")).toBeUndefined();
  });
});
