/**
 * The gateway's side of the integration tests on the local plane: components/gateway's Role in a
 * test's namespace, and a client that acts as the gateway's ServiceAccount (impersonated, RBAC on).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Agent as UndiciAgent } from "undici";
import { parseAllDocuments } from "yaml";
import { KubeClient } from "../../../src/kube/client.js";
import type { Resource } from "../../../src/kube/resources.js";
import { REPO_ROOT } from "../../deploy/render.js";
import { kubeConfig } from "../../harness/context.js";

const ROLES: Resource = { group: "rbac.authorization.k8s.io", version: "v1", plural: "roles" };
const ROLE_BINDINGS: Resource = { group: "rbac.authorization.k8s.io", version: "v1", plural: "rolebindings" };

/** A client of the admin's kubeconfig that acts as `user` (the API server's impersonation). */
export async function impersonating(user: string): Promise<KubeClient> {
  const kc = kubeConfig();
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("the plane's kubeconfig has no cluster");
  const tls: Record<string, unknown> & { headers?: Record<string, string> } = {};
  await kc.applyToHTTPSOptions(tls as never);
  const connect: Record<string, unknown> = {};
  for (const k of ["ca", "cert", "key"] as const) if (tls[k] !== undefined) connect[k] = tls[k];
  return new KubeClient({
    server: cluster.server.replace(/\/$/, ""),
    dispatcher: new UndiciAgent({ connect }),
    headers: async () => ({ ...(tls.headers ?? {}), "Impersonate-User": user }),
    requestTimeoutMs: 10_000,
  });
}

/** components/gateway's Role and RoleBinding, moved into the test's namespace. */
export async function installGatewayRole(admin: KubeClient, namespace: string): Promise<void> {
  const docs = parseAllDocuments(
    readFileSync(join(REPO_ROOT, "deploy/components/gateway/rbac.yaml"), "utf8"),
  ).map(
    (d) =>
      d.toJS() as { kind: string; metadata: { namespace?: string }; subjects?: { namespace?: string }[] },
  );
  for (const doc of docs) {
    doc.metadata.namespace = namespace;
    for (const s of doc.subjects ?? []) s.namespace = namespace;
    await admin.create(doc.kind === "Role" ? ROLES : ROLE_BINDINGS, namespace, doc as never);
  }
}
