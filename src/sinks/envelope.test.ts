import { describe, expect, it } from "vitest";
import type { Agent } from "../core/types.js";
import { batchDisabledEvents, batchEndEvents, batchStartEvents, batchTimeoutEvents } from "./batch-events.js";
import {
  batchRunSource,
  isEnvelope,
  normalizeSource,
  parseLine,
  serializeEnvelope,
  wrap,
} from "./envelope.js";
import {
  batchDisabled,
  batchFailed,
  batchStarted,
  batchSucceeded,
  batchTimedOut,
  canonicalLifecycle,
  lifecycleEvent,
} from "./lifecycle.js";

const agent: Pick<Agent, "metadata" | "spec"> = {
  metadata: { name: "ticket-summary-abc12", namespace: "ai-agents", uid: "u-1" },
  spec: { stationRef: "ticket-summary", taskId: "T-7" },
};

describe("envelope", () => {
  it("a batch run's source carries agent, station, task, namespace in that order and no pod", () => {
    const source = batchRunSource(agent);
    expect(JSON.stringify(source)).toBe(
      '{"agent":"ticket-summary-abc12","station":"ticket-summary","task":"T-7","namespace":"ai-agents"}',
    );
    expect(source).not.toHaveProperty("pod");
  });

  it("leaves empty identity fields out", () => {
    const source = batchRunSource({ ...agent, spec: { stationRef: "s", taskId: "" } });
    expect(JSON.stringify(source)).toBe(
      '{"agent":"ticket-summary-abc12","station":"s","namespace":"ai-agents"}',
    );
    expect(normalizeSource({ namespace: "n", pod: "", agent: "a" })).toEqual({ agent: "a", namespace: "n" });
    expect(
      Object.keys(normalizeSource({ namespace: "n", pod: "p", task: "t", station: "s", agent: "a" })),
    ).toEqual(["agent", "station", "task", "pod", "namespace"]);
  });

  it("serializes a lifecycle event exactly as the seed shows", () => {
    const env = wrap(batchRunSource(agent), batchStarted());
    expect(env).toBeDefined();
    expect(serializeEnvelope(env as NonNullable<typeof env>)).toBe(
      '{"source":{"agent":"ticket-summary-abc12","station":"ticket-summary","task":"T-7","namespace":"ai-agents"},' +
        '"event":{"kind":"lifecycle","phase":"agent","status":"started"}}',
    );
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
  it.each([
    ["started", batchStarted(), '{"kind":"lifecycle","phase":"agent","status":"started"}'],
    ["succeeded", batchSucceeded(), '{"kind":"lifecycle","phase":"agent","status":"succeeded","exitCode":0}'],
    [
      "failed",
      batchFailed(),
      '{"kind":"lifecycle","phase":"agent","status":"failed","reason":"batch_failed","exitCode":1}',
    ],
    [
      "timeout fail",
      batchTimedOut("fail"),
      '{"kind":"lifecycle","phase":"agent","status":"failed","reason":"batch_timeout","exitCode":1}',
    ],
    [
      "timeout fallback",
      batchTimedOut("fallback"),
      '{"kind":"lifecycle","phase":"agent","status":"running","reason":"batch_timeout"}',
    ],
    [
      "disabled",
      batchDisabled(),
      '{"kind":"lifecycle","phase":"agent","status":"failed","reason":"batch_disabled","exitCode":1}',
    ],
  ])("%s", (_name, event, wire) => {
    expect(JSON.stringify(event)).toBe(wire);
  });

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

describe("batch event lists", () => {
  it("end: every line in order, then the terminal event", () => {
    expect(batchEndEvents(["a", "b"], "failed")).toEqual([
      { type: "cliLine", line: "a" },
      { type: "cliLine", line: "b" },
      { type: "lifecycle", event: batchFailed() },
    ]);
    expect(batchEndEvents([], "succeeded")).toEqual([{ type: "lifecycle", event: batchSucceeded() }]);
  });
  it("start, timeout and disabled are single platform events", () => {
    expect(batchStartEvents()).toEqual([{ type: "lifecycle", event: batchStarted() }]);
    expect(batchTimeoutEvents("fallback")).toEqual([{ type: "lifecycle", event: batchTimedOut("fallback") }]);
    expect(batchTimeoutEvents("fail")).toEqual([{ type: "lifecycle", event: batchTimedOut("fail") }]);
    expect(batchDisabledEvents()).toEqual([{ type: "lifecycle", event: batchDisabled() }]);
  });
});
