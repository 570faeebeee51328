/**
 * The real node (docs/real-node.md): a kubelet, containerd and runc beside the kwok node on a plane of
 * this file's own (one real node per machine; the run's shared plane has none), pods from the agent
 * image built with buildah, and the machine left as it was found: after a normal stop, and after the
 * test process was killed (the watchdog).
 */
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HarnessApi } from "../harness/api.js";
import { type ControlPlane, startControlPlane } from "../harness/cluster.js";
import { eventuallyPasses } from "../harness/eventually.js";
import { type Footprint, takeFootprint } from "../harness/real-node/footprint.js";
import {
  MACHINE,
  REAL_NODE_LABEL,
  REAL_NODE_SCHEDULING,
  realNodeProblem,
} from "../harness/real-node/index.js";

const problem = realNodeProblem();
const log = (m: string) => process.stderr.write(`[real-node test] ${m}\n`);

type Pod = {
  spec?: { nodeName?: string };
  status?: { phase?: string; podIP?: string; containerStatuses?: { state?: unknown }[] };
};

async function waitPhase(api: HarnessApi, ns: string, name: string, phases: string[]): Promise<Pod> {
  return eventuallyPasses(`pod ${ns}/${name} ${phases.join("/")}`, async () => {
    const pod = (await api.ok("GET", `/api/v1/namespaces/${ns}/pods/${name}`)) as Pod;
    expect(phases, JSON.stringify(pod.status)).toContain(pod.status?.phase ?? "");
    return pod;
  });
}

/** Waits until the machine's footprint equals `expected` again (the last difference on failure). */
async function footprintSettlesTo(expected: Footprint, keys: string[], timeoutMs: number): Promise<void> {
  await eventuallyPasses(
    "the machine's footprint as it was",
    () => {
      expect(takeFootprint(keys)).toEqual(expected);
    },
    timeoutMs,
    500,
  );
}

