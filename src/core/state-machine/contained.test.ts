/**
 * The net under the rules (contained.ts, docs/controller.md#watch-poll-and-cache): an
 * Agent whose reconcile kept throwing, one row per phase.
 */
import { describe, expect, it } from "vitest";
import { agent, definition, input, T0 } from "../../../test/support/core-builders.js";
import type { Action, PatchStatusAction } from "../actions.js";
import type { ReconcileInput } from "../input.js";
import {
  containedReconcile,
  MSG_COST_UNREAD_STOPPED,
  MSG_RECONCILE_FAILED,
  reconcileFailedReason,
} from "./contained.js";
import { reconcile } from "./reconcile.js";

const ERROR = "TypeError: Cannot read properties of undefined (reading 'input')";
const F = { tries: 5, error: ERROR };
const patchOf = (actions: Action[] | undefined) =>
  actions?.find((a): a is PatchStatusAction => a.type === "patchStatus" && a.id === "patch-status");
const COMPLETE = { found: true as const, status: { conditions: [{ type: "Complete", status: "True" }] } };
const RUNNING_JOB = { found: true as const, status: {} };
const LOG = (text: string) => ({
  found: true as const,
  containerStatuses: [],
  agentLog: { available: true as const, text },
});

describe("containedReconcile", () => {
  it("pins the reason's words", () => {
    expect(MSG_RECONCILE_FAILED).toBe("the controller could not reconcile this Agent");
    expect(reconcileFailedReason(5, ERROR)).toBe(
      `the controller could not reconcile this Agent (5 tries in a row): ${ERROR}`,
    );
    expect(reconcileFailedReason(3, "x".repeat(10_000)).length).toBeLessThan(600);
  });

  it("Pending: Failed with the reason, a ReconcileError condition and a Warning Event", () => {
    const out = containedReconcile(input({ agent: agent().build() }), F);
    const p = patchOf(out);
    expect(p?.status).toMatchObject({
      phase: "Failed",
      exitCode: 1,
      failureReason: reconcileFailedReason(5, ERROR),
    });
    expect(p?.status.conditions).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: "Failed", reason: "ReconcileError" })]),
    );
    expect(out).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: "recordMetric",
          metric: { name: "controller_run_failures_total", labels: { kind: "reconcile_error" } },
        }),
        expect.objectContaining({ type: "recordEvent" }),
      ]),
    );
  });

  it("Running, the Job still running: Failed, the Job deleted, the cost flagged as unknown", () => {
    const out = containedReconcile(input({ agent: agent().running(T0).build(), job: RUNNING_JOB }), F);
    expect(patchOf(out)?.status).toMatchObject({
      phase: "Failed",
      failureReason: reconcileFailedReason(5, ERROR),
      costNote: MSG_COST_UNREAD_STOPPED,
    });
    expect(out).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: "deleteJob", job: "agent-job-run-1" })]),
    );
  });

  it("Running, the Job complete: the Job decides (Succeeded), its usage read as far as it can be", () => {
    const log =
      '{"type":"result","is_error":false,"total_cost_usd":0.25,"usage":{"input_tokens":10,"output_tokens":20}}';
    const out = containedReconcile(
      input({ agent: agent().running(T0).build(), job: COMPLETE, pod: LOG(log) }),
      F,
    );
    expect(patchOf(out)?.status).toMatchObject({
      phase: "Succeeded",
      exitCode: 0,
      costUSD: "0.25",
      output: log,
    });
    expect(patchOf(out)?.status.failureReason).toBeUndefined();
  });

  it("Running, the Job complete but its pod not read yet: waits for it (retries)", () => {
    expect(
      containedReconcile(input({ agent: agent().running(T0).build(), job: COMPLETE }), F),
    ).toBeUndefined();
  });

  it("a provider batch in flight stays Running until batch.timeoutMinutes, then ends batch timed out", () => {
    const running = agent().running(T0).status({ batchId: "msgbatch_1", batchProvider: "anthropic" }).build();
    const def = definition().batch().build();
    const at = (now: number): ReconcileInput => input({ agent: running, definition: def, now });
    expect(containedReconcile(at(T0 + 60_000), F)).toBeUndefined();
    const late = containedReconcile(at(T0 + 25 * 3_600_000), F);
    expect(patchOf(late)?.status).toMatchObject({
      phase: "Failed",
      failureReason: `batch timed out; ${reconcileFailedReason(5, ERROR)}`,
    });
  });

  it.each([
    [
      "Succeeded",
      agent()
        .running(T0)
        .completed("Succeeded", T0 + 1000)
        .build(),
    ],
    [
      "Failed",
      agent()
        .running(T0)
        .completed("Failed", T0 + 1000)
        .build(),
    ],
  ])("a %s Agent stays as it is: nothing", (_phase, a) => {
    expect(containedReconcile(input({ agent: a }), F)).toBeUndefined();
  });

  it("an Agent being deleted: nothing", () => {
    const a = agent().build();
    a.metadata.deletionTimestamp = new Date(T0).toISOString();
    expect(containedReconcile(input({ agent: a }), F)).toBeUndefined();
  });
});

describe("a model named like Object.prototype's properties, end to end through reconcile()", () => {
  it.each(["constructor", "toString", "__proto__", "hasOwnProperty"])(
    "spec.model opencode/%s: the finished run ends Succeeded with a cost, never a throw",
    (name) => {
      const model = `opencode/${name}`;
      const log = [
        JSON.stringify({
          type: "step_finish",
          part: { tokens: { input: 1000, output: 1000, cache: { read: 0, write: 0 } }, cost: 0 },
        }),
      ].join("\n");
      const inp = input({
        agent: agent().spec({ model }).running(T0).build(),
        definition: definition().spec({ model }).build(),
        job: COMPLETE,
        pod: LOG(log),
      });
      expect(() => reconcile(inp)).not.toThrow();
      const p = patchOf(reconcile(inp));
      expect(p?.status.phase).toBe("Succeeded");
      expect(p?.status.costUSD).toMatch(/^\d/);
    },
  );
});
