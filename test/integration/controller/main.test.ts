/** `npm run controller` as a real process: serves health and metrics, reconciles, exits on SIGTERM. */
import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import {
  createTestNamespace,
  kubeConfig,
  kubeconfigPath,
  podScriptAnnotations,
} from "../../harness/context.js";
import { eventually, eventuallyPasses } from "../../harness/eventually.js";
import { freePort } from "../../harness/ports.js";
import { clientFor, createAgent, createDefinition, createStation, waitForPhase } from "./helpers.js";

const MAIN = join(dirname(fileURLToPath(import.meta.url)), "../../../src/controller/main.ts");
let child: ChildProcess | undefined;

afterAll(() => {
  child?.kill("SIGKILL");
});

describe("the controller process", () => {
  it("serves /healthz, /readyz and /metrics, runs an Agent, and exits 0 on SIGTERM releasing the Lease", async () => {
    const client = await clientFor(kubeConfig());
    const ns = await createTestNamespace("ctrl-main");
    await createDefinition(client, ns, "def");
    await createStation(client, ns, "st", "def", { annotations: podScriptAnnotations({ exitCode: 0 }) });
    const port = await freePort();
    child = spawn(process.execPath, ["--import", "tsx", MAIN], {
      env: {
        ...process.env,
        KUBECONFIG: kubeconfigPath(),
        NAMESPACE: ns,
        POD_NAME: "main-smoke",
        HEALTH_PORT: String(port),
        HEALTH_HOST: "127.0.0.1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<number | null>((resolve) => child?.on("exit", (code) => resolve(code)));
    const base = `http://127.0.0.1:${port}`;
    await eventually("/readyz 200", async () => (await fetch(`${base}/readyz`)).status === 200);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    await createAgent(client, ns, "main-1", "st");
    const done = await waitForPhase(client, ns, "main-1", ["Succeeded", "Failed"]);
    expect(done.status?.phase).toBe("Succeeded");
    // The run's metrics are recorded after its terminal patch, which the wait above may see first.
    await eventuallyPasses("the run's metrics", async () => {
      const metrics = await (await fetch(`${base}/metrics`)).text();
      for (const name of [
        "controller_resyncs_total",
        "controller_watch_reconnects_total",
        "controller_agents",
        "controller_runs_completed_total",
        "controller_run_duration_seconds",
        "controller_run_queue_seconds",
        "controller_run_failures_total",
        "controller_batch_cleanup_failures_total",
        "controller_reconcile_errors_total",
        "controller_sink_deliveries_total",
      ]) {
        expect(metrics).toContain(`# TYPE ${name} `);
      }
      expect(metrics).toContain('controller_runs_completed_total{phase="Succeeded",exit_code="0"} 1');
      expect(metrics).toContain('controller_sink_deliveries_total{outcome="failed"} 0');
    });
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    child = undefined;
    const lease = await client.get<{ spec: { holderIdentity?: string } }>(
      { group: "coordination.k8s.io", version: "v1", plural: "leases" },
      ns,
      "agent-controller",
    );
    expect(lease?.spec.holderIdentity ?? "").toBe("");
    await client.close();
  });
});
