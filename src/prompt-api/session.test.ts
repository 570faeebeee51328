import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { Agent } from "../core/types.js";
import { type PromptApiAgent, refuseUnlessRunning, runPodStateFrom, supervisorBaseUrl } from "./session.js";

describe("refuseUnlessRunning", () => {
  it.each([
    [{ phase: "Running", jobName: "a-job" }, undefined],
    [{ phase: "Running" }, "Agent a is Running, not a running session"],
    [{ phase: "Running", batchId: "msgbatch_1" }, "Agent a is not a realtime run"],
    [{ phase: "Pending" }, "Agent a is Pending, not a running session"],
    [{}, "Agent a is Pending, not a running session"],
    [undefined, "Agent a is Pending, not a running session"],
    [{ phase: "Succeeded", jobName: "a-job" }, "Agent a is Succeeded, not a running session"],
    [{ phase: "Failed", jobName: "a-job" }, "Agent a is Failed, not a running session"],
  ] as const)("status %j ⇒ %j", (status, message) => {
    const r = refuseUnlessRunning("a", { metadata: { name: "a" }, status: status as never });
    expect(r?.message).toBe(message);
    if (r) expect(r.status).toBe(409);
  });
});

const REALTIME = { "agents.re-cinq.com/execution": "realtime" };
/** As the Job builder writes it: the run labels on the Job and on its pod template. */
const JOB_UID = "6f1c2b1e-0b5e-4f7e-9a51-3c2d7e1f0a11";
const job = (labels?: Record<string, string>): V1Job => ({
  metadata: { labels, uid: JOB_UID },
  spec: { template: { metadata: { labels } } } as never,
});
/** The labels the job controller adds to each pod it creates for the Job. */
const OF_JOB = { "batch.kubernetes.io/controller-uid": JOB_UID, "controller-uid": JOB_UID };
const pod = (opts: {
  labels?: Record<string, string>;
  ip?: string;
  ready?: boolean;
  deleting?: boolean;
  /** The job controller's labels; default the Job's own uid. */
  controller?: Record<string, string>;
}): V1Pod => ({
  metadata: {
    labels: { ...(opts.controller ?? OF_JOB), ...opts.labels },
    ...(opts.deleting ? { deletionTimestamp: new Date() } : {}),
  },
  status: {
    podIP: opts.ip,
    conditions: opts.ready === undefined ? [] : [{ type: "Ready", status: opts.ready ? "True" : "False" }],
  },
});

