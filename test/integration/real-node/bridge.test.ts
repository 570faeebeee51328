/**
 * The real node's bridge keeps one MAC address while pods come and go (docs/real-node.md). A bridge
 * without an address of its own takes the lowest MAC among its ports, so each pod's veth joining or
 * leaving could change it (to 00:00:00:00:00:00 with no pods); a pod that kept the old one in its ARP
 * cache lost its way to the node for tens of seconds. The harness sets MACHINE.bridgeMac when it
 * creates the bridge; this file samples the bridge's address throughout waves of pods.
 */
import { readFileSync } from "node:fs";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestNamespace,
  eventually,
  kubeConfig,
  REAL_NODE,
  realNodePodTemplate,
  realNodeProblem,
} from "../../harness/context.js";

const problem = realNodeProblem();
const addressFile = `/sys/class/net/${REAL_NODE.bridge}/address`;

/** Reads the bridge's MAC every few milliseconds until stopped; returns every distinct one seen. */
function sampleBridgeMac(): { stop: () => { seen: string[]; samples: number } } {
  const seen = new Set<string>();
  let samples = 0;
  const read = () => {
    seen.add(readFileSync(addressFile, "utf8").trim());
    samples++;
  };
  read();
  const timer = setInterval(read, 5);
  return {
    stop: () => {
      clearInterval(timer);
      read();
      return { seen: [...seen], samples };
    },
  };
}

describe.skipIf(problem !== "")(`the real node's bridge${problem ? ` (skipped: ${problem})` : ""}`, () => {
  let core: CoreV1Api;
  let ns: string;

  beforeAll(async () => {
    core = kubeConfig().makeApiClient(CoreV1Api);
    ns = await createTestNamespace("bridge-mac");
  });
  afterAll(async () => {
    if (ns !== undefined) await core.deleteNamespace({ name: ns }).catch(() => {});
  });

  const pod = (name: string) => ({
    metadata: { name },
    spec: {
      ...realNodePodTemplate(),
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "pause", image: REAL_NODE.pauseImage, imagePullPolicy: "Never" }],
    },
  });

  it("keeps its fixed MAC while pods are created and deleted in waves", async () => {
    const sampler = sampleBridgeMac();
    let result: { seen: string[]; samples: number } | undefined;
    try {
      // Each wave adds ports to the bridge and takes them all away again: with the kernel choosing,
      // the address follows the lowest port MAC and drops to zeros when the last port leaves.
      for (const wave of [1, 2, 3]) {
        const names = [1, 2, 3].map((i) => `wave${wave}-pod${i}`);
        await Promise.all(names.map((name) => core.createNamespacedPod({ namespace: ns, body: pod(name) })));
        for (const name of names) {
          await eventually(
            `pod ${name} Running on the real node with an address on the bridge`,
            async () => {
              const p = await core.readNamespacedPod({ namespace: ns, name });
              return p.status?.phase === "Running" && Boolean(p.status.podIP);
            },
            90_000,
          );
        }
        await Promise.all(
          names.map((name) => core.deleteNamespacedPod({ namespace: ns, name, gracePeriodSeconds: 1 })),
        );
        for (const name of names) {
          await eventually(
            `pod ${name} gone (the kubelet confirmed it: its sandbox and veth are taken away)`,
            async () =>
              core.readNamespacedPod({ namespace: ns, name }).then(
                () => false,
                (err: { code?: number }) => err.code === 404,
              ),
            90_000,
          );
        }
      }
    } finally {
      result = sampler.stop();
    }
    expect(result.samples).toBeGreaterThan(10);
    expect(result.seen).toEqual([REAL_NODE.bridgeMac]);
  });
});
