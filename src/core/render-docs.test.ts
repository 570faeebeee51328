import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DOC_PATH, renderStateMachineDoc } from "./render-docs.js";
import { FINALIZER_RULES, PHASE_RULES } from "./state-machine.js";

describe("docs/state-machine.md", () => {
  it("is exactly what the code's rule tables render (run `npx tsx src/core/render-docs.ts --write`)", () => {
    expect(readFileSync(DOC_PATH, "utf8")).toBe(renderStateMachineDoc());
  });
  it("lists every rule of both tables", () => {
    const doc = renderStateMachineDoc();
    for (const r of [...PHASE_RULES, ...FINALIZER_RULES]) expect(doc).toContain(`\`${r.id}\``);
  });
  it("rule ids are unique", () => {
    const ids = [...PHASE_RULES, ...FINALIZER_RULES].map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
