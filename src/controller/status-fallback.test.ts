import { describe, expect, it } from "vitest";
import type { Action, KubeEvent } from "../core/actions.js";
import type { Agent, AgentRef } from "../core/types.js";
import { KubeApiError } from "../kube/errors.js";
import { Executor } from "./executor.js";
import { RunMemory } from "./memory.js";
import { ControllerMetrics } from "./metrics.js";
import { refusedStatusFields, statusFallback } from "./status-fallback.js";

/** What kube-apiserver answered to a costUSD outside the CRD's pattern (captured on the local plane). */
const REFUSAL =
  'Agent.agents.re-cinq.com "a" is invalid: status.costUSD: Invalid value: "1e+21.555072": status.costUSD in body should match \'^[0-9]+(\\.[0-9]+)?$\'';

const terminal = {
  phase: "Succeeded",
  exitCode: 0,
  completedAt: "2026-12-05T00:00:00Z",
  output: "done",
  costUSD: "1e+21.555072",
  costSource: "reported",
  usage: { inputTokens: 1 },
  conditions: [{ type: "Complete", status: "True" }],
};

describe("statusFallback", () => {
  it("reads the refused top-level fields from the API server's message", () => {
    expect(refusedStatusFields(REFUSAL)).toEqual(["costUSD"]);
    expect(refusedStatusFields("status.usage.inputTokens: Invalid value; status.output: Too long")).toEqual([
      "usage",
      "output",
    ]);
  });

  const invalid = (message: string) => ({ status: 422 as const, message });
  /** What kube-apiserver answers to a patch over its request limit (3 MiB). */
  const tooLarge = { status: 413 as const, message: "Request entity too large: limit is 3145728" };
  const huge = { ...terminal, costUSD: "1.5", sessionId: "s".repeat(4 * 1024 * 1024) };

  it.each([
    ["422, 1: without the named field", terminal, invalid(REFUSAL), 1, ["costUSD"]],
    [
      "422, 1 with no field named: the essential fields only, output kept",
      terminal,
      invalid("invalid"),
      1,
      ["costUSD", "costSource", "usage"],
    ],
    [
      "422, 2: the essential fields only, output kept",
      terminal,
      invalid(REFUSAL),
      2,
      ["costUSD", "costSource", "usage"],
    ],
    ["413, 1: without the oversized field", huge, tooLarge, 1, ["sessionId"]],
    [
      "413, 2: the essential fields only, output kept",
      huge,
      tooLarge,
      2,
      ["costUSD", "costSource", "usage", "sessionId"],
    ],
  ])("%s", (_, status, refusal, attempt, dropped) => {
    const f = statusFallback(status, refusal, attempt);
    expect(f?.dropped).toEqual(dropped);
    expect(f?.status.phase).toBe("Succeeded");
    expect(f?.status.output).toBe("done");
    for (const d of dropped) expect(f?.status).not.toHaveProperty(d);
  });

  it("never drops what ends the run nor the output, and gives up when nothing is left to drop", () => {
    const bare = { phase: "Failed", exitCode: 1, failureReason: "x", output: "o".repeat(300_000) };
    expect(statusFallback(bare, invalid("status.phase: Invalid value"), 1)).toBeUndefined();
    expect(statusFallback(bare, invalid("status.output: Too long"), 1)).toBeUndefined();
    expect(statusFallback(bare, tooLarge, 1)).toBeUndefined();
    expect(statusFallback(bare, invalid("status.phase: Invalid value"), 3)).toBeUndefined();
  });

  it("cuts a failureReason too long for the schema on the last attempt", () => {
    const long = { phase: "Failed", exitCode: 1, failureReason: "x".repeat(5000) };
    const f = statusFallback(long, invalid("status.failureReason: Too long"), 2);
    expect(String(f?.status.failureReason).length).toBe(1024);
  });
});

describe("Executor: a terminal status patch the API server refuses", () => {
  const agent: Agent = {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: { name: "a", namespace: "ns", uid: "u-a", resourceVersion: "7" },
    spec: { stationRef: "s" },
  };
  const ref = { namespace: "ns", name: "a", uid: "u-a" };

  function run(
    refuses: (status: Record<string, unknown>) => boolean,
    status: Record<string, unknown>,
    code: 422 | 413 = 422,
  ) {
    const written: Record<string, unknown>[] = [];
    const events: KubeEvent[] = [];
    const ex = new Executor({
      client: {
        async patchStatus(_r: unknown, _ns: string, _n: string, _rv: string, s: Record<string, unknown>) {
          if (refuses(s) && code === 413)
            throw new KubeApiError(413, "RequestEntityTooLarge", "PATCH: 413", "Request entity too large");
          if (refuses(s)) throw new KubeApiError(422, "Invalid", `PATCH: 422 ${REFUSAL}`, REFUSAL);
          written.push(s);
          return "ok";
        },
      } as never,
      namespace: "ns",
      memory: new RunMemory(),
      metrics: new ControllerMetrics(),
      provider: () => {
        throw new Error("no provider");
      },
      kubeEvents: { record: (_: AgentRef, e: KubeEvent) => events.push(e) } as never,
      now: () => 0,
      log: () => {},
    });
    const action: Action = {
      id: "patch-status",
      type: "patchStatus",
      agent: ref,
      resourceVersion: "7",
      status,
    } as Action;
    return ex.execute(agent, [action]).then((report) => ({ report, written, events }));
  }

  it("writes it again without the refused field and records StatusFieldsDropped", async () => {
    const { report, written, events } = await run((s) => "costUSD" in s, terminal);
    expect(report.succeeded).toEqual(["patch-status"]);
    expect(written[0]).toMatchObject({ phase: "Succeeded", output: "done", costSource: "reported" });
    expect(written[0]).not.toHaveProperty("costUSD");
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: "Warning", reason: "StatusFieldsDropped" });
    expect(events[0]?.note).toContain("status.costUSD");
    expect(events[0]?.note).toContain("should match");
  });

  it("falls back to the essential fields and the output when the first fallback is refused too", async () => {
    const { report, written } = await run((s) => "costSource" in s, terminal);
    expect(report.succeeded).toEqual(["patch-status"]);
    expect(Object.keys(written[0] ?? {}).sort()).toEqual([
      "completedAt",
      "conditions",
      "exitCode",
      "output",
      "phase",
    ]);
  });

  it("M3: a 413 for a 4 MiB session id is written again without it; the output and the cost stay", async () => {
    const status = { ...terminal, costUSD: "1.5", sessionId: "s".repeat(4 * 1024 * 1024) };
    const { report, written, events } = await run((s) => "sessionId" in s, status, 413);
    expect(report.succeeded).toEqual(["patch-status"]);
    expect(written[0]).toMatchObject({ phase: "Succeeded", output: "done", costUSD: "1.5" });
    expect(written[0]).not.toHaveProperty("sessionId");
    expect(events[0]?.note).toContain("status.sessionId");
    expect(events[0]?.note).toContain("413");
  });

  it("a non-terminal patch refused stays a failure for the next reconcile (nothing is dropped)", async () => {
    const { report, written, events } = await run(() => true, { phase: "Running", sessionId: "x" });
    expect(report.failed).toEqual(["patch-status"]);
    expect(written).toHaveLength(0);
    expect(events).toHaveLength(0);
  });
});
