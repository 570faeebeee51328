import { describe, expect, it } from "vitest";
import type { EventsV1Event } from "../kube/event-writer.js";
import { MAX_EVENTS_PER_RUN, RunWarnings } from "./run-warnings.js";

const RUN = { namespace: "ai-agents", name: "fix-readme", uid: "6f1c2e0a-1111-4c2b-9d3e-0123456789ab" };
const OTHER = { ...RUN, name: "other", uid: "7f1c2e0a-1111-4c2b-9d3e-0123456789ab" };
const T = Date.parse("2026-12-07T10:00:00Z");

function warnings(fail = false) {
  const events: EventsV1Event[] = [];
  const errors: unknown[] = [];
  const w = new RunWarnings({
    createEvent: async (e) => {
      if (fail) throw new Error("forbidden");
      events.push(e);
    },
    replica: "agent-gateway-abc",
    now: () => T,
    onError: (_run, err) => errors.push(err),
  });
  return { w, events, errors };
}

describe("RunWarnings: the gateway's Warning Events on an Agent (docs/gateway.md#what-the-agent-shows)", () => {
  it("writes a Warning Event on the run's Agent, reported by the gateway, once per warning", async () => {
    const { w, events } = warnings();
    await w.warn(
      RUN,
      "ProviderKeyMissing",
      "ReadProviderKey",
      "gateway: no anthropic API key for Agent ai-agents/fix-readme: …",
    );
    await w.warn(
      RUN,
      "ProviderKeyMissing",
      "ReadProviderKey",
      "gateway: no anthropic API key for Agent ai-agents/fix-readme: …",
    );
    await w.warn(OTHER, "ProviderKeyMissing", "ReadProviderKey", "the other run's");
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({
      type: "Warning",
      reason: "ProviderKeyMissing",
      action: "ReadProviderKey",
      reportingController: "agents.re-cinq.com/agent-gateway",
      reportingInstance: "agent-gateway-abc",
      regarding: { apiVersion: "agents.re-cinq.com/v1beta1", kind: "Agent", ...RUN },
    });
    expect(events[1]?.regarding.uid).toBe(OTHER.uid);
    expect(events[0]?.metadata.name).not.toBe(events[1]?.metadata.name);
  });

  it("a key groups warnings whose notes differ; a run's share of Events is bounded", async () => {
    const { w, events } = warnings();
    await w.warn(RUN, "ProviderKeyUnreadable", "ReadProviderKey", "timeout 1", "unreadable");
    await w.warn(RUN, "ProviderKeyUnreadable", "ReadProviderKey", "timeout 2", "unreadable");
    expect(events.map((e) => e.note)).toEqual(["timeout 1"]);
    for (let i = 0; i < MAX_EVENTS_PER_RUN + 5; i++)
      await w.warn(RUN, "EgressRefused", "RefuseEgress", `host ${i}`);
    expect(events).toHaveLength(MAX_EVENTS_PER_RUN);
  });

  it("a failed write is told, never thrown", async () => {
    const { w, errors } = warnings(true);
    await expect(w.warn(RUN, "ProviderKeyMissing", "ReadProviderKey", "x")).resolves.toBeUndefined();
    expect(errors).toHaveLength(1);
  });
});
