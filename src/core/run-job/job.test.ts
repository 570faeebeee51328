import { describe, expect, it } from "vitest";
import { agent, definition, station } from "../../../test/support/core-builders.js";
import { build, container, podSpec, settings, wiredJob } from "../../../test/support/job-build.js";
import { buildJob, templateProblem } from "./job.js";

describe("Job object (docs/run-pod.md#the-job-and-its-pod-template)", () => {
  const job = build();
  it("names, labels and owns the Job", () => {
    expect(job.apiVersion).toBe("batch/v1");
    expect(job.kind).toBe("Job");
    expect(job.metadata).toEqual({
      name: "agent-job-run-1",
      namespace: "ai-agents",
      labels: {
        "agents.re-cinq.com/component": "job",
        "agents.re-cinq.com/agent": "run-1",
        "agents.re-cinq.com/station": "st",
      },
      ownerReferences: [
        {
          apiVersion: "agents.re-cinq.com/v1beta1",
          kind: "Agent",
          name: "run-1",
          uid: "uid-run-1",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    });
  });
  it.each([
    [undefined, 1800],
    [45, 2700],
    [0, 60],
  ])(
    "deadlineMinutes %j → activeDeadlineSeconds %d, ttl 3600, backoffLimit 0",
    (deadlineMinutes, seconds) => {
      const j = build({ stationSpec: deadlineMinutes === undefined ? {} : { deadlineMinutes } });
      expect(j.spec?.activeDeadlineSeconds).toBe(seconds);
      expect(j.spec?.ttlSecondsAfterFinished).toBe(3600);
      expect(j.spec?.backoffLimit).toBe(0);
    },
  );
  it("shortens long Agent names in the Job name and labels", () => {
    const long = "a".repeat(80);
    const j = build({ name: long });
    expect(j.metadata?.name).toMatch(/^agent-job-a{44}-[0-9a-f]{8}$/);
    expect(j.metadata?.labels?.["agents.re-cinq.com/agent"]).toMatch(/^a{54}-[0-9a-f]{8}$/);
  });
});

describe("pod template wiring (docs/run-pod.md#the-job-and-its-pod-template)", () => {
  const job = wiredJob();
  const pod = podSpec(job);
  const agentC = container(job, "agent");
  it("merges labels (controller wins) and annotations", () => {
    expect(job.spec?.template.metadata?.labels).toEqual({
      team: "x",
      "agents.re-cinq.com/component": "job",
      "agents.re-cinq.com/agent": "run-1",
      "agents.re-cinq.com/station": "st",
    });
    expect(job.spec?.template.metadata?.annotations).toEqual({
      note: "kept",
      "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
    });
  });
  it("keeps everything else of the Station's pod", () => {
    expect(pod.nodeSelector).toEqual({ pool: "agents" });
    expect(pod.tolerations).toEqual([{ key: "k", operator: "Exists" }]);
    expect(pod.serviceAccountName).toBe("runner");
    expect(pod.containers.map((c) => c.name)).toEqual(["agent", "sidecar"]);
    expect(container(job, "sidecar")).toEqual({
      name: "sidecar",
      image: "proxy",
      // docs/security.md#the-station-template-policy: a container the Station adds never runs as root.
      securityContext: {
        privileged: false,
        runAsNonRoot: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
        seccompProfile: { type: "RuntimeDefault" },
      },
    });
    expect(agentC.image).toBe("node:22");
    expect(agentC.resources).toEqual({ limits: { memory: "4Gi" } });
    expect(agentC.workingDir).toBe("/src");
  });
});

describe("rejected templates (docs/run-pod.md#the-job-and-its-pod-template, docs/decisions.md D-17)", () => {
  it.each([
    [{}, "spec.containers is missing"],
    [{ spec: { containers: [{ name: "main" }] } }, "no container named agent"],
    [{ spec: { hostNetwork: true, containers: [{ name: "agent" }] } }, "hostNetwork is not allowed"],
    [{ spec: { hostPID: true, containers: [{ name: "agent" }] } }, "hostPID is not allowed"],
    [{ spec: { hostIPC: true, containers: [{ name: "agent" }] } }, "hostIPC is not allowed"],
    [
      { spec: { volumes: [{ name: "h", hostPath: { path: "/" } }], containers: [{ name: "agent" }] } },
      "hostPath volume h is not allowed",
    ],
    [
      { spec: { containers: [{ name: "agent" }, { name: "side", securityContext: { privileged: true } }] } },
      "container side is privileged",
    ],
    [{ spec: { containers: [{ name: "agent" }] } }, undefined],
  ])("%j → %j", (template, want) => {
    expect(templateProblem(template)).toBe(want);
  });
  it("fails the build with the invalid Station template reason", () => {
    const r = buildJob(
      agent().build(),
      station()
        .spec({ template: { spec: { containers: [] } } })
        .build(),
      definition().build(),
      settings,
      "interactive",
    );
    expect(r).toEqual({ ok: false, reason: "invalid Station template: no container named agent" });
  });
  it("builds from the template with its nulls dropped: the pod the API server reads is the one checked", () => {
    const job = build({
      stationSpec: {
        template: {
          metadata: { labels: null },
          spec: {
            nodeName: null,
            volumes: [{ name: "cfg", emptyDir: null, configMap: { name: "c", items: null } }],
            containers: [
              { name: "agent", image: "x", env: null, volumeMounts: [{ name: "cfg", mountPath: "/cfg" }] },
            ],
          },
        },
      } as never,
    });
    expect(JSON.stringify(job)).not.toContain("null");
    expect(job.spec?.template.spec?.volumes?.[0]).toEqual({ name: "cfg", configMap: { name: "c" } });
    expect(job.spec?.template.spec).not.toHaveProperty("nodeName");
  });
  it("refuses a hostPath hidden behind a null first key", () => {
    const r = buildJob(
      agent().build(),
      station()
        .spec({
          template: {
            spec: {
              containers: [{ name: "agent", image: "x" }],
              volumes: [{ name: "host", emptyDir: null, hostPath: { path: "/" } }],
            },
          },
        } as never)
        .build(),
      definition().build(),
      settings,
      "interactive",
    );
    expect(r).toEqual({ ok: false, reason: "invalid Station template: hostPath volume host is not allowed" });
  });
  it("fails exec without tool_config.command", () => {
    const r = buildJob(
      agent().build(),
      station().build(),
      definition().spec({ model: "exec" }).build(),
      settings,
      "interactive",
    );
    expect(r).toEqual({
      ok: false,
      reason:
        "invalid AgentDefinition: tool_config.command must be a non-empty array of strings for the exec model",
    });
  });
});

describe("the execution label is the controller's (docs/decisions.md D-107)", () => {
  const forged = {
    template: {
      metadata: { labels: { "agents.re-cinq.com/execution": "realtime", team: "a" } },
      spec: { containers: [{ name: "agent", image: "node:22-bookworm-slim" }] },
    },
  };
  it("a Station template's execution: realtime is removed from an interactive run's pods", () => {
    const job = build({ stationSpec: forged });
    expect(job.spec?.template.metadata?.labels).not.toHaveProperty("agents.re-cinq.com/execution");
    expect(job.metadata?.labels).not.toHaveProperty("agents.re-cinq.com/execution");
    expect(job.spec?.template.metadata?.labels?.team).toBe("a");
  });
  it("a realtime run still gets it", () => {
    const job = build({ stationSpec: forged, mode: "realtime", def: { execution: "realtime" } });
    expect(job.spec?.template.metadata?.labels?.["agents.re-cinq.com/execution"]).toBe("realtime");
  });
});
