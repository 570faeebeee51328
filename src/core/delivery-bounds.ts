/**
 * Where a delivery may go (docs/security.md#deliveries): the Agent's author picks the branch and
 * the target repository, and the courier pushes there with the definition's forge token, so both
 * are bounded by what the definition (and the installation) declares. Checked at Pending with the
 * other spec checks; each refusal names the field. Pure.
 */
import type { Agent, AgentDefinition } from "./types.js";

/** The branch prefix when delivery.pullRequest.branchPrefix is unset. */
export const DEFAULT_BRANCH_PREFIX = "agent/";

export function branchPrefixOf(def: AgentDefinition["spec"]): string {
  return def.delivery?.pullRequest?.branchPrefix ?? DEFAULT_BRANCH_PREFIX;
}

/** The branch a delivery pushes to: spec.branch, else `<prefix><Agent name>`. */
export function deliveryBranch(agent: Agent, def: AgentDefinition["spec"]): string {
  return agent.spec.branch || `${branchPrefixOf(def)}${agent.metadata.name ?? ""}`;
}

/** `owner/name` of a resources.repos URL (https, ssh, scp form or the shorthand), lower-cased. */
export function ownerNameOfUrl(url: string): string | undefined {
  const path = url
    .trim()
    .replace(/\.git\/?$/, "")
    .replace(/\/+$/, "");
  const parts = path.split(/[/:]/).filter((p) => p !== "");
  if (parts.length < 2) return undefined;
  return `${parts[parts.length - 2]}/${parts[parts.length - 1]}`.toLowerCase();
}

/**
 * Why the Agent's delivery is out of bounds, or undefined. `allowedTargets` is the installation's
 * DELIVERY_TARGET_REPOS: owner/name entries a targetRepo may name beside the declared repos.
 */
export function deliveryBoundsFailure(
  agent: Agent,
  definition: AgentDefinition,
  allowedTargets: readonly string[] = [],
): string | undefined {
  if (!definition.spec.delivery?.pullRequest) return undefined;
  const prefix = branchPrefixOf(definition.spec);
  const branch = agent.spec.branch ?? "";
  if (branch !== "" && (!branch.startsWith(prefix) || branch.length === prefix.length)) {
    return `spec.branch ${JSON.stringify(branch)} is outside the branch prefix ${JSON.stringify(prefix)} that the AgentDefinition's delivery.pullRequest.branchPrefix allows`;
  }
  const target = agent.spec.targetRepo ?? "";
  if (target !== "") {
    const wanted = target.replace(/\.git$/, "").toLowerCase();
    const declared = (definition.spec.resources?.repos ?? []).map((r) => ownerNameOfUrl(r.url ?? ""));
    const allowed = allowedTargets.map((t) => t.toLowerCase());
    if (!declared.includes(wanted) && !allowed.includes(wanted)) {
      return `spec.targetRepo ${JSON.stringify(target)} is neither a repository the AgentDefinition declares in resources.repos nor one the installation allows (DELIVERY_TARGET_REPOS)`;
    }
  }
  return undefined;
}
