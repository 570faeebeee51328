/**
 * The egress credential (docs/gateway.md#egress): a token naming one run (namespace, name, uid),
 * one of its programs (the role: init, agent or courier) and the destinations that role may reach
 * through the gateway's egress proxy. The controller signs it at Job build with the model
 * gateway's key; the gateway verifies it and allows exactly the signed destinations, reading no
 * Station or definition (a Station edit applies to the next run, as every template edit does).
 *
 * Never a run credential nor the other way round: its own prefix (`agx1`) and its own domain
 * string under the MAC (../run-job/signed-token.ts), even under the same key.
 *
 * Format: `agx1.<base64url(JSON [namespace, name, uid, role, [destinations...]])>.<base64url(MAC)>`,
 * at most MAX_EGRESS_CREDENTIAL_LENGTH characters. Pure.
 */
import { MIN_KEY_BYTES, type RunRef, runRefProblem } from "../run-job/gateway-credential.js";
import {
  signToken,
  type TokenKind,
  tokenLength,
  tokenPayload,
  verifyToken,
} from "../run-job/signed-token.js";
import { EGRESS_ROLES, type EgressRole, parseDestination } from "./destinations.js";

export type { EgressRole } from "./destinations.js";

export interface EgressClaims extends RunRef {
  role: EgressRole;
  /** Canonical destinations (destinations.ts), each `host:port` or `*.suffix:port`. */
  destinations: string[];
}

export const EGRESS_CREDENTIAL_PREFIX = "agx1";
export const EGRESS_CREDENTIAL_DOMAIN = "agents.re-cinq.com/egress-credential/v1";
/** A proxy password this long still fits every client's Proxy-Authorization header. */
export const MAX_EGRESS_CREDENTIAL_LENGTH = 8192;

const EGRESS_CREDENTIAL: TokenKind = {
  prefix: EGRESS_CREDENTIAL_PREFIX,
  domain: EGRESS_CREDENTIAL_DOMAIN,
  maxLength: MAX_EGRESS_CREDENTIAL_LENGTH,
};

const fieldsOf = (c: EgressClaims): unknown[] => [c.namespace, c.name, c.uid, c.role, c.destinations];

const isRole = (v: unknown): v is EgressRole => (EGRESS_ROLES as readonly unknown[]).includes(v);

/** Which claim is not valid (namespace, name, uid, role, destinations), or undefined. */
export function egressClaimsProblem(claims: EgressClaims): string | undefined {
  const ref = runRefProblem(claims);
  if (ref) return ref;
  if (!isRole(claims.role)) return "role";
  const canonical = (d: unknown) => typeof d === "string" && parseDestination(d) === d;
  if (!Array.isArray(claims.destinations) || !claims.destinations.every(canonical)) return "destinations";
  return undefined;
}

/** The length the credential for these claims has, whatever the key: the builder's bound check. */
export function egressCredentialLength(claims: EgressClaims): number {
  return tokenLength(EGRESS_CREDENTIAL, tokenPayload(fieldsOf(claims)));
}

/** Throws on claims that are not a run's, a short key, or a credential past the bound. */
export function issueEgressCredential(key: Uint8Array, claims: EgressClaims): string {
  const problem = egressClaimsProblem(claims);
  if (problem) throw new Error(`egress credential: the ${problem} is not valid`);
  if (key.byteLength < MIN_KEY_BYTES)
    throw new Error(`egress credential: the key has fewer than ${MIN_KEY_BYTES} bytes`);
  const token = signToken(EGRESS_CREDENTIAL, key, fieldsOf(claims));
  if (token.length > MAX_EGRESS_CREDENTIAL_LENGTH) {
    throw new Error(
      `egress credential: ${token.length} characters, more than ${MAX_EGRESS_CREDENTIAL_LENGTH}`,
    );
  }
  return token;
}

export type EgressCredentialCheck =
  | { ok: true; claims: EgressClaims }
  | { ok: false; reason: "malformed" | "bad-signature" };

/** Whether this key signed `token` as an egress credential; the MAC compared in constant time. */
export function verifyEgressCredential(key: Uint8Array, token: string): EgressCredentialCheck {
  const checked = verifyToken(EGRESS_CREDENTIAL, key, token);
  if (!checked.ok) return checked;
  const fields = checked.fields;
  if (!Array.isArray(fields) || fields.length !== 5) return { ok: false, reason: "malformed" };
  const [namespace, name, uid, role, destinations] = fields as unknown[];
  if (typeof namespace !== "string" || typeof name !== "string" || typeof uid !== "string") {
    return { ok: false, reason: "malformed" };
  }
  const claims = { namespace, name, uid, role, destinations } as EgressClaims;
  if (egressClaimsProblem(claims)) return { ok: false, reason: "malformed" };
  return { ok: true, claims };
}
