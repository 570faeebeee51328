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
import { createHmac, timingSafeEqual } from "node:crypto";
import type { ModelApiFamily } from "../cli/agent-clis.js";

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

const MAC_BYTES = 32;
const DNS_LABELS = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const UID = /^[A-Za-z0-9-]{1,64}$/;

function mac(key: Uint8Array, payload: string): Buffer {
  return createHmac("sha256", key).update(`${CREDENTIAL_DOMAIN}\n${payload}`, "utf8").digest();
}

/** Why claims are not a run's, or undefined when they are well formed. */
export function claimsProblem(claims: RunClaims): string | undefined {
  if (!DNS_LABELS.test(claims.namespace) || claims.namespace.length > 63) return "namespace";
  if (!DNS_LABELS.test(claims.name)) return "name";
  if (!UID.test(claims.uid)) return "uid";
  if (!isGatewayVendor(claims.vendor)) return "vendor";
  return undefined;
}

export function issueRunCredential(key: Uint8Array, claims: RunClaims): string {
  const problem = claimsProblem(claims);
  if (problem) throw new Error(`gateway credential: the ${problem} is not valid`);
  if (key.byteLength < MIN_KEY_BYTES)
    throw new Error(`gateway credential: the key has fewer than ${MIN_KEY_BYTES} bytes`);
  const payload = Buffer.from(
    JSON.stringify([claims.namespace, claims.name, claims.uid, claims.vendor]),
    "utf8",
  ).toString("base64url");
  return `${CREDENTIAL_PREFIX}.${payload}.${mac(key, payload).toString("base64url")}`;
}

export type CredentialCheck =
  | { ok: true; claims: RunClaims }
  | { ok: false; reason: "malformed" | "bad-signature" };

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * Whether `token` is a credential this key signed. The MAC is compared in constant time and
 * always over 32 bytes (a short or undecodable signature is compared against zeros and then
 * refused), so timing tells nothing about how close a forgery came.
 */
export function verifyRunCredential(key: Uint8Array, token: string): CredentialCheck {
  if (token.length > MAX_CREDENTIAL_LENGTH) return { ok: false, reason: "malformed" };
  const parts = token.split(".");
  const [prefix, payload, signature] = parts;
  if (parts.length !== 3 || prefix !== CREDENTIAL_PREFIX || !payload || !signature) {
    return { ok: false, reason: "malformed" };
  }
  if (!BASE64URL.test(payload) || !BASE64URL.test(signature)) return { ok: false, reason: "malformed" };
  const presented = Buffer.from(signature, "base64url");
  const expected = mac(key, payload);
  const sameLength = presented.byteLength === MAC_BYTES;
  const equal = timingSafeEqual(sameLength ? presented : Buffer.alloc(MAC_BYTES), expected);
  if (!equal || !sameLength) return { ok: false, reason: "bad-signature" };
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return { ok: false, reason: "malformed" };
  }
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
