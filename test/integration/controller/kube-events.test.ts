/**
 * docs/decisions.md D-110 on the local plane: what `kubectl describe agent`, `kubectl get agents` and
 * `kubectl wait` show. Pods are scripted by kwok (test/harness/README.md).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventRecorder } from "../../../src/controller/kube-events/recorder.js";
import type { ControllerReplica } from "../../../src/controller/process.js";
import { LABEL_AGENT } from "../../../src/core/run-job/job.js";
import type { Agent } from "../../../src/core/types.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { apiEventWriter, KUBE_EVENTS } from "../../../src/kube/event-writer.js";
import { resourcePath } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig, kubeconfigPath, scriptPods } from "../../harness/context.js";
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

const run = promisify(execFile);
const POD_NAME = "agent-controller-events-0";

let client: KubeClient;
let ns: string;
let replica: ControllerReplica;

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await run("kubectl", ["--kubeconfig", kubeconfigPath(), "-n", ns, ...args]);
  return stdout;
}

/** `kubectl describe agent <name>` once its Events section shows every one of `reasons`. */
function describeShowing(name: string, reasons: string[]): Promise<string> {
  return eventually(`kubectl describe agent ${name} showing ${reasons.join(", ")}`, async () => {
    const out = await kubectl("describe", "agent", name);
    const events = out.slice(out.indexOf("Events:"));
    return reasons.every((r) => new RegExp(`\\s${r}\\s`).test(events)) ? out : undefined;
  });
}

const condition = (a: Agent | undefined, type: string) => a?.status?.conditions?.find((c) => c.type === type);

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  ns = await createTestNamespace("ctrl-events");
  await createDefinition(client, ns, "def");
  replica = await startReplica(client, ns, POD_NAME);
  await eventually("leadership", async () => replica.isLeader && replica.controller?.synced);
});

afterAll(async () => {
  await replica?.stop();
  await client?.close();
});

describe("kubectl describe / get / wait on Agents", () => {
  it("a queued Agent shows phase Pending and its queue position; both runs tell their story and kubectl wait returns", async () => {
    await createStation(client, ns, "one-slot", "def", { maxConcurrentRuns: 1 });
    await scriptPods(ns, { [LABEL_AGENT]: "first" }, { exitCode: 0, runTime: "8s", logs: { agent: "one" } });
    await scriptPods(ns, { [LABEL_AGENT]: "second" }, { exitCode: 0, logs: { agent: "two" } });
    await createAgent(client, ns, "first", "one-slot");
    await waitForPhase(client, ns, "first", ["Running"]);
    await createAgent(client, ns, "second", "one-slot");

    const waiting = await eventually("second to show it is queued", async () => {
      const a = await getAgent(client, ns, "second");
      return condition(a, "Queued")?.status === "True" ? a : undefined;
    });
    expect(waiting.status?.phase).toBe("Pending");
    expect(condition(waiting, "Queued")).toMatchObject({
      reason: "WaitingForSlot",
      message:
        "waiting for a free slot on Station one-slot: position 1 of 1 in its queue (at most 1 running)",
      observedGeneration: 1,
    });
    // The PHASE column is never empty; -o wide says why.
    const wide = await kubectl("get", "agent", "second", "-o", "wide", "--no-headers");
    expect(wide).toMatch(/^second\s+Pending\s+one-slot\s/);
    expect(wide).toContain("Queued");
    expect(wide).toContain("position 1 of 1");

    // kubectl wait reads status.conditions (and their observedGeneration).
    await kubectl("wait", "--for=condition=Complete", "agent/first", "--timeout=90s");
    await kubectl("wait", "--for=condition=Complete", "agent/second", "--timeout=90s");
    const done = await getAgent(client, ns, "second");
    expect(done?.status?.phase).toBe("Succeeded");
    expect(condition(done, "Queued")).toMatchObject({ status: "False", reason: "Started" });
    expect(condition(done, "Ready")).toMatchObject({ status: "False", reason: "Succeeded" });

    const described = await describeShowing("second", ["Queued", "JobCreated", "Started", "Succeeded"]);
    expect(described).toMatch(
      /Normal\s+Queued\s+.*agents\.re-cinq\.com\/agent-controller.*queued behind 1 run on Station one-slot/,
    );
    expect(described).toMatch(/Normal\s+JobCreated\s+.*created Job agent-job-second/);
    expect(described).toMatch(/Normal\s+Succeeded\s+.*the run succeeded \(exit code 0\)/);
    // The Conditions block as kubectl prints a status list.
    expect(described).toMatch(/Type:\s+Complete/);
  });

  it("a failed run: kubectl wait --for=condition=Failed returns, describe shows the reason as a Warning", async () => {
    await createStation(client, ns, "bad", "def");
    await scriptPods(ns, { [LABEL_AGENT]: "broken" }, { exitCode: 3, logs: { agent: "boom" } });
    await createAgent(client, ns, "broken", "bad");
    await kubectl("wait", "--for=condition=Failed", "agent/broken", "--timeout=90s");
    const a = await getAgent(client, ns, "broken");
    expect(condition(a, "Failed")).toMatchObject({ status: "True", reason: "JobFailed" });
    expect(condition(a, "Failed")?.message).toBe(a?.status?.failureReason);
    const described = await describeShowing("broken", ["Started", "Failed"]);
    expect(described).toMatch(new RegExp(`Warning\\s+Failed\\s+.*${a?.status?.failureReason}`));
  });

  it("an Agent no controller has reconciled yet reads phase Pending (the CRD's status default)", async () => {
    const idle = await createTestNamespace("ctrl-events-idle");
    await createAgent(client, idle, "unseen", "any-station");
    const { stdout } = await run("kubectl", [
      "--kubeconfig",
      kubeconfigPath(),
      "-n",
      idle,
      "get",
      "agent",
      "unseen",
      "--no-headers",
    ]);
    expect(stdout).toMatch(/^unseen\s+Pending\s+any-station\s/);
    expect((await getAgent(client, idle, "unseen"))?.status).toEqual({ phase: "Pending" });
  });

  it("a missing Station: Failed with reason MissingRef, never an empty phase", async () => {
    await createAgent(client, ns, "lost", "no-such-station");
    await kubectl("wait", "--for=condition=Failed", "agent/lost", "--timeout=90s");
    const a = await getAgent(client, ns, "lost");
    expect(condition(a, "Failed")).toMatchObject({
      reason: "MissingRef",
      message: "Station no-such-station not found",
    });
    const described = await describeShowing("lost", ["Failed"]);
    expect(described).toContain("Station no-such-station not found");
  });
});

