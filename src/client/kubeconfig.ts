/**
 * Loads the kubeconfig the way kubectl does: `--kubeconfig`, else $KUBECONFIG, else
 * ~/.kube/config, else the in-cluster service account; `--context` picks the context, and the
 * context's namespace is the default namespace ("default" when it names none).
 */
import { existsSync, readFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";

export interface KubeConfigChoice {
  /** A kubeconfig file; overrides $KUBECONFIG. */
  kubeconfig?: string;
  /** A context name of that kubeconfig; overrides its current-context. */
  context?: string;
}

const SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

export function loadKubeConfig(choice: KubeConfigChoice = {}): KubeConfig {
  const kc = new KubeConfig();
  if (choice.kubeconfig) {
    if (!existsSync(choice.kubeconfig)) throw new Error(`kubeconfig ${choice.kubeconfig} does not exist`);
    kc.loadFromFile(choice.kubeconfig);
  } else {
    kc.loadFromDefault();
  }
  if (choice.context) {
    if (!kc.getContextObject(choice.context)) {
      throw new Error(`context "${choice.context}" does not exist in the kubeconfig`);
    }
    kc.setCurrentContext(choice.context);
  }
  if (!kc.getCurrentCluster()) throw new Error("the kubeconfig has no current context or cluster");
  return kc;
}

/** The namespace of the current context; in a pod, the service account's; else "default". */
export function defaultNamespace(kc: KubeConfig): string {
  const fromContext = kc.getContextObject(kc.getCurrentContext())?.namespace;
  if (fromContext) return fromContext;
  if (kc.getCurrentContext() === "inClusterContext" && existsSync(SERVICE_ACCOUNT_NAMESPACE)) {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, "utf8").trim() || "default";
  }
  return "default";
}
