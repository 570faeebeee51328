/**
 * The runner's Node, kept alive like a kubelet keeps its own: registered with its kubelet endpoint
 * (127.0.0.1:<port>) and a NoSchedule taint so only opted-in pods land on it, a Lease in
 * `kube-node-lease` renewed every quarter of its duration, and the Ready condition's heartbeat.
 * No `kwok.x-k8s.io/node` annotation: kwok leaves this node and its pods alone.
 */
import type { HarnessApi } from "../api.js";

/** Scheduling of the runner node: the label to select it and the taint to tolerate. */
export const RUNNER_NODE_NAME = "runner-node-0";
export const RUNNER_LABEL = "harness.test.example/pod-runner";
export const RUNNER_TAINT = { key: RUNNER_LABEL, value: "true", effect: "NoSchedule" } as const;
/** Same duration kwok gives its nodes; the kubelet renews every quarter of it (10 s). */
export const LEASE_DURATION_SECONDS = 40;
/** How often the Ready condition's heartbeat is refreshed (the kubelet's nodeStatusReportFrequency is 5 min). */
const STATUS_EVERY_MS = 60_000;

/** A Lease renewTime (MicroTime: RFC 3339 with six fractional digits). */
export function microTime(at: Date): string {
  return at.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

function nodeConditions(now: string) {
  const cond = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  });
  return [
    cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
  ];
}

export function nodeStatus(kubeletPort: number, name: string, now: string) {
  const resources = { cpu: "32", memory: "64Gi", pods: "110", "ephemeral-storage": "100Gi" };
  return {
    capacity: resources,
    allocatable: resources,
    conditions: nodeConditions(now),
    addresses: [
      { type: "InternalIP", address: "127.0.0.1" },
      { type: "Hostname", address: name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } },
    nodeInfo: {
      machineID: "",
      systemUUID: "",
      bootID: "",
      kernelVersion: "",
      osImage: "test harness pod runner",
      containerRuntimeVersion: "pod-runner://1",
      kubeletVersion: "v1.33.13",
      kubeProxyVersion: "",
      operatingSystem: "linux",
      architecture: "amd64",
    },
  };
}

export class RunnerNode {
  private leaseTimer: NodeJS.Timeout | undefined;
  private lastStatus = 0;

  constructor(
    private readonly api: HarnessApi,
    readonly name: string,
    private readonly kubeletPort: number,
    private readonly fail: (message: string) => void,
  ) {}

  /** Creates (or takes over) the Node and its Lease and starts renewing them. */
  async register(): Promise<void> {
    const now = new Date().toISOString();
    const body = {
      metadata: {
        name: this.name,
        labels: {
          "kubernetes.io/hostname": this.name,
          "kubernetes.io/os": "linux",
          "kubernetes.io/arch": "amd64",
          [RUNNER_LABEL]: "true",
          type: "pod-runner",
        },
        annotations: { "node.alpha.kubernetes.io/ttl": "0" },
      },
      spec: { taints: [RUNNER_TAINT] },
    };
    const created = await this.api.request("POST", "/api/v1/nodes", body);
    if (created.status !== 201 && created.status !== 409) {
      throw new Error(`pod runner: registering node ${this.name} -> HTTP ${created.status}: ${created.body}`);
    }
    await this.api.ok(
      "PATCH",
      `/api/v1/nodes/${this.name}/status`,
      { status: nodeStatus(this.kubeletPort, this.name, now) },
      "application/merge-patch+json",
    );
    this.lastStatus = Date.now();
    await this.renewLease();
    this.leaseTimer = setInterval(() => void this.tick(), (LEASE_DURATION_SECONDS * 1000) / 4);
    this.leaseTimer.unref();
  }

  private async tick(): Promise<void> {
    try {
      await this.renewLease();
      if (Date.now() - this.lastStatus >= STATUS_EVERY_MS) {
        await this.api.ok(
          "PATCH",
          `/api/v1/nodes/${this.name}/status`,
          { status: { conditions: nodeConditions(new Date().toISOString()) } },
          "application/merge-patch+json",
        );
        this.lastStatus = Date.now();
      }
    } catch (err) {
      this.fail(`node ${this.name} heartbeat: ${(err as Error).message}`);
    }
  }

  private async renewLease(): Promise<void> {
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${this.name}`;
    const spec = {
      holderIdentity: this.name,
      leaseDurationSeconds: LEASE_DURATION_SECONDS,
      renewTime: microTime(new Date()),
    };
    const patched = await this.api.request("PATCH", path, { spec }, "application/merge-patch+json");
    if (patched.status === 200) return;
    if (patched.status !== 404) throw new Error(`renewing Lease -> HTTP ${patched.status}: ${patched.body}`);
    const node = (await this.api.ok("GET", `/api/v1/nodes/${this.name}`)) as { metadata: { uid: string } };
    await this.api.ok("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
      metadata: {
        name: this.name,
        ownerReferences: [{ apiVersion: "v1", kind: "Node", name: this.name, uid: node.metadata.uid }],
      },
      spec,
    });
  }

  stop(): void {
    if (this.leaseTimer) clearInterval(this.leaseTimer);
  }
}