describe("runPodStateFrom (docs/decisions.md D-45)", () => {
  it.each([
    [
      "realtime Job, ready pod with IP",
      { job: job(REALTIME), pods: [pod({ labels: REALTIME, ip: "10.0.0.7", ready: true })] },
      { kind: "serving", baseUrl: "http://10.0.0.7:8090" },
    ],
    [
      "IPv6 pod IP is bracketed",
      { job: job(REALTIME), pods: [pod({ labels: REALTIME, ip: "fd00::7", ready: true })] },
      { kind: "serving", baseUrl: "http://[fd00::7]:8090" },
    ],
    ["realtime Job, no pod yet", { job: job(REALTIME), pods: [] }, { kind: "not-serving" }],
    [
      "pod not Ready",
      { job: job(REALTIME), pods: [pod({ labels: REALTIME, ip: "10.0.0.7", ready: false })] },
      { kind: "not-serving" },
    ],
    [
      "pod without conditions",
      { job: job(REALTIME), pods: [pod({ labels: REALTIME, ip: "10.0.0.7" })] },
      { kind: "not-serving" },
    ],
    [
      "pod Ready without IP",
      { job: job(REALTIME), pods: [pod({ labels: REALTIME, ready: true })] },
      { kind: "not-serving" },
    ],
    [
      "pod being deleted",
      { job: job(REALTIME), pods: [pod({ labels: REALTIME, ip: "10.0.0.7", ready: true, deleting: true })] },
      { kind: "not-serving" },
    ],
    [
      "picks the ready pod",
      {
        job: job(REALTIME),
        pods: [
          pod({ labels: REALTIME, ip: "10.0.0.6", ready: false }),
          pod({ labels: REALTIME, ip: "10.0.0.8", ready: true }),
        ],
      },
      { kind: "serving", baseUrl: "http://10.0.0.8:8090" },
    ],
    [
      "interactive Job",
      { job: job({ "agents.re-cinq.com/agent": "a" }), pods: [pod({ ip: "10.0.0.7", ready: true })] },
      { kind: "not-realtime" },
    ],
    [
      // A Station template label reaches the pod template (and pods) of Jobs built before the
      // builder stripped it; only the Job's own labels, written by the controller, count.
      "interactive Job whose pod template carries a forged execution label",
      {
        job: { metadata: { labels: {} }, spec: { template: { metadata: { labels: REALTIME } } } },
        pods: [pod({ labels: REALTIME, ip: "10.0.0.7", ready: true })],
      },
      { kind: "not-realtime" },
    ],
    [
      "label decides over the definition",
      { job: job({}), pods: [], definitionExecution: "realtime" },
      { kind: "not-realtime" },
    ],
    [
      // No Job uid to check the pod against: it may be anyone's.
      "Job gone, pod labelled: not serving",
      { pods: [pod({ labels: REALTIME, ip: "10.0.0.7", ready: true })] },
      { kind: "not-serving" },
    ],
    [
      "a pod claiming the Job by job-name only (no controller-uid): not serving",
      { job: job(REALTIME), pods: [pod({ labels: REALTIME, ip: "10.6.6.6", ready: true, controller: {} })] },
      { kind: "not-serving" },
    ],
    [
      "a pod whose controller-uid is another Job's: not serving",
      {
        job: job(REALTIME),
        pods: [
          pod({
            labels: REALTIME,
            ip: "10.6.6.6",
            ready: true,
            controller: {
              "batch.kubernetes.io/controller-uid": "another-uid",
              "controller-uid": "another-uid",
            },
          }),
        ],
      },
      { kind: "not-serving" },
    ],
    [
      "a pod whose two controller-uid labels disagree: not serving",
      {
        job: job(REALTIME),
        pods: [
          pod({
            labels: REALTIME,
            ip: "10.6.6.6",
            ready: true,
            controller: { "batch.kubernetes.io/controller-uid": JOB_UID, "controller-uid": "another-uid" },
          }),
        ],
      },
      { kind: "not-serving" },
    ],
    [
      "the impostor is skipped, the Job's own pod serves",
      {
        job: job(REALTIME),
        pods: [
          pod({ labels: REALTIME, ip: "10.6.6.6", ready: true, controller: { "controller-uid": "x" } }),
          pod({ labels: REALTIME, ip: "10.0.0.9", ready: true }),
        ],
      },
      { kind: "serving", baseUrl: "http://10.0.0.9:8090" },
    ],
    [
      "a pod with only the legacy controller-uid label of the Job serves",
      {
        job: job(REALTIME),
        pods: [
          pod({ labels: REALTIME, ip: "10.0.0.7", ready: true, controller: { "controller-uid": JOB_UID } }),
        ],
      },
      { kind: "serving", baseUrl: "http://10.0.0.7:8090" },
    ],
    [
      "nothing left, definition realtime",
      { pods: [], definitionExecution: "realtime" },
      { kind: "not-serving" },
    ],
    [
      "nothing left, definition interactive",
      { pods: [], definitionExecution: "interactive" },
      { kind: "not-realtime" },
    ],
  ] as const)("%s", (_name, input, expected) => {
    expect(runPodStateFrom(input as unknown as Parameters<typeof runPodStateFrom>[0])).toEqual(expected);
  });

  it("builds the supervisor URL on port 8090", () => {
    expect(supervisorBaseUrl("192.168.1.2")).toBe("http://192.168.1.2:8090");
  });
});

describe("PromptApiAgent", () => {
  it("accepts the controller's cached Agent as is", () => {
    const agent: Agent = {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: { name: "a", uid: "u" },
      spec: { stationRef: "s" },
      status: { phase: "Running", jobName: "j" },
    };
    // Compile-time: the core Agent type is assignable to the prompt API's narrow view.
    const view: PromptApiAgent = agent;
    expect(refuseUnlessRunning("a", view)).toBeUndefined();
  });
});
