import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { agent, definition, NS, station, T0 } from "../../test/support/core-builders.js";
import type { LogRead } from "../core/input.js";
import { capOutput } from "../core/readback/output.js";
import { KubeApiError } from "../kube/errors.js";
import { type GatherDeps, gather, LOG_READ_RETRY_MS } from "./gather.js";
import { Semaphore } from "./semaphore.js";

const COMPLETE: V1Job = {
  metadata: { name: "run-1" },
  status: { succeeded: 1, conditions: [{ type: "Complete", status: "True" }] },
};

/** A whole-log read as the fakes answer it; the controller streams it (streamLog). */
type ReadLog = (ns: string, pod: string, container: string) => Promise<string | undefined>;

function deps(list: GatherDeps["client"]["list"], readLog: ReadLog): GatherDeps {
  const streamLog: GatherDeps["client"]["streamLog"] = async (ns, pod, container, onChunk) => {
    const text = await readLog(ns, pod, container);
    if (text === undefined) return false;
    // In pieces that split lines, as a streamed body does.
    for (let i = 0; i < text.length; i += 7_919) await onChunk(text.slice(i, i + 7_919));
    return true;
  };
  return {
    cache: {
      agent: () => undefined,
      station: () => station().build(),
      definition: () => definition().build(),
      job: () => COMPLETE,
      stationAgents: () => [],
    },
    client: { get: async () => undefined, list, streamLog },
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
    // The whole log, in one streaming pass.
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

  it("a long log: the output's tail is kept (the bytes before it counted) and the whole log's facts", async () => {
    const result = JSON.stringify({
      type: "result",
      session_id: "s-end",
      total_cost_usd: 0.42,
      usage: { input_tokens: 1000, output_tokens: 500 },
    });
    const log = `${"y".repeat(9 * 1024 * 1024)}\n${result}\n${"after\n".repeat(2_100)}`;
    const input = await gather(
      running(),
      deps(onePod, async () => log),
    );
    const agentLog = (input.pod as { agentLog: LogRead }).agentLog;
    if (!agentLog.available) throw new Error("log not read");
    // The output is the log's truncated tail; the result line is far from it, and still read.
    expect(capOutput(agentLog.text, 1024, agentLog.droppedBytes)).toBe(capOutput(log, 1024));
    expect(Buffer.byteLength(agentLog.text)).toBeLessThan(200 * 1024);
    expect(agentLog.facts).toMatchObject({ sessionId: "s-end", usage: { costUsd: 0.42 } });
  });

  it("log reads wait for the semaphore: at most its limit stream at once", async () => {
    let streaming = 0;
    let most = 0;
    const d = deps(onePod, async () => {
      streaming += 1;
      most = Math.max(most, streaming);
      await new Promise((r) => setTimeout(r, 5));
      streaming -= 1;
      return "done\n";
    });
    d.logReads = new Semaphore(2);
    await Promise.all(Array.from({ length: 6 }, () => gather(running(), d)));
    expect(most).toBe(2);
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

describe("gather: a finished gateway run's metered calls (docs/gateway.md#metering)", () => {
  const annotated: V1Job = {
    ...COMPLETE,
    metadata: { name: "run-1", annotations: { "agents.re-cinq.com/model-gateway": "anthropic" } },
    status: { ...COMPLETE.status, completionTime: new Date(T0 - 1_000) },
  };
  const usage = (over: Record<string, unknown>) => ({
    metadata: { name: "u-1" },
    spec: {
      agent: { name: "run-1", uid: "uid-run-1" },
      vendor: "anthropic",
      calls: 1,
      models: [
        {
          model: "claude-sonnet-4-6",
          inputTokens: 5,
          outputTokens: 6,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
        },
      ],
      updatedAt: new Date(T0 - 1_000).toISOString(),
      ...over,
    },
  });
  /** A list answering pods with one pod and modelusages with `records`; the selectors it was asked. */
  function lister(records: unknown[]) {
    const asked: string[] = [];
    const list = (async (r: { plural: string }, _ns: string, o?: { labelSelector?: string }) => {
      if (r.plural === "modelusages") {
        asked.push(o?.labelSelector ?? "");
        return { items: records, resourceVersion: "1" };
      }
      return {
        items: [{ metadata: { name: "run-1-a", creationTimestamp: new Date(T0) } }],
        resourceVersion: "1",
      };
    }) as GatherDeps["client"]["list"];
    return { list, asked };
  }
  const withJob = (d: GatherDeps, job: V1Job | undefined) => ({
    ...d,
    cache: { ...d.cache, job: () => job },
  });
  const ranAs = () =>
    agent("run-1")
      .running(T0 - 60_000, { jobName: "run-1" })
      .build();

  it("a Job the builder annotated: its records are listed by the run's uid and summed", async () => {
    const { list, asked } = lister([usage({}), usage({ calls: 2, incompleteCalls: 1 })]);
    const input = await gather(
      ranAs(),
      withJob(
        deps(list, async () => "log"),
        annotated,
      ),
    );
    expect(asked).toEqual(["agents.re-cinq.com/agent-uid=uid-run-1"]);
    expect(input.job).toMatchObject({ found: true, gatewayVendor: "anthropic" });
    expect(input.metered).toEqual({
      vendor: "anthropic",
      calls: 3,
      incompleteCalls: 1,
      models: [
        {
          model: "claude-sonnet-4-6",
          inputTokens: 10,
          outputTokens: 12,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
        },
      ],
    });
  });

  it("a Job without the annotation is not the gateway's: nothing is listed", async () => {
    const { list, asked } = lister([usage({})]);
    const input = await gather(
      ranAs(),
      withJob(
        deps(list, async () => "log"),
        COMPLETE,
      ),
    );
    expect(asked).toEqual([]);
    expect(input.metered).toBeUndefined();
  });

  it("a call a live gateway process still reads: the reconcile throws, to be retried once it is recorded", async () => {
    const { list } = lister([usage({ inFlight: 1 })]);
    await expect(
      gather(
        ranAs(),
        withJob(
          deps(list, async () => "log"),
          annotated,
        ),
      ),
    ).rejects.toThrow(
      "the model gateway is still reading 1 call(s) of this run; pricing it once they are recorded",
    );
  });

  it("a call of a process that is gone: priced without it, counted as unsettled", async () => {
    const { list } = lister([usage({ inFlight: 1, updatedAt: new Date(T0 - 600_000).toISOString() })]);
    const input = await gather(
      ranAs(),
      withJob(
        deps(list, async () => "log"),
        annotated,
      ),
    );
    expect(input.metered).toMatchObject({ calls: 1, unsettledCalls: 1 });
  });

  it("a Job that is gone, with the gateway on: its records say the run was the gateway's", async () => {
    const { list } = lister([usage({})]);
    const d = withJob(
      deps(list, async () => "log"),
      undefined,
    );
    d.settings = { ...d.settings, gateway: { url: "http://gw:8080", credentialKey: new Uint8Array(32) } };
    const input = await gather(ranAs(), d);
    expect(input.job).toEqual({ found: false });
    expect(input.metered).toMatchObject({ vendor: "anthropic", calls: 1 });
  });
  const refusals = (refused: number, destinations: string[]) => ({
    refused,
    destinations: destinations.map((destination) => ({
      destination,
      role: "agent",
      reason: `${destination} is not a destination of the agent`,
    })),
  });
  const gatewayOn = (d: GatherDeps) => {
    d.settings = { ...d.settings, gateway: { url: "http://gw:8080", credentialKey: new Uint8Array(32) } };
    return d;
  };

  it("egress refusals of every gateway process are summed into what status.egress will say (docs/gateway.md#egress)", async () => {
    const { list } = lister([
      usage({ egress: refusals(2, ["evil.example:443"]) }),
      usage({ egress: refusals(1, ["a.example:80"]) }),
    ]);
    const input = await gather(
      ranAs(),
      withJob(
        deps(list, async () => "log"),
        annotated,
      ),
    );
    expect(input.egress).toEqual({
      refused: 3,
      destinations: ["agent a.example:80", "agent evil.example:443"],
    });
    expect(input.metered).toMatchObject({ calls: 2 });
  });

  it("a run the gateway did not meter (no annotation) has its refusals read while the gateway is on, and is not priced from the records", async () => {
    const { list, asked } = lister([
      usage({ calls: 0, models: [], vendor: undefined, egress: refusals(1, ["x.example:443"]) }),
    ]);
    const input = await gather(
      ranAs(),
      gatewayOn(
        withJob(
          deps(list, async () => "log"),
          COMPLETE,
        ),
      ),
    );
    expect(asked).toEqual(["agents.re-cinq.com/agent-uid=uid-run-1"]);
    expect(input.egress).toEqual({ refused: 1, destinations: ["agent x.example:443"] });
    expect(input.metered).toBeUndefined();
  });

  it("no refusal recorded: no egress in the input", async () => {
    const { list } = lister([usage({})]);
    const input = await gather(
      ranAs(),
      withJob(
        deps(list, async () => "log"),
        annotated,
      ),
    );
    expect(input.egress).toBeUndefined();
  });
});
