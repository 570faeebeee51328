import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { loadKubeAccess } from "./access.js";

const b64 = (s: string) => Buffer.from(s).toString("base64");

function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>, dir = tmp()): string {
  const file = join(dir, "config");
  writeFileSync(
    file,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        { name: "other", cluster: { server: "https://other.example" } },
        { name: "c", cluster },
      ],
      users: [{ name: "u", user }],
      contexts: [{ name: "ctx", context: { cluster: "c", user: "u" } }],
      "current-context": "ctx",
    }),
  );
  return file;
}

const tmp = () => mkdtempSync(join(tmpdir(), "access-"));

/** What @kubernetes/client-node makes of the same file (the reference behaviour). */
async function reference(file: string) {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  const o: Record<string, unknown> & { headers?: Record<string, string> } = {};
  await kc.applyToHTTPSOptions(o as never);
  return { server: kc.getCurrentCluster()?.server, o };
}

describe("loadKubeAccess: a kubeconfig", () => {
  it("client certificate and CA as data, as the local plane writes them: the same as client-node", async () => {
    const file = kubeconfig(
      { server: "https://127.0.0.1:6443/", "certificate-authority-data": b64("CA PEM") },
      { "client-certificate-data": b64("CERT PEM"), "client-key-data": b64("KEY PEM") },
    );
    const a = loadKubeAccess({ env: { KUBECONFIG: file } });
    const ref = await reference(file);
    expect(a?.server).toBe("https://127.0.0.1:6443");
    expect(a?.tls).toEqual({
      ca: Buffer.from("CA PEM"),
      cert: Buffer.from("CERT PEM"),
      key: Buffer.from("KEY PEM"),
    });
    expect(String(ref.o.ca)).toBe("CA PEM");
    expect(String(ref.o.cert)).toBe("CERT PEM");
    expect(String(ref.o.key)).toBe("KEY PEM");
    expect(a?.headers()).toEqual({});
  });

  it("files relative to the kubeconfig, a token file re-read, TLS server name and skip-verify", () => {
    const dir = tmp();
    mkdirSync(join(dir, "pki"));
    writeFileSync(join(dir, "pki/ca.crt"), "CA FILE");
    writeFileSync(join(dir, "token"), "tok-1\n");
    const file = kubeconfig(
      {
        server: "https://api.example:443",
        "certificate-authority": "pki/ca.crt",
        "tls-server-name": "kubernetes",
        "insecure-skip-tls-verify": true,
      },
      { tokenFile: "token" },
      dir,
    );
    const a = loadKubeAccess({ env: { KUBECONFIG: file } });
    expect(a?.tls).toEqual({
      ca: Buffer.from("CA FILE"),
      servername: "kubernetes",
      rejectUnauthorized: false,
    });
    expect(a?.headers()).toEqual({ authorization: "Bearer tok-1" });
  });

  it("a bearer token and basic auth give the same Authorization header as client-node", async () => {
    for (const user of [{ token: "abc" }, { username: "me", password: "pw" }]) {
      const file = kubeconfig({ server: "https://api.example" }, user);
      const ref = await reference(file);
      expect(loadKubeAccess({ env: { KUBECONFIG: file } })?.headers()).toEqual({
        authorization: ref.o.headers?.Authorization ?? `Basic ${b64("me:pw")}`,
      });
    }
  });

  it.each([
    ["an exec plugin", {}, { exec: { command: "aws", args: ["eks", "get-token"] } }],
    ["an auth-provider", {}, { "auth-provider": { name: "oidc" } }],
    ["impersonation", {}, { token: "t", as: "someone" }],
    ["a proxy", { "proxy-url": "http://proxy:3128" }, { token: "t" }],
  ])("%s is left to client-node (undefined)", (_what, cluster, user) => {
    const file = kubeconfig({ server: "https://api.example", ...cluster }, user);
    expect(loadKubeAccess({ env: { KUBECONFIG: file } })).toBeUndefined();
  });

  it("several $KUBECONFIG files (merged by kubectl's rules) are left to client-node", () => {
    const a = kubeconfig({ server: "https://a" }, { token: "t" });
    const b = kubeconfig({ server: "https://b" }, { token: "t" });
    expect(loadKubeAccess({ env: { KUBECONFIG: `${a}:${b}` } })).toBeUndefined();
  });

  it("without $KUBECONFIG, ~/.kube/config comes before the service account", () => {
    const home = tmp();
    mkdirSync(join(home, ".kube"));
    kubeconfig({ server: "https://home.example" }, { token: "t" }, join(home, ".kube"));
    const sa = tmp();
    writeFileSync(join(sa, "token"), "sa-token");
    writeFileSync(join(sa, "ca.crt"), "SA CA");
    const env = { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" };
    expect(loadKubeAccess({ env, home, serviceAccountDir: sa })?.server).toBe("https://home.example");
  });
});

describe("loadKubeAccess: in a pod", () => {
  it("the service account's CA and token (re-read), the service host and port", () => {
    const sa = tmp();
    writeFileSync(join(sa, "token"), "sa-token\n");
    writeFileSync(join(sa, "ca.crt"), "SA CA");
    const env = { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" };
    const a = loadKubeAccess({ env, home: tmp(), serviceAccountDir: sa });
    expect(a?.server).toBe("https://[fd00::1]:443");
    expect(a?.tls).toEqual({ ca: Buffer.from("SA CA") });
    expect(a?.headers()).toEqual({ authorization: "Bearer sa-token" });
  });

  it("nothing to go by: undefined (client-node's localhost default)", () => {
    expect(loadKubeAccess({ env: {}, home: tmp(), serviceAccountDir: tmp() })).toBeUndefined();
  });
});
