/**
 * Whether the webhook's serving certificate is one the API server will accept (docs/admission.md#certificates):
 * issued for the Service's DNS name, within its validity, not about to expire. A wrong one fails
 * open (failurePolicy Ignore): writes go through without warnings and nobody is told, so the
 * controller says it (src/controller/self-checks.ts). Pure: the certificate's PEM, the name, the
 * time.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";

/** Warned about this long before the certificate expires. */
export const EXPIRY_WARNING_DAYS = 14;
const DAY_MS = 86_400_000;

export interface CertificateFinding {
  reason: "AdmissionCertificateInvalid" | "AdmissionCertificateExpiring";
  message: string;
}

/** The webhook's DNS name as the API server calls it: `<service>.<namespace>.svc`. */
export const webhookHost = (service: string, namespace: string): string => `${service}.${namespace}.svc`;

/** `keyPem`: the key served with it (tls.key), when read; a certificate for another key fails every handshake. */
export function certificateProblem(
  pem: string | Buffer,
  host: string,
  now: number,
  keyPem?: string | Buffer,
): CertificateFinding | undefined {
  const fix = "reissue it (docs/admission.md#certificates)";
  const silent = "the API server refuses it and writes go through without the webhook's warnings";
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch (err) {
    return {
      reason: "AdmissionCertificateInvalid",
      message: `the admission webhook's certificate cannot be read (${(err as Error).message}): ${silent}; ${fix}`,
    };
  }
  if (keyPem !== undefined) {
    let matches = false;
    try {
      matches = cert.checkPrivateKey(createPrivateKey(keyPem));
    } catch {
      matches = false;
    }
    if (!matches)
      return {
        reason: "AdmissionCertificateInvalid",
        message: `the admission webhook's certificate does not match its key (tls.key): every TLS handshake fails and writes go through without the webhook's warnings; ${fix}`,
      };
  }
  if (cert.checkHost(host) === undefined) {
    const names = cert.subjectAltName?.replaceAll("DNS:", "") || cert.subject.replaceAll("\n", ", ");
    return {
      reason: "AdmissionCertificateInvalid",
      message: `the admission webhook's certificate is for ${names}, not ${host}: ${silent}; ${fix} for ${host}`,
    };
  }
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  if (now < from)
    return {
      reason: "AdmissionCertificateInvalid",
      message: `the admission webhook's certificate is not valid before ${new Date(from).toISOString()}: ${silent}; check the clock or ${fix}`,
    };
  if (now >= to)
    return {
      reason: "AdmissionCertificateInvalid",
      message: `the admission webhook's certificate expired at ${new Date(to).toISOString()}: ${silent}; ${fix}`,
    };
  const left = Math.floor((to - now) / DAY_MS);
  if (left < EXPIRY_WARNING_DAYS)
    return {
      reason: "AdmissionCertificateExpiring",
      message: `the admission webhook's certificate expires at ${new Date(to).toISOString()}, in ${left} days: renew it before then (docs/admission.md#certificates)`,
    };
  return undefined;
}
