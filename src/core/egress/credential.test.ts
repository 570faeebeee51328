import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { issueRunCredential, verifyRunCredential } from "../run-job/gateway-credential.js";
import {
  type EgressClaims,
  egressCredentialLength,
  issueEgressCredential,
  MAX_EGRESS_CREDENTIAL_LENGTH,
  verifyEgressCredential,
} from "./credential.js";

const KEY = Buffer.from("k".repeat(32));
const OTHER_KEY = Buffer.from("o".repeat(32));
const CLAIMS: EgressClaims = {
  namespace: "ai-agents",
  name: "fix-readme",
  uid: "6f1c2e0a-1111-4c2b-9d3e-0123456789ab",
  role: "courier",
  destinations: ["api.github.com:443", "github.com:443", "*.example.com:8443", "[::1]:22"],
};

const payloadOf = (fields: unknown) => Buffer.from(JSON.stringify(fields)).toString("base64url");
const macOf = (payload: string, domain = "agents.re-cinq.com/egress-credential/v1") =>
  createHmac("sha256", KEY).update(`${domain}\n${payload}`).digest("base64url");

describe("egress credentials (docs/gateway.md#egress)", () => {
  it("round trip: a credential the key signed verifies to the run, role and destinations it names", () => {
    const token = issueEgressCredential(KEY, CLAIMS);
    expect(token.startsWith("agx1.")).toBe(true);
    expect(token).toMatch(/^[A-Za-z0-9._-]+$/);
    expect(token.length).toBe(egressCredentialLength(CLAIMS));
    expect(verifyEgressCredential(KEY, token)).toEqual({ ok: true, claims: CLAIMS });
  });

  it("an empty destination list is a valid credential that allows nothing", () => {
    const claims = { ...CLAIMS, destinations: [] };
    expect(verifyEgressCredential(KEY, issueEgressCredential(KEY, claims))).toEqual({ ok: true, claims });
  });

  it("is refused under another key", () => {
    expect(verifyEgressCredential(OTHER_KEY, issueEgressCredential(KEY, CLAIMS))).toEqual({
      ok: false,
      reason: "bad-signature",
    });
  });

  it.each([
    ["another destination", { ...CLAIMS, destinations: [...CLAIMS.destinations, "evil.example:443"] }],
    ["another role", { ...CLAIMS, role: "agent" as const }],
    ["another run", { ...CLAIMS, uid: "00000000-0000-0000-0000-000000000000" }],
  ])("a payload changed to name %s no longer verifies", (_what, changed) => {
    const [prefix, , signature] = issueEgressCredential(KEY, CLAIMS).split(".");
    const payload = payloadOf([
      changed.namespace,
      changed.name,
      changed.uid,
      changed.role,
      changed.destinations,
    ]);
    expect(verifyEgressCredential(KEY, `${prefix}.${payload}.${signature}`)).toEqual({
      ok: false,
      reason: "bad-signature",
    });
  });

  it("a run credential (agw1) is never an egress credential, even re-prefixed", () => {
    const run = issueRunCredential(KEY, {
      namespace: "ai-agents",
      name: "x",
      uid: "u-1",
      vendor: "anthropic",
    });
    expect(verifyEgressCredential(KEY, run)).toEqual({ ok: false, reason: "malformed" });
    expect(verifyEgressCredential(KEY, run.replace(/^agw1/, "agx1"))).toEqual({
      ok: false,
      reason: "bad-signature",
    });
  });

  it("an egress credential (agx1) is never a run credential, even re-prefixed", () => {
    const egress = issueEgressCredential(KEY, CLAIMS);
    expect(verifyRunCredential(KEY, egress)).toEqual({ ok: false, reason: "malformed" });
    // Its payload also fits no run credential; a re-prefixed one fails on the MAC's domain first.
    const small = issueEgressCredential(KEY, { ...CLAIMS, destinations: [] });
    expect(verifyRunCredential(KEY, small.replace(/^agx1/, "agw1"))).toEqual({
      ok: false,
      reason: "bad-signature",
    });
  });

  it("the domain string is part of the MAC: the run credential's domain does not sign an egress one", () => {
    const payload = payloadOf(["ai-agents", "x", "u-1", "agent", []]);
    const runDomain = macOf(payload, "agents.re-cinq.com/model-gateway-credential/v1");
    expect(verifyEgressCredential(KEY, `agx1.${payload}.${runDomain}`)).toEqual({
      ok: false,
      reason: "bad-signature",
    });
    expect(verifyEgressCredential(KEY, `agx1.${payload}.${macOf(payload)}`).ok).toBe(true);
  });

  it.each([
    ["empty", ""],
    ["two parts", "agx1.abc"],
    ["not base64url", "agx1.a+b/c.def"],
    ["over-long", `agx1.${"a".repeat(MAX_EGRESS_CREDENTIAL_LENGTH)}.b`],
  ])("%s is malformed", (_what, token) => {
    expect(verifyEgressCredential(KEY, token)).toEqual({ ok: false, reason: "malformed" });
  });

  it.each([
    ["four fields", ["ai-agents", "x", "u-1", "agent"]],
    ["an unknown role", ["ai-agents", "x", "u-1", "witness", []]],
    ["destinations not a list", ["ai-agents", "x", "u-1", "agent", "github.com:443"]],
    ["a destination without a port", ["ai-agents", "x", "u-1", "agent", ["github.com"]]],
    ["a destination not canonical", ["ai-agents", "x", "u-1", "agent", ["GitHub.com:443"]]],
    ["a namespace that is not one", ["Not_A_Namespace", "x", "u-1", "agent", []]],
  ])("a signed payload with %s is malformed", (_what, fields) => {
    const payload = payloadOf(fields);
    expect(verifyEgressCredential(KEY, `agx1.${payload}.${macOf(payload)}`)).toEqual({
      ok: false,
      reason: "malformed",
    });
  });

  it("issuing refuses bad claims, a short key and a credential past the bound", () => {
    expect(() => issueEgressCredential(KEY, { ...CLAIMS, role: "witness" as never })).toThrow(/role/);
    expect(() => issueEgressCredential(KEY, { ...CLAIMS, destinations: ["github.com"] })).toThrow(
      /destinations/,
    );
    expect(() => issueEgressCredential(Buffer.from("short"), CLAIMS)).toThrow(/32 bytes/);
    const many = Array.from({ length: 400 }, (_, i) => `host-${i}.example.com:443`);
    const claims = { ...CLAIMS, destinations: many };
    expect(egressCredentialLength(claims)).toBeGreaterThan(MAX_EGRESS_CREDENTIAL_LENGTH);
    expect(() => issueEgressCredential(KEY, claims)).toThrow(/more than 8192/);
  });
});
