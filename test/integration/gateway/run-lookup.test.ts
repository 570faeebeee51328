/**
 * The gateway's cluster adapters against the real API server (docs/gateway.md#run-credentials,
 * docs/gateway.md#provider-keys), reading as the gateway's ServiceAccount with the Role
 * components/gateway ships (impersonated, RBAC on): an Agent is active, then terminal once its
 * phase says so, then deleted, and a namesake under a new uid does not revive the old credential;
 * the key is the agent-secrets entry the Station's definition names; the Role lets the gateway do
 * what its code does and write nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent as UndiciAgent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent, AgentDefinition, Station } from "../../../src/core/types.js";
import { definitionKeySource } from "../../../src/gateway/definition-keys.js";
import { RunUnconfirmedError } from "../../../src/gateway/ports.js";
import { ClusterRunLookup } from "../../../src/gateway/run-lookup.js";
import { KubeClient } from "../../../src/kube/client.js";
import { KubeApiError } from "../../../src/kube/errors.js";
import { AGENT_DEFINITIONS, AGENTS, SECRETS, STATIONS } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig } from "../../harness/context.js";
import { impersonating, installGatewayRole } from "./gateway-cluster.js";

let ns: string;
let admin: KubeClient;
/** The API server as the gateway's ServiceAccount of `ns` sees it. */
let gateway: KubeClient;
const secretsDir = mkdtempSync(join(tmpdir(), "gw-agent-secrets-"));

async function createAgent(name: string): Promise<Agent> {
  const { object } = await admin.create<Agent>(AGENTS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: { name },
    spec: { stationRef: "st" },
  } as Agent);
  if (!object?.metadata.uid) throw new Error(`Agent ${name} was not created`);
  return object;
}

const refOf = (a: Agent) => ({ namespace: ns, name: a.metadata.name ?? "", uid: a.metadata.uid ?? "" });

beforeAll(async () => {
  admin = await KubeClient.fromKubeConfig(kubeConfig());
  ns = await createTestNamespace("gw-lookup");
  await installGatewayRole(admin, ns);
  gateway = await impersonating(`system:serviceaccount:${ns}:agent-gateway`);
  await admin.create<AgentDefinition>(AGENT_DEFINITIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name: "def" },
    spec: {
      prompt: "Summarise the README.",
      model: "claude-sonnet-4-5",
      execution: "interactive",
      resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }] },
    },
  } as AgentDefinition);
  await admin.create<Station>(STATIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name: "st" },
    spec: {
      agentDefRef: "def",
      template: { spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] } },
    },
  } as Station);
  // agent-secrets as the gateway pod mounts it: one file per key.
  writeFileSync(join(secretsDir, "anthropic-key"), "sk-ant-from-agent-secrets\n");
});

afterAll(async () => {
  await gateway?.close();
  await admin?.close();
  rmSync(secretsDir, { recursive: true, force: true });
});

describe("the gateway's run lookup on a real API server, as its ServiceAccount", () => {
  it("an Agent is active, terminal once its phase is, deleted once it is gone, and a namesake does not revive its credential", async () => {
    const agent = await createAgent("lookup-run");
    const run = refOf(agent);
    // No cache between the steps: every answer below is the API server's.
    const lookup = () =>
      new ClusterRunLookup({
        namespace: ns,
        getAgent: (n, name) => gateway.get<Agent>(AGENTS, n, name),
        timings: { activeMs: 0, finalMs: 0 },
      });
    expect(await lookup().runState(run)).toEqual({ state: "active" });
    expect(await lookup().stationOf(run)).toBe("st");

    const current = await admin.get<Agent>(AGENTS, ns, "lookup-run");
    expect(
      await admin.patchStatus(AGENTS, ns, "lookup-run", current?.metadata.resourceVersion ?? "", {
        phase: "Succeeded",
      }),
    ).toBe("ok");
    expect(await lookup().runState(run)).toEqual({ state: "terminal", phase: "Succeeded" });

    expect(await admin.delete(AGENTS, ns, "lookup-run")).toBe(true);
    expect(await lookup().runState(run)).toEqual({ state: "deleted" });

    const namesake = await createAgent("lookup-run");
    expect(namesake.metadata.uid).not.toBe(run.uid);
    expect(await lookup().runState(run)).toEqual({ state: "deleted" });
    expect(await lookup().runState(refOf(namesake))).toEqual({ state: "active" });
  });

  it("the key is the agent-secrets entry the Station's definition names; a vendor it names none for is refused naming both", async () => {
    const agent = await createAgent("key-run");
    const runs = new ClusterRunLookup({
      namespace: ns,
      getAgent: (n, name) => gateway.get<Agent>(AGENTS, n, name),
    });
    const keys = definitionKeySource({
      namespace: ns,
      secretsDir,
      stationOf: (run) => runs.stationOf(run),
      getStation: (n, name) => gateway.get<Station>(STATIONS, n, name),
      getDefinition: (n, name) => gateway.get<AgentDefinition>(AGENT_DEFINITIONS, n, name),
    });
    expect(await runs.runState(refOf(agent))).toEqual({ state: "active" });
    expect(await keys.keyFor(refOf(agent), "anthropic")).toEqual({ key: "sk-ant-from-agent-secrets" });
    expect(await keys.keyFor(refOf(agent), "gemini")).toEqual({
      missing: `AgentDefinition ${ns}/def has no resources.secrets entry named GEMINI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY`,
    });
  });

  it("the Role lets the gateway read what its code reads and write nothing: no status, no Secret", async () => {
    const agent = await createAgent("rbac-run");
    const refused = async (what: Promise<unknown>) => {
      const err = await what.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(KubeApiError);
      expect((err as KubeApiError).status).toBe(403);
    };
    await refused(
      gateway.patchStatus(AGENTS, ns, "rbac-run", agent.metadata.resourceVersion ?? "", { phase: "Failed" }),
    );
    await refused(gateway.mergePatch(AGENTS, ns, "rbac-run", { metadata: { labels: { x: "y" } } }));
    await refused(
      gateway.request("DELETE", `/apis/agents.re-cinq.com/v1beta1/namespaces/${ns}/agents/rbac-run`),
    );
    await refused(gateway.list(AGENTS, ns));
    await refused(gateway.get(SECRETS, ns, "agent-secrets"));
    // Another namespace's Agents are not the gateway's to read.
    await refused(gateway.get(AGENTS, "default", "rbac-run"));
  });

  it("an API server that cannot be reached: refused (fail closed), nothing answered from nowhere", async () => {
    const down = new KubeClient({
      server: "https://127.0.0.1:1",
      dispatcher: new UndiciAgent({ connect: { rejectUnauthorized: false } }),
      headers: async () => ({}),
      requestTimeoutMs: 2_000,
    });
    try {
      const lookup = new ClusterRunLookup({
        namespace: ns,
        getAgent: (n, name) => down.get<Agent>(AGENTS, n, name),
      });
      await expect(lookup.runState({ namespace: ns, name: "any", uid: "u-1" })).rejects.toEqual(
        new RunUnconfirmedError("the Kubernetes API server cannot be reached"),
      );
    } finally {
      await down.close();
    }
  });
});
