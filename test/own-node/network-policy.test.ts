/**
 * The shipped NetworkPolicies enforced by a real engine (docs/security.md "NetworkPolicies, tested",
 * docs/real-node.md "NetworkPolicies"): kube-router on the real node, the policies rendered verbatim
 * from deploy/ and its realtime, admission and gateway components through the overlay test/network-policy
 * (what a user's overlay sets: the pod CIDR and the nodes' pod-network addresses of the admission
 * policy, the egress to a private endpoint), and probe pods of the controller image carrying the
 * product's labels. Each path is probed with a TCP connect from inside a pod (kubectl exec). After
 * the policies are deleted the same blocked probes connect: the engine blocked them. "The internet"
 * is a stand-in public host on the bridge at a TEST-NET-3 address the pods route through the node.
 *
 * The API server's path: kube-router lets every packet from the node itself into its pods (as most
 * engines do), so an API server on the pod's own node always gets through. One on another node
 * (a control-plane node) arrives with that node's address on the pod network when the CNI tunnels
 * or bridges (flannel's cni0/flannel.1, Calico's tunl0): inside the pod CIDR, which the policy
 * excepts. That node is stood in for by a network namespace on the bridge with such an address.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, readlinkSync } from "node:fs";
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import type { HarnessApi } from "../harness/api.js";
import { type ControlPlane, defaultServiceAccount, startControlPlane } from "../harness/cluster.js";
import { eventually, eventuallyPasses } from "../harness/eventually.js";
import { type Footprint, takeFootprint } from "../harness/real-node/footprint.js";
import { MACHINE, REAL_NODE_SCHEDULING, realNodeProblem } from "../harness/real-node/index.js";
import { engineFilters } from "../harness/real-node/network-policies.js";

const run = promisify(execFile);
const problem = realNodeProblem();
const log = (m: string) => process.stderr.write(`[network-policy test] ${m}\n`);
const OVERLAY = resolve(import.meta.dirname, "../network-policy");
const NS = "ai-agents";
const JOB = { "agents.re-cinq.com/component": "job" };
const REALTIME = { ...JOB, "agents.re-cinq.com/execution": "realtime" };
const CONTROLLER = { "agents.re-cinq.com/component": "controller" };
const GATEWAY = { "agents.re-cinq.com/component": "gateway" };
const ADMISSION_POLICY = "agent-controller-admission-ingress";
/** The stand-in control-plane node: its address on the pod network (listed in test/network-policy). */
const PEER_NODE = { ip: "10.213.0.250", veth: "aiagentnp0" };
/**
 * The stand-in public host: an address of PUBLIC_TEST_CIDR (the pods' route to it goes through the
 * node), in a network namespace on the bridge, listening on 80 and 443: "the internet" a run pod
 * reaches directly without the gateway and only through the gateway's proxy with it.
 */
const PUBLIC_HOST = { ip: "203.0.113.10", veth: "aiagentnp1" };

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
type Pod = { status?: { phase?: string; podIP?: string } };

/** A pod at `ns/name`, listening on `ports`, reached at `ip`. */
interface Probe {
  ns: string;
  name: string;
  ip: string;
}

/**
 * What a TCP connect saw: "open", or how it was blocked: "refused" (kube-router REJECTs with an ICMP
 * port-unreachable), "closed" (no answer within the timeout), or another error code.
 */
type Reach = "open" | "refused" | "closed" | string;
const BLOCKED = /^(refused|closed|EHOSTUNREACH)$/;
const OPEN = /^open$/;

const CONNECT_MS = 2_000;
const connectScript = (host: string, port: number) => `
  const s = require("node:net").connect({ host: ${JSON.stringify(host)}, port: ${port} });
  const t = setTimeout(() => { console.log("closed"); process.exit(0); }, ${CONNECT_MS});
  s.on("connect", () => { console.log("open"); process.exit(0); });
  s.on("error", (e) => { console.log(e.code === "ECONNREFUSED" ? "refused" : e.code || e.message); process.exit(0); });`;

