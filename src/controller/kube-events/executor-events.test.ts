/** How the executor hands the core's Events to the recorder: in order, after their patch, never awaited. */
import { describe, expect, it } from "vitest";
import type { Action, KubeEvent } from "../../core/actions.js";
import type { Agent, AgentRef } from "../../core/types.js";
import { Executor } from "../executor.js";
import { RunMemory } from "../memory.js";
import { ControllerMetrics } from "../metrics.js";

const agent: Agent = {
  apiVersion: "agents.re-cinq.com/v1beta1",
  kind: "Agent",
  metadata: { name: "a", namespace: "ns", uid: "u-a", resourceVersion: "7" },
  spec: { stationRef: "s" },
};
const ref = { namespace: "ns", name: "a", uid: "u-a" };
const started: KubeEvent = { type: "Normal", reason: "Started", action: "Start", note: "the run started" };

function setup(patchOutcome: "ok" | "conflict", _cancel: () => Promise<void>) {
  const recorded: { regarding: AgentRef; event: KubeEvent }[] = [];
  const ex = new Executor({
    client: {
      patchStatus: async () => patchOutcome,
      get: async () => ({ data: { k: Buffer.from("key").toString("base64") } }),
    } as never,
    namespace: "ns",
    memory: new RunMemory(),
    metrics: new ControllerMetrics(),
    provider: () => {
      throw new Error("no provider");
    },
    kubeEvents: { record: (regarding, event) => recorded.push({ regarding, event }) },
    now: () => 1000,
    log: () => {},
  });
  return { ex, recorded };
}

const patchThenEvent: Action[] = [
  { id: "patch-status", type: "patchStatus", agent: ref, resourceVersion: "7", status: { phase: "Running" } },
  {
    id: "kube-event-started",
    type: "recordEvent",
    regarding: ref,
    event: started,
    dependsOn: ["patch-status"],
  },
];

describe("Executor and Kubernetes Events", () => {
  it("records the Event once its patch succeeded", async () => {
    const { ex, recorded } = setup("ok", async () => {});
    const r = await ex.execute(agent, patchThenEvent);
    expect(recorded).toEqual([{ regarding: ref, event: started }]);
    expect(r.succeeded).toEqual(["patch-status", "kube-event-started"]);
  });

  it("records nothing when the patch lost a conflict (the next reconcile reports it)", async () => {
    const { ex, recorded } = setup("conflict", async () => {});
    const r = await ex.execute(agent, patchThenEvent);
    expect(recorded).toEqual([]);
    expect(r.skipped).toEqual(["kube-event-started"]);
  });

  it("hands Events over in list order, each about the Agent it names (a preempted victim too)", async () => {
    const { ex, recorded } = setup("ok", async () => {});
    const victim = { namespace: "ns", name: "old", uid: "u-old" };
    const preempted: KubeEvent = { type: "Warning", reason: "Preempted", action: "Delete", note: "deleted" };
    await ex.execute(agent, [
      { id: "e1", type: "recordEvent", regarding: victim, event: preempted },
      { id: "e2", type: "recordEvent", regarding: ref, event: started },
    ]);
    expect(recorded).toEqual([
      { regarding: victim, event: preempted },
      { regarding: ref, event: started },
    ]);
  });
});
