import { describe, expect, it } from "vitest";
import type { EventsV1Event } from "../kube/event-writer.js";
import { EgressRefusalReporter, egressRefusalRecorder } from "./egress-refusals.js";
import { MAX_EVENTS_PER_RUN, RunWarnings } from "./run-warnings.js";

const RUN = { namespace: "ai-agents", name: "fix-readme", uid: "6f1c2e0a-1111-4c2b-9d3e-0123456789ab" };
const T = Date.parse("2026-12-07T10:00:00Z");
const refusal = (destination: string, role: "init" | "agent" | "courier" = "agent") => ({
  destination,
  role,
  reason: `gateway egress: ${destination} refused for the ${role} of Agent ai-agents/fix-readme: not a destination of the ${role}`,
});

function reporter(fail: { record?: boolean; event?: boolean } = {}) {
  const records: unknown[] = [];
  const events: EventsV1Event[] = [];
  const errors: string[] = [];
  const warnings = new RunWarnings({
    createEvent: async (e) => {
      if (fail.event) throw new Error("forbidden");
      events.push(e);
    },
    replica: "agent-gateway-abc",
    now: () => T,
    onError: () => errors.push("Event"),
  });
  const r = new EgressRefusalReporter({
    record: async (run, x) => {
      if (fail.record) throw new Error("API server down");
      records.push({ run: run.uid, ...x });
    },
    warnings,
    onError: (what) => errors.push(what),
  });
  return { r, records, events, errors };
}

describe("EgressRefusalReporter (docs/gateway.md#egress)", () => {
  it("records every refusal and writes one Warning Event EgressRefused on the Agent per destination and role", async () => {
    const { r, records, events } = reporter();
    await r.refused(RUN, refusal("evil.example:443"));
    await r.refused(RUN, refusal("evil.example:443"));
    await r.refused(RUN, refusal("evil.example:443", "courier"));
    expect(records).toHaveLength(3);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      metadata: { namespace: "ai-agents" },
      type: "Warning",
      reason: "EgressRefused",
      reportingController: "agents.re-cinq.com/agent-gateway",
      reportingInstance: "agent-gateway-abc",
      note: refusal("evil.example:443").reason,
      regarding: { kind: "Agent", name: RUN.name, uid: RUN.uid, namespace: "ai-agents" },
    });
    expect(new Set(events.map((e) => e.metadata.name)).size).toBe(2);
  });

  it("a run trying many hosts gets Events for its first distinct destinations only, and every refusal counted", async () => {
    const { r, records, events } = reporter();
    for (let i = 0; i < MAX_EVENTS_PER_RUN + 7; i++) await r.refused(RUN, refusal(`h${i}.example:443`));
    expect(records).toHaveLength(MAX_EVENTS_PER_RUN + 7);
    expect(events).toHaveLength(MAX_EVENTS_PER_RUN);
  });

  it("a failed write is told and never thrown", async () => {
    const { r, errors } = reporter({ record: true, event: true });
    await expect(r.refused(RUN, refusal("evil.example:443"))).resolves.toBeUndefined();
    expect(errors.sort()).toEqual(["Event", "usage record"]);
  });
});

describe("egressRefusalRecorder: which refusals of the listener reach the run (docs/gateway.md#egress)", () => {
  const who = { ...RUN, role: "agent" };
  const cases = [
    { name: "a 403 of a run's program", who, status: 403, recorded: true },
    { name: "a 407 (no run known)", who: undefined, status: 407, recorded: false },
    { name: "a 502 (the destination did not answer)", who, status: 502, recorded: false },
    { name: "a 503 (the run could not be confirmed)", who, status: 503, recorded: false },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.recorded ? "recorded with the body the program got" : "not recorded"}`, () => {
      const seen: unknown[] = [];
      const record = egressRefusalRecorder({ refused: async (run, r) => void seen.push({ run, ...r }) });
      record({
        who: c.who,
        host: "evil.example",
        port: 443,
        status: c.status,
        kind: "forbidden",
        reason: "not a destination of the agent",
      });
      expect(seen).toEqual(
        c.recorded
          ? [
              {
                run: RUN,
                destination: "evil.example:443",
                role: "agent",
                reason:
                  "gateway egress: evil.example:443 refused for the agent of Agent ai-agents/fix-readme: not a destination of the agent",
              },
            ]
          : [],
      );
    });
  }
});