describe.skipIf(problem !== "")(
  `the shipped NetworkPolicies on a real engine${problem ? ` (skipped: ${problem})` : ""}`,
  () => {
    let before: Footprint;
    let plane: ControlPlane | undefined;
    let api: HarnessApi;
    let image: string;
    let policies: Obj[] = [];
    const pods: Record<string, Probe> = {};

    const kubectl = async (args: string[]) =>
      (await run("kubectl", [`--kubeconfig=${plane?.kubeconfig}`, ...args], { timeout: 30_000 })).stdout;

    /** A TCP connect from inside a pod's network namespace. */
    async function reach(from: Probe, to: Probe, port: number): Promise<Reach> {
      const out = await kubectl([
        "exec",
        "-n",
        from.ns,
        from.name,
        "--",
        "node",
        "-e",
        connectScript(to.ip, port),
      ]);
      return out.trim();
    }

    let peerNode: ChildProcess | undefined;
    let publicHost: ChildProcess | undefined;
    let publicListener: ChildProcess | undefined;

    /** The stand-in control-plane node: a network namespace held by a sleep, a veth on the bridge. */
    async function startPeerNode(): Promise<void> {
      peerNode = spawn("unshare", ["--net", "sleep", "900"], { stdio: "ignore" });
      const pid = peerNode.pid ?? 0;
      const own = readlinkSync("/proc/self/ns/net");
      while (readlinkSync(`/proc/${pid}/ns/net`) === own) await sleep(20);
      const ip = (args: string[]) => run("ip", args);
      const inPeer = (args: string[]) => run("nsenter", ["-t", String(pid), "-n", "ip", ...args]);
      await ip(["link", "add", PEER_NODE.veth, "type", "veth", "peer", "name", "eth0", "netns", String(pid)]);
      await ip(["link", "set", PEER_NODE.veth, "master", MACHINE.bridge, "up"]);
      await inPeer(["addr", "add", `${PEER_NODE.ip}/24`, "dev", "eth0"]);
      await inPeer(["link", "set", "eth0", "up"]);
    }

    /** The stand-in public host: its namespace, its veth on the bridge, the node's route to it, a listener. */
    async function startPublicHost(): Promise<void> {
      publicHost = spawn("unshare", ["--net", "sleep", "900"], { stdio: "ignore" });
      const pid = String(publicHost.pid ?? 0);
      const own = readlinkSync("/proc/self/ns/net");
      while (readlinkSync(`/proc/${pid}/ns/net`) === own) await sleep(20);
      const ip = (args: string[]) => run("ip", args);
      const inHost = (args: string[]) => run("nsenter", ["-t", pid, "-n", "ip", ...args]);
      await ip(["link", "add", PUBLIC_HOST.veth, "type", "veth", "peer", "name", "eth0", "netns", pid]);
      await ip(["link", "set", PUBLIC_HOST.veth, "master", MACHINE.bridge, "up"]);
      await inHost(["addr", "add", `${PUBLIC_HOST.ip}/32`, "dev", "eth0"]);
      await inHost(["link", "set", "eth0", "up"]);
      await inHost(["route", "add", MACHINE.gateway, "dev", "eth0"]);
      await inHost(["route", "add", "default", "via", MACHINE.gateway]);
      await ip(["route", "replace", `${PUBLIC_HOST.ip}/32`, "dev", MACHINE.bridge]);
      publicListener = spawn("nsenter", ["-t", pid, "-n", process.execPath, "-e", server([80, 443])], {
        stdio: "ignore",
      });
    }

    async function stopPublicHost(): Promise<void> {
      publicListener?.kill("SIGKILL");
      publicHost?.kill("SIGKILL");
      publicListener = publicHost = undefined;
      await run("ip", ["route", "del", `${PUBLIC_HOST.ip}/32`]).catch(() => undefined);
    }

    const PUBLIC: Probe = { ns: "", name: "public-host", ip: PUBLIC_HOST.ip };

    /** A TCP connect from the stand-in control-plane node (bash's /dev/tcp). */
    async function reachFromPeerNode(to: Probe, port: number): Promise<Reach> {
      const pid = String(peerNode?.pid ?? 0);
      const script = `exec 3<>/dev/tcp/${to.ip}/${port}`;
      const child = spawn(
        "nsenter",
        ["-t", pid, "-n", "timeout", String(CONNECT_MS / 1000), "bash", "-c", script],
        {
          stdio: ["ignore", "ignore", "pipe"],
        },
      );
      let err = "";
      child.stderr.on("data", (c: Buffer) => {
        err += c.toString();
      });
      const code = await new Promise<number | null>((r) => child.on("close", r));
      if (code === 0) return "open";
      if (code === 124) return "closed";
      return /Connection refused/.test(err) ? "refused" : err.trim() || `exit ${code}`;
    }

    /** Probes until the result matches `want` (a policy change reaches the engine through its informers). */
    const probeUntil = (what: string, probe: () => Promise<Reach>, want: RegExp) =>
      eventuallyPasses(
        what,
        async () => {
          expect(await probe()).toMatch(want);
        },
        20_000,
        300,
      );

    // A probe that connects and exits resets the connection while "ok" is written: without an
    // error handler that reset would crash the listener and close every port of the pod.
    const server = (ports: number[]) =>
      `const net = require("node:net"); for (const p of ${JSON.stringify(ports)}) net.createServer((s) => { s.on("error", () => {}); s.end("ok"); }).listen(p);`;

    async function startPod(
      ns: string,
      name: string,
      labels: Record<string, string>,
      ports: { name?: string; containerPort: number }[],
    ): Promise<void> {
      await api.ok("POST", `/api/v1/namespaces/${ns}/pods`, {
        metadata: { name, labels },
        spec: {
          ...REAL_NODE_SCHEDULING,
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: "probe",
              image,
              imagePullPolicy: "Never",
              command: ["node", "-e", server(ports.map((p) => p.containerPort))],
              ports: ports.map((p) => ({ ...p, protocol: "TCP" })),
            },
          ],
        },
      });
      pods[name] = { ns, name, ip: "" };
    }

    async function waitRunning(): Promise<void> {
      for (const p of Object.values(pods)) {
        p.ip = await eventuallyPasses(`pod ${p.ns}/${p.name} Running with an IP`, async () => {
          const pod = (await api.ok("GET", `/api/v1/namespaces/${p.ns}/pods/${p.name}`)) as Pod;
          expect(pod.status?.phase === "Running" && !!pod.status.podIP, JSON.stringify(pod.status)).toBe(
            true,
          );
          return pod.status?.podIP ?? "";
        });
      }
    }

    const pod = (name: string): Probe => {
      const p = pods[name];
      if (!p) throw new Error(`no probe pod ${name}`);
      return p;
    };

    beforeAll(async () => {
      // The machine as it is with no real node: another plane's node (the lock) would be in the snapshot.
      const deadline = Date.now() + 600_000;
      while (existsSync(MACHINE.lockFile) && Date.now() < deadline) await sleep(1_000);
      before = takeFootprint();
      plane = await startControlPlane({
        realNode: { images: ["controller"], services: true, networkPolicies: true },
        log,
      });
      api = plane.api();
      image = plane.state.realNode?.images.controller?.name ?? "";

      // The overlay rendered as a user renders it; the Namespace and every NetworkPolicy applied as is
      // (the rest of the install is the install test's).
      const { stdout } = await run("kubectl", ["kustomize", OVERLAY], { maxBuffer: 16 * 1024 * 1024 });
      const objects = parseAllDocuments(stdout).map((d) => d.toJSON() as Obj);
      const namespace = objects.find((o) => o.kind === "Namespace" && o.metadata.name === NS);
      policies = objects.filter((o) => o.kind === "NetworkPolicy");
      expect(policies.map((p) => p.metadata.name).sort()).toEqual([
        "agent-controller-admission-ingress",
        "agent-gateway",
        "agent-job-egress",
        "agent-job-gateway-egress",
        "agent-job-private-egress",
        "agent-job-realtime-ingress",
      ]);
      await api.ok("POST", "/api/v1/namespaces", namespace);
      for (const ns of ["models", "elsewhere"])
        await api.ok("POST", "/api/v1/namespaces", { metadata: { name: ns } });
      for (const ns of [NS, "models", "elsewhere"]) await defaultServiceAccount(api, ns);
      for (const p of policies)
        await api.ok("POST", `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`, p);

      // The controller's three named ports as its Deployment declares them (the admission policy
      // names them); run pods with the supervisor's 8090; a model gateway; pods with no product label.
      await startPod(NS, "controller", CONTROLLER, [
        { name: "admission", containerPort: 9443 },
        { name: "api", containerPort: 8082 },
        { name: "health", containerPort: 8081 },
      ]);
      await startPod(NS, "realtime-run", REALTIME, [{ containerPort: 8090 }]);
      await startPod(NS, "other-run", REALTIME, [{ containerPort: 8090 }]);
      await startPod(NS, "neighbour", { app: "neighbour" }, [{ containerPort: 8090 }]);
      await startPod("models", "model-gateway", { app: "model-gateway" }, [{ containerPort: 8080 }]);
      // components/gateway's pods, with the named ports its Deployment declares (its policy names them).
      await startPod(NS, "gateway", GATEWAY, [
        { name: "api", containerPort: 8080 },
        { name: "metrics", containerPort: 9090 },
        { name: "egress", containerPort: 3128 },
      ]);
      await startPod("elsewhere", "client", { app: "client" }, [{ containerPort: 8090 }]);
      await waitRunning();
      await startPeerNode();
      await startPublicHost();
      // The engine filters a pod once it has its chain: wait for every pod.
      const ips = Object.values(pods).map((p) => p.ip);
      await eventually(
        `kube-router's firewall chain for each of ${ips.join(", ")}`,
        () => engineFilters(ips) || undefined,
        30_000,
      );
    }, 1_500_000);

    afterAll(async () => {
      peerNode?.kill("SIGKILL");
      await stopPublicHost();
      await plane?.stop();
    });

    it("a control-plane node's address on the pod network (the API server's) reaches the webhook port 9443", async () => {
      expect(await reachFromPeerNode(pod("controller"), 9443)).toBe("open");
    });

    it("a pod on the pod network cannot reach the webhook port 9443", async () => {
      expect(await reach(pod("client"), pod("controller"), 9443)).toMatch(BLOCKED);
      expect(await reach(pod("neighbour"), pod("controller"), 9443)).toMatch(BLOCKED);
    });

    it("any pod reaches the controller's prompt API (8082) and health port (8081)", async () => {
      for (const from of ["client", "neighbour"]) {
        expect(await reach(pod(from), pod("controller"), 8082)).toBe("open");
        expect(await reach(pod(from), pod("controller"), 8081)).toBe("open");
      }
    });

    it("a controller pod reaches a realtime run pod's supervisor on 8090; no other pod does", async () => {
      expect(await reach(pod("controller"), pod("realtime-run"), 8090)).toBe("open");
      expect(await reach(pod("neighbour"), pod("realtime-run"), 8090)).toMatch(BLOCKED);
      expect(await reach(pod("client"), pod("realtime-run"), 8090)).toMatch(BLOCKED);
    });

    it("a run pod cannot reach another run pod", async () => {
      expect(await reach(pod("other-run"), pod("realtime-run"), 8090)).toMatch(BLOCKED);
      expect(await reach(pod("realtime-run"), pod("other-run"), 8090)).toMatch(BLOCKED);
    });

    it("a run pod reaches an in-cluster model endpoint only through the egress policy docs/deploy.md gives", async () => {
      const probe = () => reach(pod("realtime-run"), pod("model-gateway"), 8080);
      expect(await probe()).toBe("open");
      await api.ok(
        "DELETE",
        `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies/agent-job-private-egress`,
      );
      await probeUntil("the private endpoint cut off", probe, BLOCKED);
      const egress = policies.find((p) => p.metadata.name === "agent-job-private-egress");
      await api.ok("POST", `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`, egress);
      await probeUntil("the private endpoint reached again", probe, OPEN);
    });

    it("a run pod reaches the gateway's API port 8080 and its egress proxy 3128; a controller pod and other pods do not", async () => {
      for (const port of [8080, 3128]) {
        expect(await reach(pod("realtime-run"), pod("gateway"), port), String(port)).toBe("open");
        for (const from of ["controller", "neighbour", "client"]) {
          expect(await reach(pod(from), pod("gateway"), port), `${from} to ${port}`).toMatch(BLOCKED);
        }
      }
    });

    it("any pod but a run pod reaches the gateway's metrics port 9090; a run pod's egress stops it", async () => {
      for (const from of ["controller", "neighbour", "client"]) {
        expect(await reach(pod(from), pod("gateway"), 9090), from).toBe("open");
      }
      // agent-job-gateway-egress opens 8080 and 3128 only; agent-job-egress closes private addresses.
      expect(await reach(pod("realtime-run"), pod("gateway"), 9090)).toMatch(BLOCKED);
    });

    it("with the gateway on, a run pod reaches no public host directly; the gateway does, on 80 and 443", async () => {
      for (const port of [80, 443]) {
        expect(await reach(pod("realtime-run"), PUBLIC, port), `run pod to ${port}`).toMatch(BLOCKED);
        expect(await reach(pod("gateway"), PUBLIC, port), `gateway to ${port}`).toBe("open");
      }
    });

    it("the base's own run-pod policy (no gateway) lets a run pod reach the public host: the component's patch is what closes it", async () => {
      const { stdout } = await run("kubectl", ["kustomize", resolve(import.meta.dirname, "../../deploy")], {
        maxBuffer: 16 * 1024 * 1024,
      });
      const base = parseAllDocuments(stdout)
        .map((d) => d.toJSON() as Obj & { spec: unknown })
        .find((o) => o.kind === "NetworkPolicy" && o.metadata.name === "agent-job-egress");
      const path = `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies/agent-job-egress`;
      const current = (await api.ok("GET", path)) as Obj & {
        spec: unknown;
        metadata: { resourceVersion?: string };
      };
      await api.ok("PUT", path, { ...current, spec: base?.spec });
      const probe = () => reach(pod("realtime-run"), PUBLIC, 443);
      await probeUntil("the public host reached under the base's policy", probe, OPEN);
      const again = (await api.ok("GET", path)) as Obj & { metadata: { resourceVersion?: string } };
      await api.ok("PUT", path, { ...again, spec: current.spec });
      await probeUntil("the public host cut off again with the gateway's patch", probe, BLOCKED);
    });

    it("the gateway reaches no pod: its egress is DNS and public 80 and 443", async () => {
      expect(await reach(pod("gateway"), pod("neighbour"), 8090)).toMatch(BLOCKED);
      expect(await reach(pod("gateway"), pod("controller"), 8081)).toMatch(BLOCKED);
      expect(await reach(pod("gateway"), pod("model-gateway"), 8080)).toMatch(BLOCKED);
    });

    it("with only the pod CIDR excepted, the node's pod-network address is cut off from 9443 (why the overlay lists it)", async () => {
      const path = `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies/${ADMISSION_POLICY}`;
      const patch = (ops: unknown[]) => api.ok("PATCH", path, ops, "application/json-patch+json");
      await patch([
        { op: "test", path: "/spec/ingress/1/from/2/ipBlock/cidr", value: `${PEER_NODE.ip}/32` },
        { op: "remove", path: "/spec/ingress/1/from/2" },
      ]);
      await probeUntil(
        "9443 cut off from the node",
        () => reachFromPeerNode(pod("controller"), 9443),
        BLOCKED,
      );
      await patch([
        { op: "add", path: "/spec/ingress/1/from/-", value: { ipBlock: { cidr: `${PEER_NODE.ip}/32` } } },
      ]);
      await probeUntil("9443 open to the node again", () => reachFromPeerNode(pod("controller"), 9443), OPEN);
    });

    it("with the policies deleted, every closed path connects: the engine closed them", async () => {
      await api.ok("DELETE", `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`);
      // The engine drops each policy's rules on its own sync: every path is waited for.
      await probeUntil("client to 9443", () => reach(pod("client"), pod("controller"), 9443), OPEN);
      await probeUntil(
        "neighbour to a run pod",
        () => reach(pod("neighbour"), pod("realtime-run"), 8090),
        OPEN,
      );
      await probeUntil("run pod to run pod", () => reach(pod("other-run"), pod("realtime-run"), 8090), OPEN);
      await probeUntil(
        "run pod to the model gateway",
        () => reach(pod("realtime-run"), pod("model-gateway"), 8080),
        OPEN,
      );
      await probeUntil(
        "neighbour to the gateway's 8080",
        () => reach(pod("neighbour"), pod("gateway"), 8080),
        OPEN,
      );
      await probeUntil(
        "run pod to the gateway's 9090",
        () => reach(pod("realtime-run"), pod("gateway"), 9090),
        OPEN,
      );
      await probeUntil("the gateway to a pod", () => reach(pod("gateway"), pod("neighbour"), 8090), OPEN);
      await probeUntil("a run pod to the public host", () => reach(pod("realtime-run"), PUBLIC, 443), OPEN);
    });

    it("leaves the firewall (the engine's chains and ipsets), the processes and the sysctls as they were after stop", async () => {
      peerNode?.kill("SIGKILL");
      await stopPublicHost();
      const during = takeFootprint(Object.keys(before.sysctls));
      expect(during.firewall).toContain(":KUBE-ROUTER-FORWARD");
      expect(during.processes.join("\n")).toContain("kube-router");
      await plane?.stop();
      plane = undefined;
      await eventuallyPasses(
        "the machine's footprint as it was",
        () => {
          expect(takeFootprint(Object.keys(before.sysctls))).toEqual(before);
        },
        20_000,
        500,
      );
    });
  },
);
