import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { FINALIZER_RULES, PHASE_RULES } from "../src/core/state-machine/reconcile.js";
import { renderStateMachineDoc, STATE_MACHINE_DOC_PATH } from "./state-machine-doc.js";

const DOC_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", STATE_MACHINE_DOC_PATH);

describe("docs/state-machine.md", () => {
  it("is exactly what the code's rule tables render (run `npm run codegen`)", () => {
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
