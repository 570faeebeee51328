import { describe, expect, it } from "vitest";
import {
  drawSchedule,
  FAULT_KINDS,
  type FaultKind,
  faultsAround,
  formatSchedule,
  overlaps,
} from "./schedule.js";

const base = { durationMs: 600_000, count: 40, kinds: FAULT_KINDS };

describe("the soak's fault schedule (docs/soak.md#the-fault-schedule)", () => {
  it("the same seed draws the same schedule", () => {
    expect(drawSchedule({ ...base, seed: 42 })).toEqual(drawSchedule({ ...base, seed: 42 }));
  });

  it("different seeds draw different schedules", () => {
    const printed = new Set(
      [1, 2, 3, 4, 5, 42, 4294967295].map((seed) => JSON.stringify(drawSchedule({ ...base, seed }))),
    );
    expect(printed.size).toBe(7);
  });

  it("every kind offered is drawn for some seed, and only kinds offered", () => {
    const seen = new Set<FaultKind>();
    for (let seed = 0; seed < 20; seed++) for (const f of drawSchedule({ ...base, seed })) seen.add(f.kind);
    expect([...seen].sort()).toEqual([...FAULT_KINDS].sort());
    const only: FaultKind[] = ["leader-evict", "run-pod-delete"];
    for (let seed = 0; seed < 20; seed++)
      for (const f of drawSchedule({ ...base, seed, kinds: only })) expect(only).toContain(f.kind);
  });

  it("faults combine: windows overlap in every long enough schedule", () => {
    for (let seed = 0; seed < 20; seed++) {
      const s = drawSchedule({ ...base, seed });
      const pairs = s.flatMap((a, i) => s.slice(i + 1).filter((b) => overlaps(a, b)));
      expect(pairs.length, `seed ${seed}`).toBeGreaterThan(0);
    }
  });

  it.each([
    { durationMs: 1_000, count: 1 },
    { durationMs: 60_000, count: 0 },
    { durationMs: 60_000, count: 200 },
    { durationMs: 3_600_000, count: 500 },
  ])("bounds: $count faults, all within $durationMs ms, ordered by time", ({ durationMs, count }) => {
    for (let seed = 0; seed < 10; seed++) {
      const s = drawSchedule({ seed, durationMs, count, kinds: FAULT_KINDS });
      expect(s).toHaveLength(count);
      for (const [i, f] of s.entries()) {
        expect(f.at).toBeGreaterThanOrEqual(0);
        expect(f.at).toBeLessThan(durationMs);
        if (i > 0) expect(f.at).toBeGreaterThanOrEqual(s[i - 1]?.at ?? 0);
        expect(f.windowMs).toBeGreaterThan(0);
        if (f.kind.startsWith("provider-")) {
          expect(["anthropic", "gemini", "openai"]).toContain(f.target);
          expect(f.params.times).toBeGreaterThanOrEqual(1);
          expect(f.params.times).toBeLessThanOrEqual(5);
        }
        if (f.kind === "kubelet-restart") expect(f.params.downMs).toBeLessThanOrEqual(10_000);
      }
    }
  });

  it.each([
    [{ seed: -1 }, "seed must be an integer"],
    [{ seed: 1.5 }, "seed must be an integer"],
    [{ durationMs: 0 }, "durationMs must be a positive number"],
    [{ count: -2 }, "count must be a non-negative integer"],
    [{ kinds: [] }, "kinds must name at least one"],
    [{ kinds: ["meteor"] }, 'kinds: unknown fault kind "meteor"'],
  ])("refuses bad input %j, naming the field", (patch, message) => {
    expect(() => drawSchedule({ ...base, seed: 1, ...(patch as object) })).toThrow(message);
  });

  it("faultsAround finds the faults whose window is near a span; formatSchedule prints one line each", () => {
    const s = drawSchedule({ ...base, seed: 7 });
    const f = s[10];
    if (!f) throw new Error("no fault 10");
    expect(faultsAround(s, f.at + 1, f.at + 1, 0)).toContain(f);
    expect(faultsAround(s, f.at + f.windowMs + 60_001, f.at + f.windowMs + 90_000, 60_000)).not.toContain(f);
    // A span that began before the fault and was seen long after it still finds it.
    expect(faultsAround(s, f.at - 500_000, f.at + f.windowMs + 500_000, 0)).toContain(f);
    const lines = formatSchedule(s);
    expect(lines).toHaveLength(s.length);
    expect(lines[10]).toContain(f.kind);
  });
});
