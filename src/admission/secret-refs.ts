/**
 * Which keys of the `agent-secrets` Secret an object makes a run read (docs/deploy.md#rbac and the
 * Job builder's secretKeyRefs), each with the field that names it, so a warning can point at it.
 */
import type { Agent, AgentDefinition } from "../core/types.js";

export interface SecretKeyRef {
  /** Dotted path of the referencing field, e.g. `spec.resources.repos[0].token_secret`. */
  path: string;
  key: string;
}

const present = (key: string | undefined): key is string => key !== undefined && key !== "";

/** Keys an AgentDefinition's runs read: env entries, MCP/conversation/sink headers, clone and PR tokens. */
export function definitionSecretKeys(def: AgentDefinition): SecretKeyRef[] {
  const refs: SecretKeyRef[] = [];
  const add = (path: string, key: string | undefined) => {
    if (present(key)) refs.push({ path, key });
  };
  const res = def.spec.resources ?? {};
  for (const [i, s] of (res.secrets ?? []).entries()) add(`spec.resources.secrets[${i}].ref`, s.ref);
  for (const [i, m] of (res.mcp_servers ?? []).entries()) {
    add(`spec.resources.mcp_servers[${i}].headers_secret`, m.headers_secret);
  }
  for (const [i, r] of (res.repos ?? []).entries())
    add(`spec.resources.repos[${i}].token_secret`, r.token_secret);
  add("spec.resources.conversation.headers_secret", res.conversation?.headers_secret);
  for (const [i, s] of (def.spec.output?.sinks ?? []).entries()) {
    add(`spec.output.sinks[${i}].headers_secret`, s.headers_secret);
  }
  add("spec.delivery.pullRequest.tokenSecret", def.spec.delivery?.pullRequest?.tokenSecret);
  return refs;
}

/** Keys an Agent's own fields reference: the files' download headers. */
export function agentSecretKeys(agent: Agent): SecretKeyRef[] {
  return (agent.spec.files ?? []).flatMap((f, i) =>
    present(f.headers_secret) ? [{ path: `spec.files[${i}].headers_secret`, key: f.headers_secret }] : [],
  );
}
