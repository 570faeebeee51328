/**
 * The controller's failure paths on a real API server (docs/decisions.md D-101 to D-112): a Job refused for good or for a
 * while, a log read that fails, the Job's own deadline, an init that fails, and pruning that
 * repairs itself. Faults the API server cannot be made to produce (a 503 on one request) are
 * injected into the controller's own client; everything else is the real thing.
 */
import type { V1Job } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerReplica } from "../../../src/controller/process.js";
import { jobNameFor } from "../../../src/core/run-job/names.js";
import type { Agent } from "../../../src/core/types.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { KubeApiError } from "../../../src/kube/errors.js";
import { AGENTS, JOBS, STATIONS } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig, podScriptAnnotations } from "../../harness/context.js";
import { eventually } from "../../harness/eventually.js";
import {
  clientFor,
  createAgent,
  createDefinition,
  createStation,
  getAgent,
  startReplica,
  waitForPhase,
} from "./helpers.js";

let client: KubeClient;
/** The controller's own client, whose requests a test may fail on purpose. */
let controllerClient: KubeClient;
let ns: string;
let replica: ControllerReplica;
const logs: string[] = [];
const reports: { agent: string; succeeded: string[] }[] = [];

/** Fails the next `times` calls of one client method for which `when` holds. */
function failNext<K extends "create" | "streamLog">(
  method: K,
  times: number,
  err: () => Error,
  when: (...args: Parameters<KubeClient[K]>) => boolean,
): { calls: number; succeeded: number } {
  const original = controllerClient[method].bind(controllerClient) as (...a: unknown[]) => Promise<unknown>;
  const seen = { calls: 0, succeeded: 0 };
  let left = times;
  (controllerClient as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
    if (when(...(args as Parameters<KubeClient[K]>))) {
      seen.calls++;
      if (left > 0) {
        left--;
        throw err();
      }
      const result = await original(...args);
      seen.succeeded++;
      return result;
    }
    return original(...args);
  };
  return seen;
}

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  controllerClient = await clientFor(kubeConfig());
  ns = await createTestNamespace("ctrl-fail");
  await createDefinition(client, ns, "def");
  replica = await startReplica(controllerClient, ns, "replica-f", {
    log: (m) => logs.push(m),
    onReconciled: (agent, report) => reports.push({ agent, succeeded: report.succeeded }),
  });
  await eventually("leadership", async () => replica.isLeader && replica.controller?.synced);
});

afterAll(async () => {
  await replica?.stop();
  await client?.close();
  await controllerClient?.close();
});

const explain = (e: Error) => {
  throw new Error(`${e.message}\ncontroller log:\n${logs.slice(-30).join("\n")}`);
};

describe("Job creation failures (docs/decisions.md D-101)", () => {
  it("a Job the API server refuses for good (invalid template field) fails the Agent with its message", async () => {
    // The local plane runs no quota controller; an invalid field is refused just as finally (422).
    await client.create(STATIONS, ns, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Station",
      metadata: { name: "bad-sidecar" },
      spec: {
        agentDefRef: "def",
        template: {
          spec: {
            containers: [
              { name: "agent", image: "example.test/agent:1" },
              { name: "Side_Car", image: "example.test/sidecar:1" },
            ],
          },
        },
      },
    });
    await createAgent(client, ns, "refused-1", "bad-sidecar");
    const done = await waitForPhase(client, ns, "refused-1", ["Failed"], 60_000).catch(explain);
    expect(done.status?.failureReason).toMatch(
      /^Job creation refused: 422 Invalid: Job\.batch "agent-job-refused-1" is invalid: .*containers\[1\]\.name: Invalid value: "Side_Car"/,
    );
    expect(done.status?.exitCode).toBe(1);
    expect(await client.get<V1Job>(JOBS, ns, jobNameFor("refused-1"))).toBeUndefined();
  });

  it("a transient failure (503 with Retry-After) is retried and the Agent says why it waits", async () => {
    await createStation(client, ns, "flaky", "def", {
      annotations: podScriptAnnotations({ exitCode: 0, logs: { agent: "made it" } }),
    });
    const job = jobNameFor("flaky-1");
    const seen = failNext(
      "create",
      2,
      () => new KubeApiError(503, "ServiceUnavailable", "POST jobs: 503", "etcd leader changed", 1000),
      (r, _ns, obj) => r === JOBS && (obj as V1Job).metadata?.name === job,
    );
    await createAgent(client, ns, "flaky-1", "flaky");
    const done = await waitForPhase(client, ns, "flaky-1", ["Succeeded", "Failed"]).catch(explain);
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
    expect(done.status?.output).toContain("made it");
    // Two refusals, then the create that made the Job. A reconcile that runs before the
    // watch delivers that Job may try once more and get 409, which is not a second Job.
    expect(seen.calls).toBeGreaterThanOrEqual(3);
    expect(seen.succeeded).toBe(1);
    expect(reports.some((x) => x.agent === "flaky-1" && x.succeeded.includes("report-waiting"))).toBe(true);
  });
});

