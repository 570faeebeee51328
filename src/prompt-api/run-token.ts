import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/**
 * A realtime run's own token (seed; encoding docs/decisions.md D-40): lowercase hex of HMAC-SHA256 with the
 * agent-realtime Secret's signing-key as key and the Agent's metadata.uid as message. The Job
 * builder hands the pod only the SHA-256 of this token, so both sides must derive it identically.
 */
export function runToken(signingKey: string, agentUid: string): string {
  return createHmac("sha256", signingKey).update(agentUid, "utf8").digest("hex");
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/**
 * Constant-time equality of two secrets of any length: comparing their SHA-256 digests keeps the
 * comparison length-independent, so neither the content nor the length of the expected secret
 * leaks through timing.
 */
export function secretsEqual(presented: string, expected: string): boolean {
  const a = createHash("sha256").update(presented, "utf8").digest();
  const b = createHash("sha256").update(expected, "utf8").digest();
  return timingSafeEqual(a, b);
}

/**
 * The token of an `Authorization: Bearer <token>` header, or undefined when the header is absent
 * or uses another scheme. The scheme is case-insensitive (RFC 7235).
 */
export function bearerToken(header: string | undefined | null): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
  return m?.[1];
}

/** Whether the Authorization header carries exactly the expected bearer token. */
export function bearerMatches(header: string | undefined | null, expected: string): boolean {
  const token = bearerToken(header);
  // Still run the comparison when the header is unusable, so a missing header costs the same.
  return secretsEqual(token ?? "", expected) && token !== undefined;
}
