import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { agent, definition, NS, station, T0 } from "../../test/support/core-builders.js";
import { type GatherDeps, gather } from "./gather.js";

const COMPLETE: V1Job = {
  metadata: { name: "run-1" },
  status: { succeeded: 1, conditions: [{ type: "Complete", status: "True" }] },
};

function deps(list: GatherDeps["client"]["list"], readLog: GatherDeps["client"]["readLog"]): GatherDeps {
  return {
    cache: {
      agent: () => undefined,
      station: () => station().build(),
      definition: () => definition().build(),
      job: () => COMPLETE,
      stationAgents: () => [],
    },
    client: { get: async () => undefined, list, readLog },
    namespace: NS,
    settings: {
      namespace: NS,
      agentImage: "img",
      maxOutputBytes: 1024,
      batchEnabled: false,
      realtimeEnabled: false,
      batchPollSeconds: 60,
    },
    pendingCreations: () => [],
    batch: () => ({}),
    now: () => T0,
  };
}

const running = () =>
  agent("run-1")
    .running(T0 - 60_000, { jobName: "run-1" })
    .build();

describe("gather: the pod of a finished Job", () => {
  it("reads the oldest pod and its agent log", async () => {
    const pods = [
      { metadata: { name: "run-1-b", creationTimestamp: new Date(T0) } },
      { metadata: { name: "run-1-a", creationTimestamp: new Date(T0 - 1000) } },
    ] as V1Pod[];
    const reads: string[] = [];
    const input = await gather(
      running(),
      deps(
        async () => ({ items: pods as never[], resourceVersion: "1" }),
        async (_ns, pod, container) => {
          reads.push(`${pod}/${container}`);
          return "done\n";
        },
      ),
    );
    expect(reads).toEqual(["run-1-a/agent"]);
    expect(input.pod).toMatchObject({ found: true, agentLog: { available: true, text: "done\n" } });
  });

  it("an empty pod list is a garbage-collected pod", async () => {
    const input = await gather(
      running(),
      deps(
        async () => ({ items: [], resourceVersion: "1" }),
        async () => undefined,
      ),
    );
    expect(input.pod).toEqual({ found: false });
  });

  it("a failed pod LIST throws (retried later) instead of passing for a garbage-collected pod", async () => {
    await expect(
      gather(
        running(),
        deps(
          async () => {
            throw new Error("connect ECONNREFUSED");
          },
          async () => undefined,
        ),
      ),
    ).rejects.toThrow("ECONNREFUSED");
  });
});
