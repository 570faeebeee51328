import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { certificateProblem, webhookHost } from "./certificate-check.js";

const HOST = webhookHost("agent-controller-admission", "ai-agents");
const DAY = 86_400_000;
let dir: string;

/** A self-signed ECDSA certificate for `names`, valid 30 days from now, made by openssl. */
function certFor(names: string[]): string {
  const file = join(dir, `${names.join("_") || "none"}.crt`);
  execFileSync("openssl", [
    "req",
    "-x509",
    "-nodes",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-keyout",
    join(dir, "key.pem"),
    "-out",
    file,
    "-days",
    "30",
    "-subj",
    `/CN=${names[0] ?? "nobody"}`,
    ...(names.length > 0 ? ["-addext", `subjectAltName=${names.map((n) => `DNS:${n}`).join(",")}`] : []),
  ]);
  return readFileSync(file, "utf8");
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cert-check-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("certificateProblem", () => {
  it("accepts a certificate for the Service's name, well within its validity", () => {
    expect(certificateProblem(certFor([HOST, `${HOST}.cluster.local`]), HOST, Date.now())).toBeUndefined();
  });

  it("names what the certificate is for and what it should be for", () => {
    const pem = certFor(["agent-controller-admission.other.svc"]);
    expect(certificateProblem(pem, HOST, Date.now())).toEqual({
      reason: "AdmissionCertificateInvalid",
      message:
        "the admission webhook's certificate is for agent-controller-admission.other.svc, not agent-controller-admission.ai-agents.svc: the API server refuses it and writes go through without the webhook's warnings; reissue it (docs/admission.md#certificates) for agent-controller-admission.ai-agents.svc",
    });
  });

  it.each([
    [
      "expired",
      (to: number) => to + DAY,
      "AdmissionCertificateInvalid",
      /^the admission webhook's certificate expired at /,
    ],
    [
      "not valid yet",
      (_: number, from: number) => from - DAY,
      "AdmissionCertificateInvalid",
      /is not valid before .*check the clock/,
    ],
    [
      "expiring within 14 days",
      (to: number) => to - 5 * DAY,
      "AdmissionCertificateExpiring",
      /, in 5 days: renew it before then/,
    ],
    ["15 days left", (to: number) => to - 15 * DAY - 1000, undefined, undefined],
  ])("%s", (_, when, reason, words) => {
    const pem = certFor([HOST]);
    const cert = new X509Certificate(pem);
    const finding = certificateProblem(pem, HOST, when(Date.parse(cert.validTo), Date.parse(cert.validFrom)));
    expect(finding?.reason).toBe(reason);
    if (words) expect(finding?.message).toMatch(words);
  });

  it("a certificate served with another key is said so; its own key passes", () => {
    const pem = certFor([HOST]);
    const own = readFileSync(join(dir, "key.pem"));
    expect(certificateProblem(pem, HOST, Date.now(), own)).toBeUndefined();
    certFor(["other"]);
    const other = readFileSync(join(dir, "key.pem"));
    expect(certificateProblem(pem, HOST, Date.now(), other)?.message).toBe(
      "the admission webhook's certificate does not match its key (tls.key): every TLS handshake fails and writes go through without the webhook's warnings; reissue it (docs/admission.md#certificates)",
    );
    expect(certificateProblem(pem, HOST, Date.now(), "not a key")?.reason).toBe(
      "AdmissionCertificateInvalid",
    );
  });

  it("a file that is no certificate is said so", () => {
    expect(certificateProblem("not a certificate", HOST, Date.now())?.message).toMatch(
      /^the admission webhook's certificate cannot be read \(.+\): the API server refuses it/,
    );
  });
});
