/**
 * Price overrides on the local plane (docs/cost-and-budgets.md#price-overrides): a run of a model
 * the built-in table lacks is priced at the vendor's highest rates; the agent-controller-prices
 * ConfigMap created, then changed, prices the next runs at its rates without a controller restart;
 * a bad entry is refused with a PriceOverrideRefused Event on the ConfigMap naming the field, and
 * the model keeps its last good price.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONFIGMAPS, PRICE_OVERRIDES_CONFIGMAP } from "../../../src/controller/price-overrides.js";
import type { ControllerReplica } from "../../../src/controller/process.js";
import { costAtRates } from "../../../src/core/pricing/estimate.js";
import { vendorCeilingRates } from "../../../src/core/pricing/vendor-ceiling.js";
import { LABEL_AGENT } from "../../../src/core/run-job/job.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { KUBE_EVENTS } from "../../../src/kube/event-writer.js";
import { AGENT_DEFINITIONS, resourcePath } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig, setPodLogs } from "../../harness/context.js";
import { eventually } from "../../harness/eventually.js";
import { clientFor, createAgent, createStation, getAgent, startReplica, waitForPhase } from "./helpers.js";

const POD_NAME = "agent-controller-prices-0";
/** codex's own default model, which the built-in table does not price. */
const MODEL = "gpt-6.1-sol";
const M = 1_000_000;

let client: KubeClient;
let ns: string;
let replica: ControllerReplica | undefined;

/**
 * Output tokens of the turn: within what a run of its length can consume (docs/cost-and-budgets.md#a-bill-within-bounds),
 * so the run's own figure stands and is priced, not charged its bound.
 */
const OUTPUT = 50_000;
/** codex's lines for one turn of a million input and fifty thousand output tokens. */
const codexLines = [
  JSON.stringify({ type: "thread.started", thread_id: "t-1" }),
  JSON.stringify({
    type: "turn.completed",
    usage: { input_tokens: M, cached_input_tokens: 0, output_tokens: OUTPUT },
  }),
];

const pricesYaml = (entries: string) => ({ "prices.yaml": `prices:\n${entries}` });

async function run(name: string) {
  await setPodLogs(ns, { [LABEL_AGENT]: name }, { agent: codexLines });
  await createAgent(client, ns, name, "codex-station");
  const done = await waitForPhase(client, ns, name, ["Succeeded"]);
  return done.status;
}

/** Waits until the controller priced with the table it read (the ConfigMap is re-read each poll interval). */
async function untilPriced(input: number) {
  await eventually(`the controller priced ${MODEL} at ${input}`, async () =>
    replica?.controller?.prices.table()[MODEL]?.rates.input === input ? true : undefined,
  );
}

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  ns = await createTestNamespace("ctrl-prices");
  await client.create(AGENT_DEFINITIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name: "codex-def" },
    spec: { prompt: "Summarise {topic}.", model: MODEL, execution: "interactive" },
  });
  await createStation(client, ns, "codex-station", "codex-def");
  replica = await startReplica(client, ns, POD_NAME);
  await eventually("leadership", async () => replica?.isLeader && replica.controller?.synced);
});

afterAll(async () => {
  await replica?.stop();
  await client?.close();
});

describe("price overrides from the ConfigMap", () => {
  it("prices runs at the ConfigMap's rates as it changes, without a restart, and refuses a bad entry naming the field", async () => {
    const controller = replica?.controller;
    // No ConfigMap: the vendor's highest known rates, marked unpriced.
    const first = await run("run-1");
    const ceiling = costAtRates(
      { inputTokens: M, outputTokens: OUTPUT, cacheReadTokens: 0, cacheWriteTokens: 0 },
      vendorCeilingRates("codex"),
    );
    expect(first?.costSource).toBe("estimated");
    expect(first?.unpricedModels).toEqual([MODEL]);
    expect(Number(first?.costUSD)).toBeCloseTo(ceiling, 6);

    // The ConfigMap created: the next run at its rates (6 + 2 for 1M in at 6, 50k out at 40).
    await client.create(CONFIGMAPS, ns, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: PRICE_OVERRIDES_CONFIGMAP },
      data: pricesYaml(`  - {model: ${MODEL}, input: 6, output: 40, source: test contract}\n`),
    });
    await untilPriced(6);
    const second = await run("run-2");
    expect(second?.costUSD).toBe("8");
    expect(second?.unpricedModels).toBeUndefined();

    // Changed: the same controller (no restart) prices the next run at the new rate.
    await client.mergePatch(CONFIGMAPS, ns, PRICE_OVERRIDES_CONFIGMAP, {
      data: pricesYaml(`  - {model: ${MODEL}, input: 1, output: 2}\n`),
    });
    await untilPriced(1);
    expect(replica?.controller).toBe(controller);
    expect((await run("run-3"))?.costUSD).toBe("1.1");

    // A bad entry: refused with an Event on the ConfigMap naming the field; the model keeps its last good price.
    await client.mergePatch(CONFIGMAPS, ns, PRICE_OVERRIDES_CONFIGMAP, {
      data: pricesYaml(
        `  - {model: ${MODEL}, input: -5, output: 2}\n  - {model: other-model, input: 'two', output: 1}\n`,
      ),
    });
    const cm = await client.get<{ metadata: { uid: string } }>(CONFIGMAPS, ns, PRICE_OVERRIDES_CONFIGMAP);
    const events = await eventually("the PriceOverrideRefused Events", async () => {
      const l = await client.request<{
        items: { reason: string; type: string; note: string; regarding: { kind: string; uid: string } }[];
      }>("GET", resourcePath(KUBE_EVENTS, ns));
      const mine = l.items.filter(
        (e) => e.reason === "PriceOverrideRefused" && e.regarding.uid === cm?.metadata.uid,
      );
      return mine.length >= 2 ? mine : undefined;
    });
    expect(events.map((e) => e.note).sort()).toEqual([
      "prices[0].input: must not be negative, got -5",
      'prices[1].input: must be a number, got "two"',
    ]);
    expect(events.every((e) => e.type === "Warning" && e.regarding.kind === "ConfigMap")).toBe(true);
    expect((await run("run-4"))?.costUSD).toBe("1.1");
    expect((await getAgent(client, ns, "run-4"))?.status?.phase).toBe("Succeeded");
  });
});
