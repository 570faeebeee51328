/**
 * The format and MAC shared by the controller's signed run tokens: the model gateway's run
 * credential (gateway-credential.ts) and the egress credential (../egress/credential.ts).
 * `<prefix>.<base64url(JSON fields)>.<base64url(HMAC-SHA256(key, domain + "\n" + payload))>`.
 * Each kind has its own prefix and its own domain string, so a token of one kind never verifies
 * as the other, even under the same key. Pure: HMAC-SHA256 is deterministic.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export interface TokenKind {
  /** The token's first part, e.g. `agw1`. */
  prefix: string;
  /** What the MAC is computed over first: names the purpose and version. */
  domain: string;
  /** Longer tokens are refused before any decoding or hashing. */
  maxLength: number;
}

const MAC_BYTES = 32;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

function mac(kind: TokenKind, key: Uint8Array, payload: string): Buffer {
  return createHmac("sha256", key).update(`${kind.domain}\n${payload}`, "utf8").digest();
}

/** The payload part for these fields: what the token's length follows from. */
export function tokenPayload(fields: unknown[]): string {
  return Buffer.from(JSON.stringify(fields), "utf8").toString("base64url");
}

/** The length of a token over `payload`: prefix, payload, a 32-byte MAC and two dots. */
export function tokenLength(kind: TokenKind, payload: string): number {
  return kind.prefix.length + payload.length + Math.ceil((MAC_BYTES * 4) / 3) + 2;
}

export function signToken(kind: TokenKind, key: Uint8Array, fields: unknown[]): string {
  const payload = tokenPayload(fields);
  return `${kind.prefix}.${payload}.${mac(kind, key, payload).toString("base64url")}`;
}

export type TokenCheck = { ok: true; fields: unknown } | { ok: false; reason: "malformed" | "bad-signature" };

/**
 * The JSON fields of `token` when this key signed it for this kind. The MAC is compared in
 * constant time and always over 32 bytes (a short or undecodable signature is compared against
 * zeros and then refused), so timing tells nothing about how close a forgery came. The fields'
 * shape is the caller's to check.
 */
export function verifyToken(kind: TokenKind, key: Uint8Array, token: string): TokenCheck {
  if (token.length > kind.maxLength) return { ok: false, reason: "malformed" };
  const parts = token.split(".");
  const [prefix, payload, signature] = parts;
  if (parts.length !== 3 || prefix !== kind.prefix || !payload || !signature) {
    return { ok: false, reason: "malformed" };
  }
  if (!BASE64URL.test(payload) || !BASE64URL.test(signature)) return { ok: false, reason: "malformed" };
  const presented = Buffer.from(signature, "base64url");
  const expected = mac(kind, key, payload);
  const sameLength = presented.byteLength === MAC_BYTES;
  const equal = timingSafeEqual(sameLength ? presented : Buffer.alloc(MAC_BYTES), expected);
  if (!equal || !sameLength) return { ok: false, reason: "bad-signature" };
  try {
    return { ok: true, fields: JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) };
  } catch {
    return { ok: false, reason: "malformed" };
  }
}
