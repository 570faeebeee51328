/** ReconcileContainment (containment.ts): tries counted per Agent, contained after the configured number in a row. */
import { describe, expect, it } from "vitest";
import { agent, input, T0 } from "../../test/support/core-builders.js";
import type { Action, PatchStatusAction } from "../core/actions.js";
import { MSG_RECONCILE_FAILED } from "../core/state-machine/reconcile.js";
import { ReconcileContainment } from "./containment.js";

const boom = (): Action[] => {
  throw new TypeError("Cannot read properties of undefined (reading 'input')");
};
const failure = (actions: Action[]) =>
  actions.find((a): a is PatchStatusAction => a.type === "patchStatus")?.status.failureReason;

describe("ReconcileContainment", () => {
  it("rethrows until the third failure in a row, then fails the Pending Agent with the reason", () => {
    const logs: string[] = [];
    const c = new ReconcileContainment(3, (m) => logs.push(m), boom);
    const inp = input({ agent: agent().build() });
    expect(() => c.decide(inp)).toThrow(TypeError);
    expect(() => c.decide(inp)).toThrow(TypeError);
    expect(failure(c.decide(inp))).toBe(
      `${MSG_RECONCILE_FAILED} (3 tries in a row): TypeError: Cannot read properties of undefined (reading 'input')`,
    );
    expect(logs).toHaveLength(1);
  });

  it("a success in between starts the count again; each Agent has its own", () => {
    let fail = true;
    const c = new ReconcileContainment(
      2,
      () => {},
      () => (fail ? boom() : []),
    );
    const a = input({ agent: agent("a").build() });
    const b = input({ agent: agent("b").build() });
    expect(() => c.decide(a)).toThrow();
    expect(() => c.decide(b)).toThrow();
    fail = false;
    expect(c.decide(a)).toEqual([]);
    fail = true;
    expect(() => c.decide(a)).toThrow();
    expect(failure(c.decide(b))).toMatch(/^the controller could not reconcile this Agent \(2 tries/);
  });

  it("a terminal Agent is never contained: the error keeps being retried with back-off", () => {
    const c = new ReconcileContainment(1, () => {}, boom);
    const done = input({
      agent: agent()
        .running(T0)
        .completed("Succeeded", T0 + 1000)
        .build(),
    });
    for (let i = 0; i < 5; i++) expect(() => c.decide(done)).toThrow(TypeError);
  });
});
