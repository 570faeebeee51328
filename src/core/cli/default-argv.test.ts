/** A model naming only its CLI asks for the CLI's own default (docs/decisions.md D-19). */
import { describe, expect, it } from "vitest";
import { cliArgv } from "./argv.js";
import { routeModel } from "./routing.js";

const def = { permission_mode: "auto" } as never;

describe("the CLI's default model", () => {
  it.each([
    { model: "codex", vendor: "codex", flag: undefined },
    { model: "Codex", vendor: "codex", flag: undefined },
    { model: "gemini", vendor: "gemini", flag: undefined },
    { model: "gpt-5.5", vendor: "codex", flag: "gpt-5.5" },
    { model: "gpt-5.3-codex", vendor: "codex", flag: "gpt-5.3-codex" },
    { model: "gemini-3.5-flash", vendor: "gemini", flag: "gemini-3.5-flash" },
  ])("$model: $vendor, --model $flag", ({ model, vendor, flag }) => {
    expect(routeModel(model)).toBe(vendor);
    const argv = cliArgv(def, model, "P");
    expect(argv[0]).toBe(vendor);
    const given = argv.flatMap((a, i) =>
      a === "--model" ? [argv[i + 1]] : a.startsWith("--model=") ? [a.slice("--model=".length)] : [],
    );
    expect(given).toEqual(flag === undefined ? [] : [flag]);
  });
});
