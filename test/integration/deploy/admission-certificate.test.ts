/**
 * components/admission without cert-manager and its issue-certificate.sh (docs/admission.md#without-cert-manager),
 * run the way a platform team runs them against the real API server: `kubectl apply -k`, then the
 * script. (The install test on the real node runs the same with the controller serving it.)
 */
import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { once } from "node:events";
import { join } from "node:path";
import { connect, createServer } from "node:tls";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, type StagedInstall, stageInstall } from "../../deploy/render.js";
import { kubeconfigPath } from "../../harness/context.js";

const run = promisify(execFile);
const SCRIPT = join(REPO_ROOT, "deploy", "components", "admission", "issue-certificate.sh");
const DNS = "agent-controller-admission.ai-agents.svc";

const kubectl = (...args: string[]) => run("kubectl", ["--kubeconfig", kubeconfigPath(), ...args]);
const issue = (...args: string[]) =>
  run("bash", [SCRIPT, ...args], { env: { ...process.env, KUBECONFIG: kubeconfigPath() } });

async function secretData(name: string): Promise<Record<string, string>> {
  const { stdout } = await kubectl("-n", "ai-agents", "get", "secret", name, "-o", "json");
  const data = JSON.parse(stdout).data as Record<string, string>;
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]));
}

async function secretNames(): Promise<string[]> {
  const { stdout } = await kubectl(
    "-n",
    "ai-agents",
    "get",
    "secrets",
    "-o",
    "jsonpath={.items[*].metadata.name}",
  );
  return stdout.split(/\s+/).filter((n) => n !== "");
}

async function caBundle(): Promise<string> {
  const { stdout } = await kubectl(
    "get",
    "validatingwebhookconfiguration",
    "agent-controller-admission",
    "-o",
    "jsonpath={.webhooks[0].clientConfig.caBundle}",
  );
  return Buffer.from(stdout, "base64").toString();
}

/** Serves tls.crt/tls.key and connects trusting only `ca` for `servername`, as the API server does. */
async function handshake(tls: Record<string, string>, ca: string, servername: string): Promise<void> {
  const server = createServer({ cert: tls["tls.crt"], key: tls["tls.key"] }, (s) => s.end());
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  try {
    const socket = connect({ host: "127.0.0.1", port, ca, servername });
    try {
      await once(socket, "secureConnect");
    } finally {
      socket.destroy();
    }
  } finally {
    server.close();
  }
}

describe("components/admission with issue-certificate.sh", () => {
  let staged: StagedInstall;

  beforeAll(async () => {
    staged = await stageInstall(["admission"]);
    await kubectl("apply", "-k", staged.dir);
  }, 60_000);
  afterAll(async () => {
    // Left behind, the webhook would point every later test's Agents at a Service with no pods.
    await kubectl(
      "delete",
      "validatingwebhookconfiguration",
      "agent-controller-admission",
      "--ignore-not-found",
    );
    await staged?.cleanup();
  });

  let first: Record<string, string>;

  it("creates the Secret with a certificate for the Service's names, signed by the CA in the caBundle", async () => {
    const { stdout } = await issue();
    expect(stdout).toContain(`issued the webhook's serving certificate for ${DNS}`);
    expect(stdout).toContain("created a new CA for this certificate; its private key is not kept");
    // The CA's private key is never left in the namespace.
    expect(await secretNames()).not.toContain("agent-admission-ca");
    first = await secretData("agent-controller-admission-tls");
    const { stdout: raw } = await kubectl(
      "-n",
      "ai-agents",
      "get",
      "secret",
      "agent-controller-admission-tls",
      "-o",
      "json",
    );
    const secret = JSON.parse(raw) as { type: string; metadata: { annotations?: Record<string, string> } };
    expect(secret.type).toBe("kubernetes.io/tls");
    // Written server-side: no copy of the key in a last-applied-configuration annotation.
    expect(secret.metadata.annotations?.["kubectl.kubernetes.io/last-applied-configuration"]).toBeUndefined();
    expect(Object.keys(first).sort()).toEqual(["ca.crt", "tls.crt", "tls.key"]);
    const cert = new X509Certificate(first["tls.crt"] as string);
    expect(cert.subjectAltName).toBe(`DNS:${DNS}, DNS:${DNS}.cluster.local`);
    expect(cert.checkHost(DNS)).toBe(DNS);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    const bundle = await caBundle();
    expect(bundle).toBe(first["ca.crt"]);
    await handshake(first, bundle, DNS);
    await expect(handshake(first, bundle, "agent-controller-admission.other.svc")).rejects.toThrow(
      /altnames|Hostname/,
    );
  }, 60_000);

  it("a rerun rotates the certificate and the CA, bundling the previous CA so the served certificate stays trusted", async () => {
    const { stdout } = await issue();
    expect(stdout).toContain("created a new CA for this certificate");
    const second = await secretData("agent-controller-admission-tls");
    expect(second["tls.crt"]).not.toBe(first["tls.crt"]);
    expect(second["tls.key"]).not.toBe(first["tls.key"]);
    const bundle = await caBundle();
    const firstCa = first["ca.crt"] as string;
    // New CA first, then the one the first certificate was issued by; no older ones pile up.
    expect(bundle.endsWith(firstCa)).toBe(true);
    expect(bundle.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    await handshake(first, bundle, DNS);
    await handshake(second, bundle, DNS);
    await handshake(second, bundle.slice(0, bundle.length - firstCa.length), DNS);
    await expect(handshake(second, firstCa, DNS)).rejects.toThrow();
    expect(await secretNames()).not.toContain("agent-admission-ca");

    const { stdout: third } = await issue();
    expect(third).toContain("created a new CA for this certificate");
    const bundleAfter = await caBundle();
    expect(bundleAfter.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    expect(bundleAfter).not.toContain(firstCa);
  }, 60_000);

  it("deletes the CA key Secret an earlier version left in the namespace", async () => {
    await kubectl(
      "-n",
      "ai-agents",
      "create",
      "secret",
      "generic",
      "agent-admission-ca",
      "--from-literal=tls.key=legacy-ca-key",
    );
    const { stdout } = await issue();
    expect(stdout).toContain(
      "deleted Secret ai-agents/agent-admission-ca, which held an earlier CA's private key",
    );
    expect(await secretNames()).not.toContain("agent-admission-ca");
  }, 60_000);

  it("a later kubectl apply -k leaves the caBundle alone", async () => {
    const bundle = await caBundle();
    await kubectl("apply", "-k", staged.dir);
    expect(await caBundle()).toBe(bundle);
  }, 60_000);

  it("names what is missing: the namespace, the webhook configuration, the kubectl context", async () => {
    await expect(issue("--namespace", "no-such-ns")).rejects.toMatchObject({
      stderr: expect.stringContaining("namespace no-such-ns not found"),
    });
    await expect(issue("--webhook", "no-such-hook")).rejects.toMatchObject({
      stderr: expect.stringContaining("ValidatingWebhookConfiguration no-such-hook not found"),
    });
    await expect(
      run("bash", [SCRIPT], { env: { ...process.env, KUBECONFIG: join(REPO_ROOT, "no-such-kubeconfig") } }),
    ).rejects.toMatchObject({
      stderr: expect.stringContaining("kubectl cannot reach the cluster (check --context/--kubeconfig)"),
    });
  }, 60_000);
});
