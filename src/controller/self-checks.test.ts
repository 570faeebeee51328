import { describe, expect, it } from "vitest";
import { admissionNetworkCheck } from "./admission-self-checks.js";
import { findingFilter, REPEAT_FINDING_MS, runSelfChecks, type SelfCheck } from "./self-checks.js";

const pod = { namespace: "ai-agents", name: "agent-controller-abc", uid: "uid-1" };

function recorder() {
  const recorded: { regarding: unknown; event: unknown }[] = [];
  return { recorded, record: (regarding: unknown, event: unknown) => recorded.push({ regarding, event }) };
}

describe("runSelfChecks", () => {
  it("logs each finding at error level and records a Warning Event on the controller's Pod; a passing check says nothing", async () => {
    const events = recorder();
    const logged: Record<string, unknown>[] = [];
    const checks: SelfCheck[] = [
      { name: "quiet", run: async () => undefined },
      {
        name: "loud",
        run: async () => ({ reason: "AdmissionNetworkOpen", message: "every pod can reach it" }),
      },
    ];
    const findings = await runSelfChecks({ checks, events, pod, log: (l) => logged.push(l) });
    expect(findings).toEqual([{ reason: "AdmissionNetworkOpen", message: "every pod can reach it" }]);
    expect(logged).toEqual([
      { level: "error", msg: "every pod can reach it", reason: "AdmissionNetworkOpen", check: "loud" },
    ]);
    expect(events.recorded).toEqual([
      {
        regarding: {
          apiVersion: "v1",
          kind: "Pod",
          namespace: "ai-agents",
          name: "agent-controller-abc",
          uid: "uid-1",
        },
        event: {
          type: "Warning",
          reason: "AdmissionNetworkOpen",
          action: "SelfCheck",
          note: "every pod can reach it",
        },
      },
    ]);
  });

  it("a check that cannot run is a finding, not a pass", async () => {
    const events = recorder();
    const checks: SelfCheck[] = [
      {
        name: "NetworkPolicy agent-controller-admission-ingress",
        run: async () => {
          throw new Error("403 Forbidden");
        },
      },
    ];
    expect(await runSelfChecks({ checks, events, pod, log: () => {} })).toEqual([
      {
        reason: "SelfCheckFailed",
        message: "could not check NetworkPolicy agent-controller-admission-ingress: 403 Forbidden",
      },
    ]);
  });
});

describe("admissionNetworkCheck", () => {
  const CONTROLLER = { "agents.re-cinq.com/component": "controller" };
  const own = {
    metadata: { name: "agent-controller-admission-ingress" },
    spec: {
      podSelector: { matchLabels: CONTROLLER },
      policyTypes: ["Ingress"],
      ingress: [
        { ports: [{ port: "health" }, { port: "api" }] },
        {
          from: [{ ipBlock: { cidr: "0.0.0.0/0", except: ["10.244.0.0/16"] } }],
          ports: [{ port: "admission" }],
        },
      ],
    },
  };
  /** Another team's policy on the same pods, every port open to the namespace's pods. */
  const monitoring = {
    metadata: { name: "allow-monitoring" },
    spec: {
      podSelector: { matchExpressions: [{ key: "agents.re-cinq.com/component", operator: "Exists" }] },
      ingress: [{ from: [{ podSelector: {} }] }],
    },
  };
  const reader = (policies: unknown[], podLabels?: Record<string, string>) => ({
    list: async <T>(r: { plural: string }) =>
      ({
        items:
          r.plural === "pods"
            ? podLabels
              ? [{ metadata: { name: "agent-controller-0", labels: podLabels } }]
              : []
            : policies,
        resourceVersion: "1",
      }) as unknown as { items: T[]; resourceVersion: string },
  });

  it.each([
    ["a pod inside the excepted CIDR", [own], "10.244.1.2", undefined],
    ["a pod outside it", [own], "10.42.0.7", "AdmissionNetworkOpen"],
    ["no policy", [], "10.244.1.2", "AdmissionNetworkOpen"],
    [
      "another policy selecting the controller opens the port to pods",
      [own, monitoring],
      "10.244.1.2",
      "AdmissionNetworkOpen",
    ],
    ["no pod address (outside a cluster)", [], "", undefined],
  ])("%s", async (_, policies, podIp, reason) => {
    const check = admissionNetworkCheck(reader(policies, CONTROLLER), {
      namespace: "ai-agents",
      podIp,
      podName: "agent-controller-0",
      port: 9443,
    });
    expect((await check.run())?.reason).toBe(reason);
  });

  it("names the other policy that opens the port", async () => {
    const check = admissionNetworkCheck(reader([own, monitoring], CONTROLLER), {
      namespace: "ai-agents",
      podIp: "10.244.1.2",
      podName: "agent-controller-0",
      port: 9443,
    });
    expect((await check.run())?.message).toBe(
      "NetworkPolicy allow-monitoring opens the admission webhook's port 9443 to pods (a podSelector or namespaceSelector peer): those pods can reach it; keep the admission webhook's port out of its rules (docs/security.md#admission-webhook)",
    );
  });

  it("judges the pod by its own labels: a policy for other pods does not count", async () => {
    const forOthers = {
      ...monitoring,
      spec: { ...monitoring.spec, podSelector: { matchLabels: { app: "web" } } },
    };
    const check = admissionNetworkCheck(reader([own, forOthers], { ...CONTROLLER, team: "x" }), {
      namespace: "ai-agents",
      podIp: "10.244.1.2",
      podName: "agent-controller-0",
      port: 9443,
    });
    expect(await check.run()).toBeUndefined();
  });
});

describe("findingFilter", () => {
  it("says a finding once, again after an hour while it lasts, at once when it changes or comes back", () => {
    let now = 0;
    const say = findingFilter(() => now);
    const open = { reason: "AdmissionNetworkOpen", message: "open" };
    expect(say("net", open)).toBe(true);
    now += 60_000;
    expect(say("net", open)).toBe(false);
    expect(say("cert", open)).toBe(true);
    now += REPEAT_FINDING_MS;
    expect(say("net", open)).toBe(true);
    expect(say("net", { ...open, message: "open wider" })).toBe(true);
    expect(say("net", undefined)).toBe(false);
    expect(say("net", open)).toBe(true);
  });
});
