/**
 * Station budgets on the local plane (docs/cost-and-budgets.md): runs whose scripted claude result
 * lines report total_cost_usd spend a small budget; the next Agent is held Pending with the
 * BudgetExhausted condition and Event; a controller restart and history pruning in between lose
 * nothing (the spend is in the Station's status); it starts by itself once the window has moved
 * (an injected clock, moved forward past the window).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerReplica } from "../../../src/controller/process.js";
import { LABEL_AGENT } from "../../../src/core/run-job/job.js";
import type { Station } from "../../../src/core/types.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { KUBE_EVENTS } from "../../../src/kube/event-writer.js";
import { AGENTS, resourcePath, STATIONS } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig, setPodLogs } from "../../harness/context.js";
import { eventually, eventuallyPasses } from "../../harness/eventually.js";
import { clientFor, createAgent, createDefinition, getAgent, startReplica, waitForPhase } from "./helpers.js";

const POD_NAME = "agent-controller-budget-0";
const HOUR = 3_600_000;

let client: KubeClient;
let ns: string;
let replica: ControllerReplica | undefined;
/** The controller's clock runs this far ahead of the wall clock. */
let clockOffsetMs = 0;
const now = () => Date.now() + clockOffsetMs;

const resultLine = (cost: number, input: number, output: number) =>
  JSON.stringify({
    type: "result",
    subtype: "success",
    is_error: false,
    result: "done",
    session_id: "s-1",
    total_cost_usd: cost,
    usage: {
      input_tokens: input,
      output_tokens: output,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 0,
    },
    modelUsage: {
      "claude-sonnet-4-5": {
        inputTokens: input,
        outputTokens: output,
        cacheReadInputTokens: 100,
        costUSD: cost,
      },
    },
  });

async function start(): Promise<ControllerReplica> {
  const r = await startReplica(client, ns, POD_NAME, { now });
  await eventually("leadership", async () => r.isLeader && r.controller?.synced);
  return r;
}

async function runSpending(name: string, cost: number): Promise<void> {
  await setPodLogs(ns, { [LABEL_AGENT]: name }, { agent: [resultLine(cost, 1000, 50)] });
  await createAgent(client, ns, name, "budgeted");
  await waitForPhase(client, ns, name, ["Succeeded"]);
}

const spendOf = async () => (await client.get<Station>(STATIONS, ns, "budgeted"))?.status?.spend ?? [];

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  ns = await createTestNamespace("ctrl-budget");
  await createDefinition(client, ns, "def");
  await client.create(STATIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name: "budgeted" },
    spec: {
      agentDefRef: "def",
      // One finished run kept: the first run is pruned once the second ends.
      successfulRunsHistoryLimit: 1,
      budget: { limitUSD: 0.5, window: "2h" },
      template: { spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] } },
    },
  });
  replica = await start();
});

afterAll(async () => {
  await replica?.stop();
  await client?.close();
});

describe("a Station budget", () => {
  it("records each run's cost, holds the next run once spent, and releases it when the window moves", async () => {
    await runSpending("run-1", 0.3);
    const first = await getAgent(client, ns, "run-1");
    expect(first?.status).toMatchObject({
      costUSD: "0.3",
      costSource: "reported",
      usage: {
        inputTokens: 1000,
        outputTokens: 50,
        cacheReadTokens: 100,
        cacheWriteTokens: 0,
        totalTokens: 1150,
      },
    });
    expect((await spendOf()).map((e) => e.costUSD)).toEqual(["0.3"]);

    await runSpending("run-2", 0.25);
    // Pruning removed run-1; its spend stays on the Station.
    await eventually("run-1 pruned", async () => (await getAgent(client, ns, "run-1")) === undefined);
    const spend = await eventually("both runs' spend recorded", async () => {
      const s = await spendOf();
      return s.length === 2 ? s : undefined;
    });
    expect(spend.map((e) => e.costUSD)).toEqual(["0.3", "0.25"]);

    // A controller restart in between: a new replica reads the spend from the Station's status.
    await replica?.stop();
    replica = await start();

    await setPodLogs(ns, { [LABEL_AGENT]: "run-3" }, { agent: [resultLine(0.01, 10, 5)] });
    await createAgent(client, ns, "run-3", "budgeted");
    const held = await eventually("run-3 held by the budget", async () => {
      const a = await getAgent(client, ns, "run-3");
      const ready = a?.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.reason === "BudgetExhausted" ? { agent: a, ready } : undefined;
    });
    expect(held.agent?.status?.phase ?? "Pending").toBe("Pending");
    expect(held.ready.message).toMatch(
      /^budget of Station budgeted reached: \$0\.55 spent of \$0\.5 in the last 2h; the run starts when the window frees room at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    );
    const uid = held.agent?.metadata.uid;
    const event = await eventually("the BudgetExhausted Event", async () => {
      const l = await client.request<{
        items: { reason: string; note: string; regarding: { uid: string } }[];
      }>("GET", resourcePath(KUBE_EVENTS, ns));
      return l.items.find((e) => e.reason === "BudgetExhausted" && e.regarding.uid === uid);
    });
    expect(event.note).toBe(held.ready.message);
    // Still held on later reconciles (the poll runs every 3 s).
    await replica?.controller?.pollOnce();
    expect((await getAgent(client, ns, "run-3"))?.status?.phase ?? "Pending").toBe("Pending");

    // The window moves past both runs: run-3 starts by itself and spends on.
    clockOffsetMs = 3 * HOUR;
    const done = await waitForPhase(client, ns, "run-3", ["Succeeded"]);
    expect(done.status?.costUSD).toBe("0.01");
    // The spend that left the window is dropped when run-3's entry is written.
    await eventually("the spend list holding only run-3", async () => {
      const s = await spendOf();
      return s.length === 1 && s[0]?.costUSD === "0.01" ? s : undefined;
    });
    // Pruned after run-3's terminal patch, in the same reconcile but later than the patch.
    await eventuallyPasses("run-2 pruned", async () => {
      expect(await client.get(AGENTS, ns, "run-2")).toBeUndefined();
    });
  });
});