describe("the recorder against the real API server", () => {
  it("a repeat is one Event with series.count 2 (kubectl describe prints x2), reported by this pod", async () => {
    await createStation(client, ns, "quiet", "def", { maxConcurrentRuns: 1 });
    // An Agent the controller leaves alone long enough: its Station's one slot is held by a long run.
    await scriptPods(ns, { [LABEL_AGENT]: "holder" }, { exitCode: 0, runTime: "60s" });
    await createAgent(client, ns, "holder", "quiet");
    const holder = await waitForPhase(client, ns, "holder", ["Running"]);
    const regarding = { namespace: ns, name: "holder", uid: holder.metadata.uid ?? "" };
    const recorder = new EventRecorder({
      writer: apiEventWriter(client),
      reportingInstance: "test-instance",
    });
    const event = {
      type: "Warning" as const,
      reason: "CancelFailed",
      action: "CancelBatch",
      note: "same note",
    };
    recorder.record(regarding, event);
    recorder.record(regarding, event);
    await recorder.flush();
    expect(recorder.written).toBe(2);

    type Listed = {
      reason: string;
      reportingInstance: string;
      series?: { count: number };
      regarding: { uid: string };
    };
    // The controller's own Events are sent from its queue: wait for its Started.
    const list = await eventually("the controller's Started Event for holder", async () => {
      const l = await client.request<{ items: Listed[] }>("GET", resourcePath(KUBE_EVENTS, ns));
      return l.items.some((e) => e.reason === "Started" && e.regarding.uid === regarding.uid) ? l : undefined;
    });
    const mine = list.items.filter((e) => e.reason === "CancelFailed" && e.regarding.uid === regarding.uid);
    expect(mine).toHaveLength(1);
    expect(mine[0]?.series?.count).toBe(2);
    expect(mine[0]?.reportingInstance).toBe("test-instance");
    const described = await describeShowing("holder", ["CancelFailed"]);
    expect(described).toMatch(/Warning\s+CancelFailed\s+.*\(x2 over .*same note/);
    // The controller's own Events carry its POD_NAME.
    const started = list.items.find((e) => e.reason === "Started" && e.regarding.uid === regarding.uid);
    expect(started?.reportingInstance).toBe(POD_NAME);
  });
});
