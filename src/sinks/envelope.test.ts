import { describe, expect, it } from "vitest";
import { isEnvelope, normalizeSource, parseLine, serializeEnvelope, wrap } from "./envelope.js";
import { canonicalLifecycle, lifecycleEvent } from "./lifecycle.js";

// A batch run's source, lifecycle events and event lists, as production builds them, are tested in
// batch-run-events.test.ts.

describe("envelope", () => {
  it("leaves empty identity fields out and orders the rest agent, station, task, pod, namespace", () => {
    expect(normalizeSource({ namespace: "n", pod: "", agent: "a" })).toEqual({ agent: "a", namespace: "n" });
    expect(
      Object.keys(normalizeSource({ namespace: "n", pod: "p", task: "t", station: "s", agent: "a" })),
    ).toEqual(["agent", "station", "task", "pod", "namespace"]);
  });

  it("carries a JSON line parsed and a non-JSON line as a string", () => {
    expect(parseLine('{"type":"result","is_error":false}')).toEqual({ type: "result", is_error: false });
    expect(parseLine("plain text")).toBe("plain text");
    expect(serializeEnvelope({ source: { agent: "a" }, event: parseLine("not json {") })).toBe(
      '{"source":{"agent":"a"},"event":"not json {"}',
    );
  });

  it("does not wrap something that already is an envelope", () => {
    const inner = { source: { agent: "x" }, event: { kind: "lifecycle" } };
    expect(isEnvelope(inner)).toBe(true);
    expect(wrap({ agent: "a" }, inner)).toBeUndefined();
    expect(isEnvelope({ source: "x" })).toBe(false);
    expect(isEnvelope(["source", "event"])).toBe(false);
    expect(wrap({ agent: "a" }, { source: 1 })).toEqual({ source: { agent: "a" }, event: { source: 1 } });
  });
});

describe("lifecycle events", () => {
  it("orders optional fields tool, reason, exitCode, turn and omits empty ones", () => {
    expect(
      JSON.stringify(lifecycleEvent("turn", "failed", { turn: 2, exitCode: 3, reason: "r", tool: "t" })),
    ).toBe(
      '{"kind":"lifecycle","phase":"turn","status":"failed","tool":"t","reason":"r","exitCode":3,"turn":2}',
    );
    expect(JSON.stringify(lifecycleEvent("init", "running", { tool: "", reason: "" }))).toBe(
      '{"kind":"lifecycle","phase":"init","status":"running"}',
    );
  });
});

describe("canonicalLifecycle", () => {
  it("reorders lifecycle keys to kind, phase, status, tool, reason, exitCode, turn", () => {
    expect(
      JSON.stringify(
        canonicalLifecycle({
          exitCode: 1,
          reason: "batch_timeout",
          status: "failed",
          phase: "agent",
          kind: "lifecycle",
        }),
      ),
    ).toBe('{"kind":"lifecycle","phase":"agent","status":"failed","reason":"batch_timeout","exitCode":1}');
    expect(
      JSON.stringify(canonicalLifecycle({ turn: 2, kind: "lifecycle", phase: "turn", status: "started" })),
    ).toBe('{"kind":"lifecycle","phase":"turn","status":"started","turn":2}');
  });
  it("leaves other events untouched", () => {
    const file = { kind: "file", event: "report", path: "/w/r.md", content: "x" };
    expect(canonicalLifecycle(file)).toBe(file);
  });
});
