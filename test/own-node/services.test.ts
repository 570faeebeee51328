/**
 * ClusterIP Services on the real node (docs/real-node.md "Services"): kube-proxy of the plane's
 * release serves the `kubernetes` Service to in-cluster clients (a pod's ServiceAccount token, the
 * API server's certificate checked against kube-root-ca.crt) and a Service in front of a pod; the
 * firewall rules kube-proxy wrote are gone after stop.
 */
import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HarnessApi } from "../harness/api.js";
import { type ControlPlane, defaultServiceAccount, startControlPlane } from "../harness/cluster.js";
import { eventuallyPasses } from "../harness/eventually.js";
import { type Footprint, takeFootprint } from "../harness/real-node/footprint.js";
import { MACHINE, REAL_NODE_SCHEDULING, realNodeProblem } from "../harness/real-node/index.js";

const problem = realNodeProblem();
const log = (m: string) => process.stderr.write(`[services test] ${m}\n`);
const ns = "services";

type Pod = { status?: { phase?: string; podIP?: string } };

async function waitPhase(api: HarnessApi, name: string, phases: string[]): Promise<void> {
  await eventuallyPasses(`pod ${name} ${phases.join("/")}`, async () => {
    const pod = (await api.ok("GET", `/api/v1/namespaces/${ns}/pods/${name}`)) as Pod;
    expect(phases, JSON.stringify(pod.status)).toContain(pod.status?.phase ?? "");
  });
}

async function podLog(api: HarnessApi, name: string): Promise<string> {
  const res = await api.request("GET", `/api/v1/namespaces/${ns}/pods/${name}/log`);
  return res.body;
}

describe.skipIf(problem !== "")(`Services on the real node${problem ? ` (skipped: ${problem})` : ""}`, () => {
  let before: Footprint;
  let plane: ControlPlane | undefined;
  let api: HarnessApi;
  let image: string;

  /** A pod of the controller image (it has node) running `script` on the real node. */
  const nodePod = (name: string, script: string, labels: Record<string, string> = {}) => ({
    metadata: { name, labels },
    spec: {
      ...REAL_NODE_SCHEDULING,
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: "c",
          image,
          imagePullPolicy: "Never",
          command: ["node", "-e", script],
          ports: [{ containerPort: 8080 }],
        },
      ],
    },
  });

  beforeAll(async () => {
    // The machine as it is with no real node: another plane's node (the lock) would be in the snapshot.
    const deadline = Date.now() + 600_000;
    while (existsSync(MACHINE.lockFile) && Date.now() < deadline) await sleep(1_000);
    before = takeFootprint();
    plane = await startControlPlane({ realNode: { images: ["controller"], services: true }, log });
    api = plane.api();
    image = plane.state.realNode?.images.controller?.name ?? "";
    await api.ok("POST", "/api/v1/namespaces", { metadata: { name: ns } });
    await defaultServiceAccount(api, ns);
  }, 1_500_000);

  afterAll(async () => {
    await plane?.stop();
  });

  it("an in-cluster client reaches the API server through the kubernetes Service with its ServiceAccount token", async () => {
    const script = `
      const fs = require("node:fs"), https = require("node:https");
      const sa = "/var/run/secrets/kubernetes.io/serviceaccount/";
      https.get({
        host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT,
        path: "/api/v1/namespaces/${ns}/serviceaccounts/default", servername: "kubernetes.default.svc",
        ca: fs.readFileSync(sa + "ca.crt"), headers: { authorization: "Bearer " + fs.readFileSync(sa + "token", "utf8") },
      }, (res) => { let b = ""; res.on("data", (d) => (b += d)); res.on("end", () => { console.log(res.statusCode, process.env.KUBERNETES_SERVICE_HOST, b.slice(0, 300)); process.exit(0); }); })
        .on("error", (e) => { console.log("error", e.message); process.exit(1); });`;
    await api.ok("POST", `/api/v1/namespaces/${ns}/pods`, nodePod("api-client", script));
    await waitPhase(api, "api-client", ["Succeeded", "Failed"]);
    const out = await podLog(api, "api-client");
    // 403: authenticated as the pod's ServiceAccount (system:serviceaccount:services:default), which
    // has no RBAC to read ServiceAccounts: the token, the CA and the Service all worked.
    expect(out).toMatch(/^403 10\.96\.0\.1 .*system:serviceaccount:services:default/);
  });

  it("a ClusterIP Service in front of a pod is reached from another pod", async () => {
    const server = `require("node:http").createServer((q, s) => s.end("hello from " + process.env.HOSTNAME)).listen(8080)`;
    await api.ok("POST", `/api/v1/namespaces/${ns}/pods`, nodePod("echo", server, { app: "echo" }));
    const svc = (await api.ok("POST", `/api/v1/namespaces/${ns}/services`, {
      metadata: { name: "echo" },
      spec: { selector: { app: "echo" }, ports: [{ port: 80, targetPort: 8080 }] },
    })) as { spec: { clusterIP: string } };
    await waitPhase(api, "echo", ["Running"]);
    const client = `
      const url = "http://${svc.spec.clusterIP}/";
      (async () => { for (let i = 0; i < 100; i++) { try { const r = await fetch(url); console.log(await r.text()); process.exit(0); } catch { await new Promise((r) => setTimeout(r, 200)); } } console.log("unreachable"); process.exit(1); })();`;
    await api.ok("POST", `/api/v1/namespaces/${ns}/pods`, nodePod("echo-client", client));
    await waitPhase(api, "echo-client", ["Succeeded", "Failed"]);
    expect(await podLog(api, "echo-client")).toContain("hello from echo");
  });

  it("leaves the firewall, the processes and the sysctls as they were after stop", async () => {
    const during = takeFootprint(Object.keys(before.sysctls));
    expect(during.firewall).not.toEqual(before.firewall);
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
});
