import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { realtimeRunToken as runToken } from "./env.js";
import {
  CREDENTIAL_PREFIX,
  credentialKeyFromFile,
  issueRunCredential,
  MAX_CREDENTIAL_LENGTH,
  type RunClaims,
  verifyRunCredential,
} from "./gateway-credential.js";

const KEY = Buffer.from("k".repeat(32));
const OTHER_KEY = Buffer.from("o".repeat(32));
const CLAIMS: RunClaims = {
  namespace: "ai-agents",
  name: "fix-readme",
  uid: "6f1c2e0a-1111-4c2b-9d3e-0123456789ab",
  vendor: "anthropic",
};

describe("run credentials (docs/gateway.md#run-credentials)", () => {
  it("a credential the gateway key signed verifies to the Agent and vendor it names", () => {
    const token = issueRunCredential(KEY, CLAIMS);
    expect(token.startsWith(`${CREDENTIAL_PREFIX}.`)).toBe(true);
    expect(token).toMatch(/^[A-Za-z0-9._-]+$/);
    expect(verifyRunCredential(KEY, token)).toEqual({ ok: true, claims: CLAIMS });
  });

  it("is refused under another key", () => {
    expect(verifyRunCredential(OTHER_KEY, issueRunCredential(KEY, CLAIMS))).toEqual({
      ok: false,
      reason: "bad-signature",
    });
  });

  it("a payload changed to name another Agent or vendor no longer verifies", () => {
    const [prefix, , signature] = issueRunCredential(KEY, CLAIMS).split(".");
    for (const changed of [
      { ...CLAIMS, name: "other-run" },
      { ...CLAIMS, namespace: "team-b" },
      { ...CLAIMS, vendor: "openai" as const },
      { ...CLAIMS, uid: "00000000-0000-0000-0000-000000000000" },
    ]) {
      const payload = Buffer.from(
        JSON.stringify([changed.namespace, changed.name, changed.uid, changed.vendor]),
      ).toString("base64url");
      expect(verifyRunCredential(KEY, `${prefix}.${payload}.${signature}`)).toEqual({
        ok: false,
        reason: "bad-signature",
      });
    }
  });

  it("is not the prompt API's run token, nor derivable from it, even under the same key", () => {
    const token = issueRunCredential(KEY, CLAIMS);
    const promptToken = runToken(KEY.toString("utf8"), CLAIMS.uid);
    const signature = token.split(".")[2] as string;
    expect(Buffer.from(signature, "base64url").toString("hex")).not.toBe(promptToken);
    // The prompt API's token presented as a credential, bare or dressed as one, is refused.
    expect(verifyRunCredential(KEY, promptToken).ok).toBe(false);
    const payload = token.split(".")[1] as string;
    const dressed = `${CREDENTIAL_PREFIX}.${payload}.${Buffer.from(promptToken, "hex").toString("base64url")}`;
    expect(verifyRunCredential(KEY, dressed)).toEqual({ ok: false, reason: "bad-signature" });
    // An HMAC of the bare payload (no domain) is refused too: the domain is part of the message.
    const undomained = createHmac("sha256", KEY).update(payload).digest("base64url");
    expect(verifyRunCredential(KEY, `${CREDENTIAL_PREFIX}.${payload}.${undomained}`).ok).toBe(false);
  });

  it.each([
    ["empty", ""],
    ["another prefix", issueRunCredential(KEY, CLAIMS).replace(/^agw1/, "agw2")],
    ["two parts", "agw1.abc"],
    ["four parts", `${issueRunCredential(KEY, CLAIMS)}.x`],
    ["not base64url", "agw1.a+b/c.def"],
    ["too long", `agw1.${"a".repeat(MAX_CREDENTIAL_LENGTH)}.b`],
    ["a provider key", "sk-ant-api03-abcdefghijklmnop"],
  ])("%s is malformed", (_what, token) => {
    expect(verifyRunCredential(KEY, token)).toEqual({ ok: false, reason: "malformed" });
  });

  it("a short signature is refused as a bad signature, not an error", () => {
    const [prefix, payload] = issueRunCredential(KEY, CLAIMS).split(".");
    expect(verifyRunCredential(KEY, `${prefix}.${payload}.AAAA`)).toEqual({
      ok: false,
      reason: "bad-signature",
    });
  });

  it("a signed payload that is not four names is malformed", () => {
    const payload = Buffer.from(JSON.stringify(["ai-agents", "x"])).toString("base64url");
    const mac = createHmac("sha256", KEY)
      .update(`agents.re-cinq.com/model-gateway-credential/v1\n${payload}`)
      .digest("base64url");
    expect(verifyRunCredential(KEY, `agw1.${payload}.${mac}`)).toEqual({ ok: false, reason: "malformed" });
  });

  it("issuing refuses claims that are not a run's and a key shorter than 32 bytes", () => {
    expect(() => issueRunCredential(KEY, { ...CLAIMS, namespace: "Not_A_Namespace" })).toThrow(/namespace/);
    expect(() => issueRunCredential(KEY, { ...CLAIMS, vendor: "mistral" as never })).toThrow(/vendor/);
    expect(() => issueRunCredential(Buffer.from("short"), CLAIMS)).toThrow(/32 bytes/);
  });
});

describe("the gateway key from its file (docs/gateway.md#configuration)", () => {
  it.each([
    ["one trailing newline dropped", `${"k".repeat(32)}\n`, "k".repeat(32)],
    ["a CRLF dropped", `${"k".repeat(32)}\r\n`, "k".repeat(32)],
    ["only one newline dropped", `${"k".repeat(32)}\n\n`, `${"k".repeat(32)}\n`],
    ["kept as written otherwise", ` ${"k".repeat(31)}`, ` ${"k".repeat(31)}`],
  ])("%s", (_what, text, key) => {
    expect(credentialKeyFromFile(Buffer.from(text))).toEqual(Buffer.from(key));
  });

  it("a key under 32 bytes, after the newline is dropped, is refused with its length", () => {
    expect(credentialKeyFromFile(Buffer.from(`${"k".repeat(31)}\n`))).toBe(
      "the gateway key has 31 bytes, at least 32 are needed",
    );
  });
});
