/**
 * The egress `authorize` of a gateway that has nothing to check egress credentials with: every
 * request is a 503, so the listener fails closed and says why. The process wiring replaces it
 * with the one that verifies the credential, looks the run up and matches its signed
 * destinations (src/gateway/main.ts, egressAuthorize).
 */
import type { EgressDecision } from "./proxy-server.js";

export const EGRESS_NOT_CONFIGURED = "egress not configured";

export async function unwiredEgressAuthorize(
  _credential: string,
  _host: string,
  _port: number,
): Promise<EgressDecision> {
  return { ok: false, status: 503, reason: EGRESS_NOT_CONFIGURED };
}
