import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { agent, definition, NS, station, T0 } from "../../test/support/core-builders.js";
import { KubeApiError } from "../kube/errors.js";
import {
  type GatherDeps,
  gather,
  LOG_OVERFLOW_TAIL_LINES,
  LOG_READ_LIMIT_BYTES,
  LOG_READ_RETRY_MS,
} from "./gather.js";

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
        async (_ns, pod, container, o) => {
          reads.push(`${pod}/${container} limitBytes=${o?.limitBytes}`);
          return "done\n";
        },
      ),
    );
    // By bytes with the read bound, never by a line tail that silently drops output.
    expect(reads).toEqual([`run-1-a/agent limitBytes=${LOG_READ_LIMIT_BYTES}`]);
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

  const onePod = async () => ({
    items: [{ metadata: { name: "run-1-a" } }] as never[],
    resourceVersion: "1",
  });
  const unavailable = async () => {
    throw new KubeApiError(503, "ServiceUnavailable", "GET …/log: 503", "the kubelet is not answering");
  };
  const finishedAt = (ms: number): V1Job => ({
    metadata: { name: "run-1" },
    status: {
      succeeded: 1,
      completionTime: new Date(ms),
      conditions: [{ type: "Complete", status: "True" }],
    },
  });
  const withJob = (d: GatherDeps, job: V1Job, now: number): GatherDeps => ({
    ...d,
    cache: { ...d.cache, job: () => job },
    now: () => now,
  });

  it("a log read failing with 5xx soon after the Job finished throws (retried), never 'pod gone'", async () => {
    await expect(
      gather(running(), withJob(deps(onePod, unavailable), finishedAt(T0), T0 + 5_000)),
    ).rejects.toThrow("503");
  });

  it("past the retry window the read error is recorded, with the API's message", async () => {
    const input = await gather(
      running(),
      withJob(deps(onePod, unavailable), finishedAt(T0), T0 + LOG_READ_RETRY_MS + 1),
    );
    expect(input.pod).toEqual({
      found: true,
      agentLog: { available: false, error: "503 the kubelet is not answering" },
    });
  });

  it("a 404/400 log (container gone or never started) is unavailable without an error", async () => {
    const input = await gather(
      running(),
      deps(onePod, async () => undefined),
    );
    expect(input.pod).toEqual({ found: true, agentLog: { available: false } });
  });

  it("a log longer than the read bound is read again by its last lines; both parts are kept", async () => {
    const reads: unknown[] = [];
    const big = "x".repeat(LOG_READ_LIMIT_BYTES);
    const input = await gather(
      running(),
      deps(onePod, async (_ns, _pod, _c, o) => {
        reads.push(o);
        return o?.tailLines ? '{"type":"result","session_id":"s-end"}' : big;
      }),
    );
    expect(reads).toEqual([
      { limitBytes: LOG_READ_LIMIT_BYTES },
      { limitBytes: LOG_READ_LIMIT_BYTES, tailLines: LOG_OVERFLOW_TAIL_LINES },
    ]);
    const pod = input.pod as { agentLog: { text: string } };
    expect(pod.agentLog.text.endsWith('{"type":"result","session_id":"s-end"}')).toBe(true);
  });

  it("the agent never ran: the init log is read instead (docs/decisions.md D-23)", async () => {
    const reads: string[] = [];
    const pods = [
      {
        metadata: { name: "run-1-a" },
        status: {
          initContainerStatuses: [{ name: "init", state: { terminated: { exitCode: 1 } } }],
          containerStatuses: [{ name: "agent", state: { waiting: { reason: "PodInitializing" } } }],
        },
      },
    ];
    const input = await gather(
      running(),
      deps(
        async () => ({ items: pods as never[], resourceVersion: "1" }),
        async (_ns, _pod, container) => {
          reads.push(container);
          return "[init] clone failed\n";
        },
      ),
    );
    expect(reads).toEqual(["init"]);
    expect(input.pod).toMatchObject({
      agentLog: { available: false },
      initLog: { available: true, text: "[init] clone failed\n" },
    });
  });
});
