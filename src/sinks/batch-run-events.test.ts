/**
 * What a listener sees for a batch run (docs/events.md#what-a-listener-sees-for-a-batch-run): the
 * events the reconcile core asks for at each moment, as the dispatcher puts them on the wire.
 */
import { describe, expect, it } from "vitest";
import { type BatchRunOptions, batchSinkAction } from "../../test/support/batch-sink-actions.js";
import type { EmitSinkEventsAction } from "../core/actions.js";
import { SinkDispatcher } from "./dispatcher.js";

const SILENT = { info: () => {}, warn: () => {}, error: () => {} };

/** The bodies the dispatcher sends for the action, in order (what an http listener receives). */
async function wire(action: EmitSinkEventsAction): Promise<string[]> {
  const bodies: string[] = [];
  const dispatcher = new SinkDispatcher({
    readSecretKey: async () => undefined,
    post: async ({ body }) => {
      bodies.push(body);
      return { status: 200 };
    },
    log: SILENT,
  });
  await dispatcher.deliver(action);
  return bodies;
}

const SEED: BatchRunOptions = { taskId: "T-7" };
const SOURCE_JSON =
  '{"agent":"ticket-summary-abc12","station":"ticket-summary","task":"T-7","namespace":"ai-agents"}';

describe("a batch run's envelope", () => {
  it("a batch run's source carries agent, station, task, namespace in that order and no pod", async () => {
    const [body] = await wire(batchSinkAction("started", SEED));
    const { source } = JSON.parse(body as string);
    expect(JSON.stringify(source)).toBe(SOURCE_JSON);
    expect(source).not.toHaveProperty("pod");
  });

  it("leaves empty identity fields out", async () => {
    const [body] = await wire(batchSinkAction("started", { stationRef: "s", taskId: "" }));
    expect(JSON.stringify(JSON.parse(body as string).source)).toBe(
      '{"agent":"ticket-summary-abc12","station":"s","namespace":"ai-agents"}',
    );
  });

  it("serializes a lifecycle event exactly as the seed shows", async () => {
    expect(await wire(batchSinkAction("started", SEED))).toEqual([
      '{"source":{"agent":"ticket-summary-abc12","station":"ticket-summary","task":"T-7","namespace":"ai-agents"},' +
        '"event":{"kind":"lifecycle","phase":"agent","status":"started"}}',
    ]);
  });
});

describe("a batch run's lifecycle events on the wire", () => {
  it.each([
    ["started", "started", '{"kind":"lifecycle","phase":"agent","status":"started"}'],
    ["succeeded", "succeeded", '{"kind":"lifecycle","phase":"agent","status":"succeeded","exitCode":0}'],
    [
      "failed",
      "failed",
      '{"kind":"lifecycle","phase":"agent","status":"failed","reason":"batch_failed","exitCode":1}',
    ],
    [
      "timeout fail",
      "timeout-fail",
      '{"kind":"lifecycle","phase":"agent","status":"failed","reason":"batch_timeout","exitCode":1}',
    ],
    [
      "timeout fallback",
      "timeout-fallback",
      '{"kind":"lifecycle","phase":"agent","status":"running","reason":"batch_timeout"}',
    ],
    [
      "disabled",
      "disabled",
      '{"kind":"lifecycle","phase":"agent","status":"failed","reason":"batch_disabled","exitCode":1}',
    ],
  ] as const)("%s", async (_name, moment, event) => {
    expect(await wire(batchSinkAction(moment, SEED))).toEqual([`{"source":${SOURCE_JSON},"event":${event}}`]);
  });
});

describe("a batch run's event lists", () => {
  const lifecycle = (event: object) => ({ type: "lifecycle", event });

  it("end: every line in order, then the terminal event", () => {
    expect(batchSinkAction("failed", { lines: ["a", "b"] }).items).toEqual([
      { type: "cliLine", line: "a" },
      { type: "cliLine", line: "b" },
      lifecycle({ kind: "lifecycle", phase: "agent", status: "failed", reason: "batch_failed", exitCode: 1 }),
    ]);
    expect(batchSinkAction("succeeded", { lines: [] }).items).toEqual([
      lifecycle({ kind: "lifecycle", phase: "agent", status: "succeeded", exitCode: 0 }),
    ]);
  });

  it("start, timeout and disabled are single platform events", () => {
    expect(batchSinkAction("started").items).toEqual([
      lifecycle({ kind: "lifecycle", phase: "agent", status: "started" }),
    ]);
    expect(batchSinkAction("timeout-fallback").items).toEqual([
      lifecycle({ kind: "lifecycle", phase: "agent", status: "running", reason: "batch_timeout" }),
    ]);
    expect(batchSinkAction("timeout-fail").items).toEqual([
      lifecycle({
        kind: "lifecycle",
        phase: "agent",
        status: "failed",
        reason: "batch_timeout",
        exitCode: 1,
      }),
    ]);
    expect(batchSinkAction("disabled").items).toEqual([
      lifecycle({
        kind: "lifecycle",
        phase: "agent",
        status: "failed",
        reason: "batch_disabled",
        exitCode: 1,
      }),
    ]);
  });
});
