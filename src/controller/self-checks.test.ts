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
  const policy = {
    spec: {
      ingress: [
        {
          from: [{ ipBlock: { cidr: "0.0.0.0/0", except: ["10.244.0.0/16"] } }],
          ports: [{ port: "admission" }],
        },
      ],
    },
  };
  const reader = (found: unknown) => ({ get: async <T>() => found as T | undefined });

  it.each([
    ["a pod inside the excepted CIDR", policy, "10.244.1.2", undefined],
    ["a pod outside it", policy, "10.42.0.7", "AdmissionNetworkOpen"],
    ["no policy", undefined, "10.244.1.2", "AdmissionNetworkOpen"],
    ["no pod address (outside a cluster)", undefined, "", undefined],
  ])("%s", async (_, found, podIp, reason) => {
    const check = admissionNetworkCheck(reader(found), { namespace: "ai-agents", podIp, port: 9443 });
    expect((await check.run())?.reason).toBe(reason);
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
