import { describe, expect, it } from "vitest";
import { NS, runningAgent } from "../../test/support/prompt-api.js";
import type { PromptApiAgent } from "../prompt-api/index.js";
import { patchSessionId } from "./prompt-api-wiring.js";

/** An API server holding `reads` in turn for each GET, answering each status write from `outcomes`. */
function fakeClient(outcomes: ("ok" | "conflict")[], reads: (PromptApiAgent | undefined)[]) {
  const writes: string[] = [];
  return {
    writes,
    client: {
      async patchStatus(
        _r: unknown,
        _ns: string,
        _name: string,
        rv: string,
        status: Record<string, unknown>,
      ) {
        writes.push(`${rv}:${String(status.sessionId)}`);
        return outcomes.shift() ?? "ok";
      },
      async get() {
        return reads.shift();
      },
    },
  };
}

const at = (rv: string, status: PromptApiAgent["status"] = {}) => {
  const a = runningAgent("a", status);
  return { ...a, metadata: { ...a.metadata, resourceVersion: rv } };
};

describe("patchSessionId: a sessionId write after a 409 (docs/controller.md#write-safety)", () => {
  it.each([
    {
      name: "recomputed from the Agent read again, never resent with the refused resourceVersion",
      outcomes: ["conflict", "ok"] as const,
      reads: [at("2")],
      writes: ["1:s-9", "2:s-9"],
    },
    {
      name: "not written when the read shows the sessionId already there",
      outcomes: ["conflict"] as const,
      reads: [at("2", { sessionId: "s-9" })],
      writes: ["1:s-9"],
    },
    {
      name: "not written when the read shows the run finished",
      outcomes: ["conflict"] as const,
      reads: [at("2", { phase: "Succeeded" })],
      writes: ["1:s-9"],
    },
    {
      name: "not written when the Agent is gone",
      outcomes: ["conflict"] as const,
      reads: [undefined],
      writes: ["1:s-9"],
    },
    {
      name: "given up after three refused writes, each from a newer read",
      outcomes: ["conflict", "conflict", "conflict"] as const,
      reads: [at("2"), at("3"), at("4")],
      writes: ["1:s-9", "2:s-9", "3:s-9"],
    },
  ])("$name", async (row) => {
    const fake = fakeClient([...row.outcomes], [...row.reads]);
    await patchSessionId(fake.client as never, NS, at("1"), "s-9");
    expect(fake.writes).toEqual(row.writes);
  });
});
