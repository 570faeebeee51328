import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface PlaneCerts {
  caCert: string;
  apiServerCert: string;
  apiServerKey: string;
  adminCert: string;
  adminKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
}

async function openssl(dir: string, args: string[]): Promise<void> {
  try {
    await run("openssl", args, { cwd: dir });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`openssl ${args[0]} failed in ${dir}: ${e.stderr ?? e.message}`);
  }
}

/**
 * Fresh certificates for one plane: a CA, the API server's serving cert for 127.0.0.1/localhost,
 * an admin client cert in system:masters, and the service-account signing key pair.
 */
export async function generateCerts(dir: string): Promise<PlaneCerts> {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  await openssl(dir, [
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "30",
    "-subj",
    "/CN=test-plane-ca",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  await writeFile(
    join(dir, "server.ext"),
    "subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:10.96.0.1\n" +
      "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n",
  );
  await writeFile(
    join(dir, "client.ext"),
    "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n",
  );
  const leaf = async (name: string, subject: string, ext: string) => {
    await openssl(dir, ["req", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject]);
    await openssl(dir, [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      `${name}.crt`,
      "-days",
      "30",
      "-extfile",
      ext,
    ]);
  };
  await leaf("apiserver", "/CN=localhost", "server.ext");
  await leaf("admin", "/O=system:masters/CN=test-admin", "client.ext");
  await openssl(dir, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key"]);
  await openssl(dir, ["pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);
  return {
    caCert: join(dir, "ca.crt"),
    apiServerCert: join(dir, "apiserver.crt"),
    apiServerKey: join(dir, "apiserver.key"),
    adminCert: join(dir, "admin.crt"),
    adminKey: join(dir, "admin.key"),
    serviceAccountKey: join(dir, "sa.key"),
    serviceAccountPub: join(dir, "sa.pub"),
  };
}

/** An admin kubeconfig with everything embedded, so it stays valid if copied elsewhere. */
export async function writeAdminKubeconfig(path: string, server: string, certs: PlaneCerts): Promise<void> {
  const b64 = async (file: string) => (await readFile(file)).toString("base64");
  const text = [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: local",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${await b64(certs.caCert)}`,
    "users:",
    "- name: admin",
    "  user:",
    `    client-certificate-data: ${await b64(certs.adminCert)}`,
    `    client-key-data: ${await b64(certs.adminKey)}`,
    "contexts:",
    "- name: local",
    "  context: {cluster: local, user: admin}",
    "current-context: local",
    "",
  ].join("\n");
  await writeFile(path, text, { mode: 0o600 });
}

/**
 * A serving certificate signed by the plane's CA (`ca.crt`/`ca.key` in `dir`) for a local server
 * on 127.0.0.1 (and `ips`), e.g. the pod runner's kubelet endpoint. Returns the cert and key paths.
 */
export async function generateServingCert(
  dir: string,
  name: string,
  ips: string[] = [],
): Promise<{ cert: string; key: string }> {
  const san = ["DNS:localhost", `DNS:${name}`, "IP:127.0.0.1", ...ips.map((ip) => `IP:${ip}`)].join(",");
  await writeFile(
    join(dir, `${name}.ext`),
    `subjectAltName=${san}\n` +
      "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n",
  );
  return await signLeaf(dir, name, `/CN=${name}`);
}

/** A client certificate signed by the plane's CA for `subject` (e.g. `/O=system:nodes/CN=system:node:n`). */
export async function generateClientCert(
  dir: string,
  name: string,
  subject: string,
): Promise<{ cert: string; key: string }> {
  await writeFile(
    join(dir, `${name}.ext`),
    "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n",
  );
  return await signLeaf(dir, name, subject);
}

async function signLeaf(dir: string, name: string, subject: string): Promise<{ cert: string; key: string }> {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  await openssl(dir, ["req", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject]);
  await openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    `${name}.crt`,
    "-days",
    "30",
    "-extfile",
    `${name}.ext`,
  ]);
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}
