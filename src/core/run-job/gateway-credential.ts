/**
 * The per-run model gateway credential (docs/gateway.md#run-credentials): a token naming one Agent
 * (namespace, name, uid) and the one vendor its run may call, signed with HMAC-SHA256 under the
 * gateway's own key.
 *
 * It is kept apart from the prompt API's run token (an HMAC-SHA256 of the Agent's uid under the
 * agent-realtime Secret's signing-key, the only token a run pod's supervisor accepts) twice over:
 * a different key, and a domain-separated message (`CREDENTIAL_DOMAIN`, then the claims), so even
 * one key used for both could never turn one token into the other, and the agent container never
 * holds its own supervisor's token.
 *
 * Format: `agw1.<base64url(JSON [namespace, name, uid, vendor])>.<base64url(MAC)>`, ASCII with no
 * spaces, so every CLI carries it unchanged in `x-api-key`, `Authorization: Bearer` or
 * `x-goog-api-key`.
 *
 * In the core because both sides need it: the controller's Job builder issues it, the gateway
 * (src/gateway) verifies it, and neither may import the other. Pure: HMAC-SHA256 is deterministic.
 */
import type { ModelApiFamily } from "../cli/agent-clis.js";
import { signToken, type TokenKind, verifyToken } from "./signed-token.js";

/** The model APIs the gateway serves, one per vendor: the unit a credential authorises. */
export type GatewayVendor = ModelApiFamily;

export const GATEWAY_VENDORS: readonly GatewayVendor[] = ["anthropic", "openai", "gemini"];

export function isGatewayVendor(value: unknown): value is GatewayVendor {
  return typeof value === "string" && (GATEWAY_VENDORS as readonly string[]).includes(value);
}

export interface RunRef {
  namespace: string;
  name: string;
  uid: string;
}

export interface RunClaims extends RunRef {
  /** The vendor of the run's effective model: the only API this credential may call. */
  vendor: GatewayVendor;
}

export const CREDENTIAL_PREFIX = "agw1";
/** What the MAC is computed over first: names the purpose and version, never a bare uid. */
export const CREDENTIAL_DOMAIN = "agents.re-cinq.com/model-gateway-credential/v1";
/** Longer tokens are refused before any decoding or hashing. */
export const MAX_CREDENTIAL_LENGTH = 1024;
/** The gateway key's least length: 32 bytes, the size of the HMAC-SHA256 output. */
export const MIN_KEY_BYTES = 32;

const RUN_CREDENTIAL: TokenKind = {
  prefix: CREDENTIAL_PREFIX,
  domain: CREDENTIAL_DOMAIN,
  maxLength: MAX_CREDENTIAL_LENGTH,
};
const DNS_LABELS = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const UID = /^[A-Za-z0-9-]{1,64}$/;

/** Which of the run's names is not a run's (namespace, name, uid), or undefined when none. */
export function runRefProblem(ref: RunRef): string | undefined {
  if (!DNS_LABELS.test(ref.namespace) || ref.namespace.length > 63) return "namespace";
  if (!DNS_LABELS.test(ref.name)) return "name";
  if (!UID.test(ref.uid)) return "uid";
  return undefined;
}

/** Why claims are not a run's, or undefined when they are well formed. */
export function claimsProblem(claims: RunClaims): string | undefined {
  return runRefProblem(claims) ?? (isGatewayVendor(claims.vendor) ? undefined : "vendor");
}

export function issueRunCredential(key: Uint8Array, claims: RunClaims): string {
  const problem = claimsProblem(claims);
  if (problem) throw new Error(`gateway credential: the ${problem} is not valid`);
  if (key.byteLength < MIN_KEY_BYTES)
    throw new Error(`gateway credential: the key has fewer than ${MIN_KEY_BYTES} bytes`);
  return signToken(RUN_CREDENTIAL, key, [claims.namespace, claims.name, claims.uid, claims.vendor]);
}

export type CredentialCheck =
  | { ok: true; claims: RunClaims }
  | { ok: false; reason: "malformed" | "bad-signature" };

/**
 * Whether `token` is a credential this key signed. The MAC is compared in constant time
 * (signed-token.ts), so timing tells nothing about how close a forgery came.
 */
export function verifyRunCredential(key: Uint8Array, token: string): CredentialCheck {
  const checked = verifyToken(RUN_CREDENTIAL, key, token);
  if (!checked.ok) return checked;
  const fields = checked.fields;
  if (!Array.isArray(fields) || fields.length !== 4 || !fields.every((f) => typeof f === "string")) {
    return { ok: false, reason: "malformed" };
  }
  const [namespace, name, uid, vendor] = fields as string[];
  const claims = { namespace, name, uid, vendor } as RunClaims;
  if (claimsProblem(claims)) return { ok: false, reason: "malformed" };
  return { ok: true, claims };
}

/**
 * The gateway key as both sides read it from their key file (a mounted Secret key): the file's
 * text with one trailing newline dropped (how such files are usually written; not part of the
 * key). A string when the key is too short, naming the length found.
 */
export function credentialKeyFromFile(bytes: Uint8Array): Buffer | string {
  const key = Buffer.from(
    Buffer.from(bytes)
      .toString("utf8")
      .replace(/\r?\n$/, ""),
    "utf8",
  );
  if (key.byteLength < MIN_KEY_BYTES) {
    return `the gateway key has ${key.byteLength} bytes, at least ${MIN_KEY_BYTES} are needed`;
  }
  return key;
}