describe.skipIf(problem !== "")(`a real node${problem ? ` (skipped: ${problem})` : ""}`, () => {
  let before: Footprint;
  let sysctlKeys: string[];
  let plane: ControlPlane | undefined;
  let api: HarnessApi;

  beforeAll(async () => {
    before = takeFootprint();
    sysctlKeys = Object.keys(before.sysctls);
    // The first run on a machine builds the images (~2 min); later ones take seconds.
    plane = await startControlPlane({ realNode: true, log });
    api = plane.api();
  }, 900_000);

  afterAll(async () => {
    await plane?.stop();
  });

  it("registers a Ready node, tainted so only pods that ask go there, beside the kwok node", async () => {
    const node = (await api.ok("GET", `/api/v1/nodes/${MACHINE.nodeName}`)) as {
      metadata: { labels: Record<string, string> };
      spec: { taints?: { key: string; effect: string }[] };
      status: {
        addresses: { type: string; address: string }[];
        nodeInfo: { kubeletVersion: string; containerRuntimeVersion: string };
      };
    };
    expect(node.metadata.labels[REAL_NODE_LABEL]).toBe("true");
    expect(node.spec.taints).toContainEqual(
      expect.objectContaining({ key: REAL_NODE_LABEL, effect: "NoSchedule" }),
    );
    expect(node.status.addresses).toContainEqual({ type: "InternalIP", address: MACHINE.gateway });
    expect(node.status.nodeInfo.kubeletVersion).toBe("v1.33.13");
    expect(node.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\/1\.6\./);
    const nodes = (await api.ok("GET", "/api/v1/nodes")) as { items: { metadata: { name: string } }[] };
    expect(nodes.items.map((n) => n.metadata.name).sort()).toEqual(
      expect.arrayContaining(["kwok-node-0", MACHINE.nodeName]),
    );
  });

  it("runs a pod of the agent image under the run pods' restrictions; its logs come from the kubelet", async () => {
    const ns = "real-node-pods";
    await api.ok("POST", "/api/v1/namespaces", { metadata: { name: ns } });
    const image = plane?.state.realNode?.images.agent?.name ?? "";
    expect(image).toMatch(/^ghcr\.io\/re-cinq\/ai-agent-run-pod:v/);
    await api.ok("POST", `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: "restricted" },
      spec: {
        ...REAL_NODE_SCHEDULING,
        restartPolicy: "Never",
        securityContext: { fsGroup: 1000 },
        volumes: [{ name: "work", emptyDir: {} }],
        initContainers: [
          {
            name: "init",
            image,
            command: ["sh", "-c", "echo from-init > /work/hello"],
            volumeMounts: [{ name: "work", mountPath: "/work" }],
            securityContext: {
              runAsUser: 0,
              allowPrivilegeEscalation: false,
              capabilities: { drop: ["ALL"], add: ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID"] },
              seccompProfile: { type: "RuntimeDefault" },
            },
          },
        ],
        containers: [
          {
            name: "agent",
            image,
            command: [
              "sh",
              "-c",
              "cat /work/hello; id -u; stat -c 'group %g' /work/hello; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; /usr/local/bin/ai-agent-reaper --version",
            ],
            volumeMounts: [{ name: "work", mountPath: "/work" }],
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 1000,
              runAsGroup: 1000,
              allowPrivilegeEscalation: false,
              capabilities: { drop: ["ALL"] },
              seccompProfile: { type: "RuntimeDefault" },
            },
          },
        ],
      },
    });
    const pod = await waitPhase(api, ns, "restricted", ["Succeeded", "Failed"]);
    expect(pod.spec?.nodeName).toBe(MACHINE.nodeName);
    expect(pod.status?.phase).toBe("Succeeded");
    expect(pod.status?.podIP).toMatch(/^10\.213\.0\.\d+$/);
    const logs = await api.request("GET", `/api/v1/namespaces/${ns}/pods/restricted/log?container=agent`);
    expect(logs.status).toBe(200);
    const lines = logs.body.split("\n");
    expect(lines.slice(0, 3)).toEqual(["from-init", "1000", "group 1000"]);
    expect(logs.body).toMatch(/^CapEff:\s+0000000000000000$/m);
    expect(logs.body).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(logs.body).toMatch(/^Seccomp:\s+2$/m); // filter mode: the runtime's default profile
    expect(logs.body).toMatch(/tini version/);
    // Pods that do not ask for the real node stay on kwok.
    await api.ok("POST", `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: "elsewhere" },
      spec: { containers: [{ name: "c", image: "example.invalid/none" }] },
    });
    const elsewhere = await waitPhase(api, ns, "elsewhere", ["Running", "Succeeded", "Failed"]);
    expect(elsewhere.spec?.nodeName).toBe("kwok-node-0");
  });

  it("changes the machine while it runs (what the footprint would see left behind)", () => {
    const during = takeFootprint(sysctlKeys);
    expect(during.links).toContain(MACHINE.bridge);
    expect(during.cgroups.some((c) => c.endsWith(`/${MACHINE.cgroupRoot}`))).toBe(true);
    expect(during.lock).toBe(true);
    expect(during.processes.some((p) => / kubelet|\/kubelet /.test(p))).toBe(true);
    expect(during.sysctls).not.toEqual(before.sysctls);
  });

  it("leaves the machine as it found it when the plane stops", async () => {
    await plane?.stop();
    plane = undefined;
    await footprintSettlesTo(before, sysctlKeys, 10_000);
  });

  it("and when the test process is killed: the plane's watchdog takes the node off", async () => {
    const child = spawn("npx", ["tsx", "test/harness/real-node/hold-plane.ts"], {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      err = (err + c.toString()).slice(-4000);
    });
    const deadline = Date.now() + 180_000;
    while (!out.includes("ready ") && Date.now() < deadline && child.exitCode === null) await sleep(200);
    expect(out, err).toContain("ready ");
    expect(takeFootprint(sysctlKeys).links).toContain(MACHINE.bridge);
    // npx, tsx and node: the whole group, as a killed test runner would go.
    process.kill(-(child.pid ?? 0), "SIGKILL");
    await footprintSettlesTo(before, sysctlKeys, 60_000);
  }, 300_000);
});
