import { describe, expect, it } from "vitest";
import { minimalAgent } from "../../test/support/validation-fixtures.js";
import {
  type AdmissionRequest,
  allowedReview,
  cleanWarnings,
  kindToCheck,
  MAX_WARNING_CHARS,
  MAX_WARNINGS,
  parseReview,
} from "./review.js";

const agentKind = { group: "agents.re-cinq.com", version: "v1beta1", kind: "Agent" };

function request(over: Partial<AdmissionRequest> = {}): AdmissionRequest {
  return {
    uid: "u1",
    kind: agentKind,
    operation: "CREATE",
    namespace: "ai-agents",
    object: minimalAgent(),
    ...over,
  };
}

describe("kindToCheck", () => {
  const changed = { ...minimalAgent(), spec: { stationRef: "other" } };
  const deleting = { ...minimalAgent(), metadata: { name: "x", deletionTimestamp: "2026-01-01T00:00:00Z" } };
  it.each([
    ["a CREATE in the served namespace", request(), "Agent"],
    ["an UPDATE that changes the spec", request({ operation: "UPDATE", oldObject: changed }), "Agent"],
    [
      "an UPDATE that leaves the spec alone",
      request({ operation: "UPDATE", oldObject: minimalAgent() }),
      undefined,
    ],
    ["another namespace", request({ namespace: "team-b" }), undefined],
    ["a DELETE", request({ operation: "DELETE" }), undefined],
    [
      "an object being deleted",
      request({ operation: "UPDATE", object: deleting, oldObject: changed }),
      undefined,
    ],
    ["another group", request({ kind: { group: "apps", version: "v1", kind: "Agent" } }), undefined],
    ["a Station", request({ kind: { ...agentKind, kind: "Station" } }), "Station"],
    ["an AgentDefinition", request({ kind: { ...agentKind, kind: "AgentDefinition" } }), "AgentDefinition"],
  ] as const)("%s → %s", (_what, req, kind) => {
    expect(kindToCheck(req, "ai-agents")).toBe(kind);
  });
});

describe("parseReview", () => {
  it("reads the request of an admission.k8s.io/v1 AdmissionReview", () => {
    expect(
      parseReview({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: request() }).uid,
    ).toBe("u1");
  });
  it.each([
    [null, "body is not a JSON object"],
    [
      { apiVersion: "admission.k8s.io/v1beta1", kind: "AdmissionReview" },
      "expected apiVersion admission.k8s.io/v1 kind AdmissionReview, got admission.k8s.io/v1beta1 AdmissionReview",
    ],
    [{ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {} }, "request.uid is missing"],
  ])("%j → %s", (body, message) => {
    expect(() => parseReview(body)).toThrow(message);
  });
});

describe("allowedReview", () => {
  it("always allows and echoes the uid; warnings only when there are some", () => {
    expect(allowedReview("u1", [])).toEqual({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: { uid: "u1", allowed: true },
    });
    expect(allowedReview("u2", ["w"]).response).toEqual({ uid: "u2", allowed: true, warnings: ["w"] });
  });
});

describe("cleanWarnings", () => {
  it("flattens control characters, drops duplicates and cuts long lines", () => {
    const long = "x".repeat(400);
    const out = cleanWarnings(["a\nb", "a\nb", long]);
    expect(out[0]).toBe("a b");
    expect(out).toHaveLength(2);
    expect(out[1]).toHaveLength(MAX_WARNING_CHARS);
    expect(out[1]?.endsWith("…")).toBe(true);
  });
  it("shows C0, C1 and bidirectional formatting characters as visible escapes", () => {
    expect(
      cleanWarnings([
        "Station a\u202Egnp.exe\u202C does not exist",
        "key \u2066x\u2069 \u200E\u200F\u061C",
        "c1 \u0085 \u009B31m esc \u001B[2J del \u007F",
        "line\u2028break\ttab",
      ]),
    ).toEqual([
      "Station a\\u202egnp.exe\\u202c does not exist",
      "key \\u2066x\\u2069 \\u200e\\u200f\\u061c",
      "c1 \\u0085 \\u009b31m esc \\u001b[2J del \\u007f",
      "line break tab",
    ]);
  });

  it("summarises warnings past the limit in a last line", () => {
    const many = Array.from({ length: MAX_WARNINGS + 5 }, (_, i) => `w${i}`);
    const out = cleanWarnings(many);
    expect(out).toHaveLength(MAX_WARNINGS);
    expect(out.at(-1)).toBe("and 6 more warnings");
  });
});
