/**
 * The egress credential a proxy request presents: `Proxy-Authorization: Basic base64(user:pass)`,
 * the password being the credential and the user the role, which is informational only (the role
 * the gateway trusts is the one signed into the credential). What HTTPS_PROXY's userinfo becomes in
 * curl, npm, undici and the CLIs.
 */

export type PresentedCredential = { ok: true; credential: string } | { ok: false; reason: string };

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The credential of a request's raw headers (Node keeps only the first of repeated ones). */
export function proxyCredential(rawHeaders: readonly string[]): PresentedCredential {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as string).toLowerCase() === "proxy-authorization")
      values.push(rawHeaders[i + 1] as string);
  }
  if (values.length === 0)
    return { ok: false, reason: "no Proxy-Authorization (the run's proxy credential)" };
  if (values.length > 1) return { ok: false, reason: "more than one Proxy-Authorization" };
  const header = values[0] as string;
  const match = /^Basic[ ]+(\S+)[ ]*$/i.exec(header);
  if (match === null) return { ok: false, reason: "Proxy-Authorization is not Basic" };
  const encoded = match[1] as string;
  if (!BASE64.test(encoded) || encoded.length % 4 !== 0) {
    return { ok: false, reason: "Proxy-Authorization is not valid base64" };
  }
  const decoded = Buffer.from(encoded, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return { ok: false, reason: "Proxy-Authorization holds no user:password" };
  const credential = decoded.slice(colon + 1);
  if (credential === "") return { ok: false, reason: "Proxy-Authorization holds an empty password" };
  return { ok: true, credential };
}
