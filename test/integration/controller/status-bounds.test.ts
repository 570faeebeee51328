/**
 * A bill within bounds and a status within bounds (docs/cost-and-budgets.md, docs/run-pod.md) on a
 * real API server and controller: a run's forged session id and
 * forged tokens reach the status only within their bounds (the id dropped whole and failureReason
 * saying why, the tokens cut to what the run's wall time allows and the bill charged that bound,
 * flagged), and a terminal status too large for the API server (413) is written again without the
 * oversized field, the output kept, rather than leaving the Agent Running.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Executor } from "../../../src/controller/executor.js";
import { RunMemory } from "../../../src/controller/memory.js";
import { ControllerMetrics } from "../../../src/controller/metrics.js";
import type { ControllerReplica } from "../../../src/controller/process.js";
import type { KubeEvent } from "../../../src/core/actions.js";
import type { Agent } from "../../../src/core/types.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { KUBE_EVENTS } from "../../../src/kube/event-writer.js";
import { AGENTS, resourcePath } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig, podScriptAnnotations } from "../../harness/context.js";
import { eventually } from "../../harness/eventually.js";
import {
  clientFor,
  createAgent,
  createDefinition,
  createStation,
  getAgent,
  startReplica,
  waitForPhase,
} from "./helpers.js";

let client: KubeClient;
let ns: string;
let replica: ControllerReplica;

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  ns = await createTestNamespace("ctrl-bounds");
  await createDefinition(client, ns, "def");
  replica = await startReplica(await clientFor(kubeConfig()), ns, "replica-b");
  await eventually("leadership", async () => replica.isLeader && replica.controller?.synced);
});

afterAll(async () => {
  await replica?.stop();
  await client?.close();
});

describe("what a run's own lines can put into its status", () => {
  it("a 2,000-character session id is dropped whole and forged tokens are charged the bound, both said", async () => {
    const forged = [
      JSON.stringify({ type: "system", subtype: "init", model: "claude-opus-5-5", session_id: "s-1" }),
      // M1's figure: 2^53 - 1 output tokens; and an id no CLI announces (M3, within the kwok log's size).
      JSON.stringify({
        type: "result",
        subtype: "success",
        session_id: "x".repeat(2000),
        usage: { input_tokens: 10, output_tokens: Number.MAX_SAFE_INTEGER },
      }),
    ].join("\n");
    await createStation(client, ns, "stn-forged", "def", {
      annotations: podScriptAnnotations({ exitCode: 0, logs: { agent: forged } }),
    });
    await createAgent(client, ns, "forged-ids", "stn-forged");
    const done = await waitForPhase(client, ns, "forged-ids", ["Succeeded", "Failed"]);
    expect(done.status?.phase).toBe("Succeeded");
    // The id: dropped, never shortened; failureReason (and so the Complete condition) says why.
    expect(done.status?.sessionId ?? "").toBe("");
    expect(done.status?.failureReason).toMatch(/status\.sessionId not recorded: .*2000 characters/);
    const complete = done.status?.conditions?.find((c) => c.type === "Complete");
    expect(complete?.message).toContain("status.sessionId not recorded");
    // The bill: the tokens cut to the wall time's bound, the bill the bound, flagged three ways.
    expect(done.status?.costSource).toBe("bounded");
    expect(Number(done.status?.costUSD)).toBeGreaterThan(0);
    expect(Number(done.status?.costUSD)).toBeLessThan(100_000);
    expect(done.status?.usage?.outputTokens).toBeLessThan(Number.MAX_SAFE_INTEGER);
    expect(done.status?.costNote).toMatch(/more tokens than it could have consumed/);
    const bounded = done.status?.conditions?.find((c) => c.type === "CostBounded");
    expect(bounded).toMatchObject({ status: "True", reason: "ChargedAtBound" });
    type Listed = { reason: string; regarding: { uid: string } };
    await eventually("the CostBounded Event", async () => {
      const l = await client.request<{ items: Listed[] }>("GET", resourcePath(KUBE_EVENTS, ns));
      return l.items.find((e) => e.reason === "CostBounded" && e.regarding.uid === done.metadata.uid);
    });
  });
});

describe("a terminal status too large for the API server (413)", () => {
  it("M3: written again without the oversized field; the output and the cost stay, the Agent leaves Running", async () => {
    // A namespace no controller serves: nothing else writes this Agent's status meanwhile.
    const quiet = await createTestNamespace("ctrl-bounds-quiet");
    await client.create(AGENTS, quiet, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: { name: "too-large" },
      spec: { stationRef: "any" },
    });
    const created = await eventually("the Agent", () => getAgent(client, quiet, "too-large"));
    const events: KubeEvent[] = [];
    const executor = new Executor({
      client,
      namespace: quiet,
      memory: new RunMemory(),
      metrics: new ControllerMetrics(),
      provider: () => {
        throw new Error("no provider");
      },
      kubeEvents: { record: (_: unknown, e: KubeEvent) => events.push(e) } as never,
      now: () => Date.now(),
      log: () => {},
    });
    const status = {
      phase: "Succeeded",
      exitCode: 0,
      completedAt: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
      output: "the run's output",
      costUSD: "1.5",
      costSource: "reported",
      // What the old read-back wrote from a 4 MiB session_id: a 4.4 MB patch.
      sessionId: "s".repeat(4 * 1024 * 1024),
    };
    const latest = (await getAgent(client, quiet, "too-large")) as Agent;
    const report = await executor.execute(latest, [
      {
        id: "patch-status",
        type: "patchStatus",
        agent: { namespace: quiet, name: "too-large", uid: created.metadata.uid ?? "" },
        resourceVersion: latest.metadata.resourceVersion ?? "",
        status,
      } as never,
    ]);
    expect(report.succeeded).toEqual(["patch-status"]);
    const after = (await getAgent(client, quiet, "too-large")) as Agent;
    expect(after.status?.phase).toBe("Succeeded");
    expect(after.status?.output).toBe("the run's output");
    expect(after.status?.costUSD).toBe("1.5");
    expect(after.status?.sessionId).toBeUndefined();
    expect(events[0]).toMatchObject({ reason: "StatusFieldsDropped" });
    expect(events[0]?.note).toContain("413");
    expect(events[0]?.note).toContain("status.sessionId");
  });
});
