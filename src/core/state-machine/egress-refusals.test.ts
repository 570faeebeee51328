/**
 * A run whose programs the gateway's egress proxy refused (docs/gateway.md#egress): the terminal
 * patch carries the count and destinations in status.egress, and the sinks get one egress event
 * after it, whichever way the run ended.
 */
import { describe, expect, it } from "vitest";
import { agent, definition, input, T0 } from "../../../test/support/core-builders.js";
import type { EmitSinkEventsAction, PatchStatusAction } from "../actions.js";
import type { ReconcileInput } from "../input.js";
import { decide } from "./reconcile.js";

const NOW = T0 + 60_000;
const EGRESS = { refused: 3, destinations: ["agent evil.example:443", "courier x.example:443"] };
const complete = [{ type: "Complete", status: "True" }];
const deadline = [{ type: "Failed", status: "True", reason: "DeadlineExceeded" }];
const job = (conditions: { type: string; status: string; reason?: string }[]) => ({
  job: { found: true as const, status: { conditions } },
  pod: { found: true as const, containerStatuses: [], agentLog: { available: true as const, text: "" } },
});
const SINKS = { output: { sinks: [{ type: "http" as const, url: "https://sink.example/events" }] } };

function decideTerminal(over: Partial<ReconcileInput>, sinks = true) {
  const d = decide(
    input({
      now: NOW,
      agent: agent().running(T0).build(),
      definition: definition()
        .spec({ model: "claude-sonnet-4-6", ...(sinks ? SINKS : {}) })
        .build(),
      ...over,
    }),
  );
  const patch = d.actions.find((a): a is PatchStatusAction => a.type === "patchStatus");
  const events = d.actions.filter((a): a is EmitSinkEventsAction => a.type === "emitSinkEvents");
  return { status: patch?.status, events };
}

describe("egress refusals at the end of a run", () => {
  const cases: { name: string; over: Partial<ReconcileInput>; phase: string }[] = [
    { name: "a run that succeeded", over: job(complete), phase: "Succeeded" },
    { name: "a run past its deadline", over: job(deadline), phase: "Failed" },
  ];
  for (const c of cases) {
    it(`${c.name}: status.egress holds them and the sinks get one egress event after the patch`, () => {
      const { status, events } = decideTerminal({ ...c.over, egress: EGRESS });
      expect(status).toMatchObject({ phase: c.phase, egress: EGRESS });
      const egress = events.filter((e) =>
        e.items.some((i) => i.type === "lifecycle" && i.event.kind === "egress"),
      );
      expect(egress).toHaveLength(1);
      expect(egress[0]?.items).toEqual([
        { type: "lifecycle", event: { kind: "egress", status: "refused", ...EGRESS } },
      ]);
      expect(egress[0]?.dependsOn).toEqual(["patch-status"]);
    });
  }

  it("nothing refused: no status.egress and no egress event", () => {
    const { status, events } = decideTerminal(job(complete));
    expect(status).toMatchObject({ phase: "Succeeded" });
    expect(status).not.toHaveProperty("egress");
    expect(
      events.flatMap((e) => e.items).some((i) => i.type === "lifecycle" && i.event.kind === "egress"),
    ).toBe(false);
  });

  it("a definition without sinks: the status still says it, no event is sent", () => {
    const { status, events } = decideTerminal({ ...job(complete), egress: EGRESS }, false);
    expect(status).toMatchObject({ egress: EGRESS });
    expect(events).toEqual([]);
  });
});
