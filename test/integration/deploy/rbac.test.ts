/**
 * The install as shipped, judged by the real API server: base + components/batch + components/realtime
 * apply cleanly, and the controller's service account can do exactly what the controller's code does
 * (RBAC authorization is on in the local control plane).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type StagedInstall, stageInstall } from "../../deploy/render.js";
import { kubeconfigPath } from "../../harness/context.js";
import { eventuallyPasses } from "../../harness/eventually.js";

const run = promisify(execFile);
const SA = "system:serviceaccount:ai-agents:agent-controller";

/**
 * `resource` is `kind[/name]`, or `kind[subresource]` for a subresource: kubectl reads
 * `pods/log` as the pod named "log", so a subresource goes through --subresource.
 */
async function canI(verb: string, resource: string, namespace = "ai-agents"): Promise<boolean> {
  const sub = /^([^[]+)\[([a-z]+)\]$/.exec(resource);
  try {
    const { stdout } = await run("kubectl", [
      "--kubeconfig",
      kubeconfigPath(),
      "auth",
      "can-i",
      verb,
      sub ? (sub[1] as string) : resource,
      ...(sub ? [`--subresource=${sub[2]}`] : []),
      `--as=${SA}`,
      "-n",
      namespace,
    ]);
    return stdout.trim() === "yes";
  } catch (err) {
    // `kubectl auth can-i` exits 1 with "no".
    const out = (err as { stdout?: string }).stdout?.trim();
    if (out === "no") return false;
    throw err;
  }
}

describe("the shipped install on a real API server", () => {
  let staged: StagedInstall;

  beforeAll(async () => {
    staged = await stageInstall(["batch", "realtime"]);
    await run("kubectl", ["--kubeconfig", kubeconfigPath(), "apply", "-k", staged.dir]);
  });
  afterAll(async () => {
    await staged?.cleanup();
  });

  // Every call the controller process makes (src/controller), and the prompt API's reads.
  it.each([
    ["list", "agents.agents.re-cinq.com"],
    ["watch", "agents.agents.re-cinq.com"],
    ["get", "agents.agents.re-cinq.com"],
    ["patch", "agents.agents.re-cinq.com"],
    ["delete", "agents.agents.re-cinq.com"],
    ["patch", "agents.agents.re-cinq.com[status]"],
    // Owner references with blockOwnerDeletion on the Jobs (OwnerReferencesPermissionEnforcement).
    ["update", "agents.agents.re-cinq.com[finalizers]"],
    ["get", "stations.agents.re-cinq.com"],
    ["list", "stations.agents.re-cinq.com"],
    // A budgeted Station's status.spend (docs/cost-and-budgets.md).
    ["patch", "stations.agents.re-cinq.com[status]"],
    // A finished gateway run's metered calls (docs/gateway.md#metering).
    ["list", "modelusages.agents.re-cinq.com"],
    ["watch", "agentdefinitions.agents.re-cinq.com"],
    ["create", "jobs.batch"],
    ["get", "jobs.batch"],
    ["list", "jobs.batch"],
    ["watch", "jobs.batch"],
    // A Job whose pod can never start (docs/decisions.md D-22).
    ["delete", "jobs.batch"],
    ["list", "pods"],
    ["get", "pods[log]"],
    ["get", "leases.coordination.k8s.io/agent-controller"],
    ["create", "leases.coordination.k8s.io"],
    ["patch", "leases.coordination.k8s.io/agent-controller"],
    ["get", "secrets/agent-secrets"],
    // The price overrides (docs/cost-and-budgets.md#price-overrides).
    ["get", "configmaps/agent-controller-prices"],
    // Kubernetes Events about Agents, and a repeat's series bump.
    ["create", "events.events.k8s.io"],
    ["patch", "events.events.k8s.io"],
  ])("the controller may %s %s", async (verb, resource) => {
    // The API server's RBAC authorizer reads the Roles and bindings through its own cache: a grant
    // just applied may take a moment to be in effect.
    await eventuallyPasses(
      `kubectl auth can-i ${verb} ${resource}`,
      async () => {
        expect(await canI(verb, resource)).toBe(true);
      },
      30_000,
    );
  });

  // Nothing wider than the code needs (docs/decisions.md D-109).
  it.each<[string, string, string]>([
    ["get", "secrets/other-secret", "ai-agents"],
    ["list", "secrets", "ai-agents"],
    ["create", "pods", "ai-agents"],
    ["get", "pods", "ai-agents"],
    ["watch", "pods", "ai-agents"],
    ["update", "jobs.batch", "ai-agents"],
    ["update", "agents.agents.re-cinq.com", "ai-agents"],
    ["update", "agents.agents.re-cinq.com[status]", "ai-agents"],
    ["patch", "stations.agents.re-cinq.com", "ai-agents"],
    ["update", "stations.agents.re-cinq.com[status]", "ai-agents"],
    ["get", "leases.coordination.k8s.io/other-lease", "ai-agents"],
    ["patch", "leases.coordination.k8s.io/other-lease", "ai-agents"],
    ["delete", "leases.coordination.k8s.io/agent-controller", "ai-agents"],
    ["list", "agents.agents.re-cinq.com", "default"],
    ["get", "events.events.k8s.io", "ai-agents"],
    ["delete", "events.events.k8s.io", "ai-agents"],
    ["create", "events", "ai-agents"],
    ["get", "configmaps/other-config", "ai-agents"],
    ["list", "configmaps", "ai-agents"],
    ["update", "configmaps/agent-controller-prices", "ai-agents"],
    // The gateway's records are the gateway's: the controller only reads them.
    ["create", "modelusages.agents.re-cinq.com", "ai-agents"],
    ["update", "modelusages.agents.re-cinq.com", "ai-agents"],
    ["delete", "modelusages.agents.re-cinq.com", "ai-agents"],
  ])("the controller may not %s %s in %s", async (verb, resource, namespace) => {
    expect(await canI(verb, resource, namespace)).toBe(false);
  });
});
