import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lastCliError } from "../readback/output.js";
import { cliErrorMessage } from "./vendors.js";

/** Lines the real gemini CLI 0.61.0 printed against the local model server (docs/agent-clis.md). */
const FIXTURES = join(import.meta.dirname, "../../../test/fakes/models/fixtures/gemini");
const fixture = (name: string) => readFileSync(join(FIXTURES, name), "utf8");

describe("gemini errorMessage on the real CLI's lines", () => {
  it.each([
    [
      "api-401.ndjson",
      "API error 401 UNAUTHENTICATED: Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
    ],
    [
      "api-429.ndjson",
      "API error: Resource has been exhausted (e.g. check quota). Please wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method",
    ],
    [
      "api-500.ndjson",
      "API error 500 INTERNAL: An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    ],
    ["api-503.ndjson", "API error: The model is overloaded. Please try again later."],
    ["stream-cut.ndjson", "API error: terminated"],
    ["unreachable.ndjson", "API error: exception TypeError: fetch failed sending request"],
  ])("%s → %s", (name, want) => {
    expect(lastCliError("gemini", fixture(name))).toBe(want);
  });

  it.each(["edit-success.ndjson", "policy-denied.ndjson"])(
    "%s carries no failure (a denied or failed tool call is the model's to handle)",
    (name) => {
      expect(lastCliError("gemini", fixture(name))).toBe("");
    },
  );
});

describe("gemini errorMessage on other shapes", () => {
  const line = (o: unknown) => JSON.stringify(o);
  it.each([
    // Google's real bodies are pretty-printed, and a message may hold "]" or "}".
    [
      {
        type: "result",
        status: "error",
        error: {
          type: "unknown",
          message:
            '[API Error: {\n  "error": {\n    "code": 403,\n    "message": "denied [x] {y}",\n    "status": "PERMISSION_DENIED"\n  }\n}\n]',
        },
      },
      "API error 403 PERMISSION_DENIED: denied [x] {y}",
    ],
    [
      {
        type: "result",
        status: "error",
        error: { type: "FatalTurnLimitedError", message: "Reached max session turns" },
      },
      "Reached max session turns",
    ],
    [
      { type: "result", status: "error", error: { type: "FatalCancellationError" } },
      "FatalCancellationError",
    ],
    [{ type: "result", status: "error", error: { type: "unknown" } }, undefined],
    [{ type: "result", status: "success", stats: {} }, undefined],
    [
      { type: "error", severity: "error", message: "Model stream ended with an invalid chunk." },
      "Model stream ended with an invalid chunk.",
    ],
    [{ type: "error", severity: "warning", message: "Loop detected" }, undefined],
    [
      { type: "result", status: "error", error: { message: "[API Error: not json {]" } },
      "API error: not json {",
    ],
  ])("%j → %j", (obj, want) => {
    expect(cliErrorMessage("gemini", line(obj))).toBe(want);
  });
});
