/**
 * Adapts "get the agent-secrets Secret" into the SecretKeyReader the dispatcher needs: the
 * executor passes its Kubernetes GET; this decodes one key of `data` (base64).
 */
import type { SecretKeyReader } from "./dispatcher.js";

export const AGENT_SECRETS = "agent-secrets";

/** A Secret as the API returns it; undefined when it does not exist (404). */
export type SecretGetter = (
  namespace: string,
  name: string,
) => Promise<{ data?: Record<string, string>; stringData?: Record<string, string> } | undefined>;

export function agentSecretsReader(getSecret: SecretGetter): SecretKeyReader {
  return async (namespace, key) => {
    const secret = await getSecret(namespace, AGENT_SECRETS);
    const encoded = secret?.data?.[key];
    if (encoded !== undefined) return Buffer.from(encoded, "base64").toString("utf8");
    return secret?.stringData?.[key];
  };
}
