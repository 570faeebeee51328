/**
 * A leader whose Lease renewal fails once (an API-server blip, a refused write) steps down and wins
 * the Lease back at its next tick. Its Agent watch must resume from the last resourceVersion the
 * previous term saw and count as a reconnect, with no LIST of whole Agents
 * (docs/controller.md#process-structure), and the new term must still run Agents.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentController } from "../../../src/controller/controller.js";
import type { ControllerReplica } from "../../../src/controller/process.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { AGENTS, LEASES } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig, podScriptAnnotations } from "../../harness/context.js";
import { eventually } from "../../harness/eventually.js";
import {
  clientFor,
  createAgent,
  createDefinition,
  createStation,
  startReplica,
  waitForPhase,
} from "./helpers.js";

let client: KubeClient;
let controllerClient: KubeClient;
let ns: string;
let replica: ControllerReplica;
/** Every Agent WATCH and LIST the controller sent, in order. */
const agentCalls: string[] = [];
let failRenewals = 0;

async function instrumentedClient(): Promise<KubeClient> {
  const c = await clientFor(kubeConfig());
  const watch = c.watch.bind(c);
  c.watch = ((r, namespace, o, onEvent) => {
    if (r === AGENTS) agentCalls.push(`watch@${o.resourceVersion}`);
    return watch(r, namespace, o, onEvent);
  }) as KubeClient["watch"];
  const list = c.list.bind(c);
  c.list = ((r, namespace, o) => {
    if (r === AGENTS) agentCalls.push(o?.metadataOnly ? "list-metadata" : "list");
    return list(r, namespace, o);
  }) as KubeClient["list"];
  const mergePatch = c.mergePatch.bind(c);
  c.mergePatch = ((r, namespace, name, patch, signal) => {
    if (r === LEASES && failRenewals > 0) {
      failRenewals--;
      return Promise.reject(new Error("injected: Lease renewal refused"));
    }
    return mergePatch(r, namespace, name, patch, signal);
  }) as KubeClient["mergePatch"];
  return c;
}

async function reconnects(): Promise<number> {
  const m = await replica.metrics.registry.getSingleMetric("controller_watch_reconnects_total")?.get();
  return m?.values[0]?.value ?? 0;
}

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  controllerClient = await instrumentedClient();
  ns = await createTestNamespace("ctrl-resume");
  await createDefinition(client, ns, "def");
  await createStation(client, ns, "quick", "def", {
    successfulRunsHistoryLimit: 20,
    annotations: podScriptAnnotations({ exitCode: 0, runTime: "1s" }),
  });
  // A watch timeout long enough that only the step-down ends the first watch.
  replica = await startReplica(controllerClient, ns, "replica-a", {}, { watchTimeoutSeconds: 120 });
  await eventually("leadership", async () => replica.isLeader && replica.controller?.synced);
});

afterAll(async () => {
  await replica?.stop();
  await controllerClient?.close();
  await client?.close();
});

describe("a step-down and a new term of the same replica", () => {
  it("resumes the Agent watch from the last resourceVersion seen, counted, without re-listing", async () => {
    await createAgent(client, ns, "before-1", "quick");
    await waitForPhase(client, ns, "before-1", ["Succeeded"]);
    const first = replica.controller as AgentController;
    await eventually(
      "the first term's watch cursor past its LIST",
      async () => first.agents.resourceVersion !== "",
    );
    const reconnectsBefore = await reconnects();
    const callsBefore = agentCalls.length;

    failRenewals = 1;
    const second = await eventually(
      "a new term",
      async () =>
        replica.isLeader && replica.controller !== first && replica.controller?.synced && replica.controller,
    );
    // What the first term had seen when it stopped: the cursor its last watch had reached.
    const lastSeen = first.agents.resourceVersion;
    await eventually("the new term's Agent watch", async () =>
      agentCalls.slice(callsBefore).some((c) => c.startsWith("watch@")),
    );
    const after = agentCalls.slice(callsBefore);
    expect(after.find((c) => c.startsWith("watch@"))).toBe(`watch@${lastSeen}`);
    expect(after).not.toContain("list");
    expect(await reconnects()).toBeGreaterThan(reconnectsBefore);

    await createAgent(client, ns, "after-1", "quick");
    const done = await waitForPhase(client, ns, "after-1", ["Succeeded", "Failed"]);
    expect(done.status?.phase).toBe("Succeeded");
    expect(second.agents.cache.get("after-1")).toBeDefined();
  });
});