describe("read-back (docs/decisions.md D-106, D-112, D-23)", () => {
  it("a log read failing with 503 is retried: the run keeps its output, never 'pod garbage-collected'", async () => {
    await createStation(client, ns, "sick-kubelet", "def", {
      annotations: podScriptAnnotations({
        exitCode: 0,
        logs: { agent: '{"type":"result","session_id":"s-42"}' },
      }),
    });
    const seen = failNext(
      "streamLog",
      2,
      () => new KubeApiError(503, "ServiceUnavailable", "GET log: 503", "kubelet unavailable"),
      (_ns, pod, container) => container === "agent" && pod.startsWith(jobNameFor("sick-1")),
    );
    await createAgent(client, ns, "sick-1", "sick-kubelet");
    const done = await waitForPhase(client, ns, "sick-1", ["Succeeded", "Failed"]).catch(explain);
    expect(seen.calls).toBeGreaterThanOrEqual(3);
    // Each failed read failed its reconcile, and each such failure is counted for alerting.
    const errors = (await replica.metrics.reconcileErrors.get()).values[0]?.value ?? 0;
    expect(errors).toBeGreaterThanOrEqual(2);
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0, sessionId: "s-42" });
    expect(done.status?.failureReason).toBeUndefined();
    expect(done.status?.output).toContain('"session_id":"s-42"');
  });

  it("a run past deadlineMinutes ends Failed with the Job's own DeadlineExceeded reason", async () => {
    // deadlineMinutes: 1 is activeDeadlineSeconds 60; the pod would run for 5 minutes.
    await createStation(client, ns, "slowpoke", "def", {
      deadlineMinutes: 1,
      annotations: podScriptAnnotations({ exitCode: 0, runTime: "300s", logs: { agent: "still going" } }),
    });
    await createAgent(client, ns, "slow-1", "slowpoke");
    const done = await waitForPhase(client, ns, "slow-1", ["Succeeded", "Failed"], 150_000).catch(explain);
    expect(done.status?.phase).toBe("Failed");
    expect(done.status?.failureReason).toBe(
      "DeadlineExceeded: Job was active longer than specified deadline",
    );
  }, 200_000);

  it("an init that fails before the agent ran: its log is the output (docs/decisions.md D-23)", async () => {
    await createStation(client, ns, "bad-init", "def", {
      annotations: podScriptAnnotations({
        exitCodes: { init: 1 },
        logs: { init: "[init] cloning o/r\n[init] files: notes/brief.md: HTTP 404\n" },
      }),
    });
    await createAgent(client, ns, "init-1", "bad-init");
    const done = await waitForPhase(client, ns, "init-1", ["Succeeded", "Failed"]).catch(explain);
    expect(done.status?.phase).toBe("Failed");
    expect(done.status?.output).toContain("[init] files: notes/brief.md: HTTP 404");
  });
});

describe("pruning repairs itself (docs/decisions.md D-105)", () => {
  it("failedRunsHistoryLimit 0 with maxConcurrentRuns 1: a failed run is deleted", async () => {
    await createStation(client, ns, "no-failures-kept", "def", {
      maxConcurrentRuns: 1,
      failedRunsHistoryLimit: 0,
      annotations: podScriptAnnotations({ exitCode: 2, logs: { agent: "nope" } }),
    });
    await createAgent(client, ns, "nf-1", "no-failures-kept");
    await createAgent(client, ns, "nf-2", "no-failures-kept");
    for (const n of ["nf-1", "nf-2"]) {
      await eventually(`${n} deleted`, async () => (await getAgent(client, ns, n)) === undefined).catch(
        explain,
      );
    }
  });

  it("a lowered successfulRunsHistoryLimit is applied by the next poll", async () => {
    await createStation(client, ns, "keep-three", "def", {
      successfulRunsHistoryLimit: 3,
      annotations: podScriptAnnotations({ exitCode: 0 }),
    });
    const names = ["k-1", "k-2", "k-3"];
    for (const n of names) {
      await createAgent(client, ns, n, "keep-three");
      await waitForPhase(client, ns, n, ["Succeeded"]).catch(explain);
    }
    await client.mergePatch(STATIONS, ns, "keep-three", { spec: { successfulRunsHistoryLimit: 1 } });
    await eventually("the two oldest pruned", async () => {
      const left = (await client.list<Agent>(AGENTS, ns)).items
        .filter((a) => a.spec.stationRef === "keep-three")
        .map((a) => a.metadata.name);
      return left.length === 1 && left[0] === "k-3";
    }).catch(explain);
  });
});

describe("nothing forged (docs/decisions.md D-107, D-109)", () => {
  it("a Station template's execution: realtime label never reaches an interactive run", async () => {
    await createStation(client, ns, "forger", "def", {
      labels: { "agents.re-cinq.com/execution": "realtime" },
      annotations: podScriptAnnotations({ exitCode: 0 }),
    });
    await createAgent(client, ns, "forged-1", "forger");
    await waitForPhase(client, ns, "forged-1", ["Running", "Succeeded"]).catch(explain);
    const job = await client.get<V1Job>(JOBS, ns, jobNameFor("forged-1"));
    expect(job?.spec?.template.metadata?.labels).not.toHaveProperty("agents.re-cinq.com/execution");
  });
});
