/**
 * Where a delivery may go (docs/security.md#deliveries). The Agent seed makes both the user's:
 * `spec.branch` is any branch (default `agent/<Agent name>`) and `spec.targetRepo` any
 * `owner/name`. The courier never rewrites a branch this run did not create, and the forge
 * token's own scope bounds where it can push. A definition's `delivery.pullRequest.branchPrefix`
 * or the installation's DELIVERY_BRANCH_PREFIX / DELIVERY_TARGET_REPOS narrow them, opt-in.
 * Checked at Pending with the other spec checks; each refusal names the field. Pure.
 */

import type { ControllerSettings } from "../input.js";
import type { Agent, AgentDefinition } from "../types.js";
import { branchNameProblem } from "./branch-name.js";

/** The branch a delivery pushes to without spec.branch: `agent/<Agent name>`, whatever the prefix. */
export const DEFAULT_BRANCH_PREFIX = "agent/";

/** The branch a delivery pushes to: spec.branch, else `agent/<Agent name>`. */
export function deliveryBranch(agent: Agent): string {
  return agent.spec.branch || `${DEFAULT_BRANCH_PREFIX}${agent.metadata.name ?? ""}`;
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

export type DeliveryBoundsSettings = Pick<ControllerSettings, "deliveryTargetRepos" | "deliveryBranchPrefix">;

/** Why the Agent's delivery is out of bounds, or undefined. */
export function deliveryBoundsFailure(
  agent: Agent,
  definition: AgentDefinition,
  settings: DeliveryBoundsSettings = {},
): string | undefined {
  if (!definition.spec.delivery?.pullRequest) return undefined;
  const branch = agent.spec.branch ?? "";
  if (branch !== "") {
    const problem = branchNameProblem(branch);
    if (problem) return `spec.branch ${JSON.stringify(branch)} is not a valid git branch name: it ${problem}`;
    // The default branch is always allowed, whatever prefix narrows the rest.
    const outside =
      branch === deliveryBranch({ ...agent, spec: { ...agent.spec, branch: "" } })
        ? undefined
        : outsidePrefix(branch, definition, settings);
    if (outside) return outside;
  }
  const target = agent.spec.targetRepo ?? "";
  const allowed = (settings.deliveryTargetRepos ?? []).map((t) => t.toLowerCase());
  if (target !== "" && allowed.length > 0) {
    const wanted = target.replace(/\.git$/, "").toLowerCase();
    const declared = (definition.spec.resources?.repos ?? []).map((r) => ownerNameOfUrl(r.url ?? ""));
    if (!declared.includes(wanted) && !allowed.includes(wanted)) {
      return `spec.targetRepo ${JSON.stringify(target)} is neither a repository the AgentDefinition declares in resources.repos nor one the installation allows (DELIVERY_TARGET_REPOS)`;
    }
  }
  return undefined;
}

/** The opt-in prefixes: the definition's, then the installation's; an unset one narrows nothing. */
function outsidePrefix(
  branch: string,
  definition: AgentDefinition,
  settings: DeliveryBoundsSettings,
): string | undefined {
  const narrowings: [string | undefined, string][] = [
    [
      definition.spec.delivery?.pullRequest?.branchPrefix,
      "the AgentDefinition's delivery.pullRequest.branchPrefix",
    ],
    [settings.deliveryBranchPrefix, "the installation's DELIVERY_BRANCH_PREFIX"],
  ];
  for (const [prefix, source] of narrowings) {
    if (!prefix) continue;
    if (!branch.startsWith(prefix) || branch.length === prefix.length) {
      return `spec.branch ${JSON.stringify(branch)} is outside the branch prefix ${JSON.stringify(prefix)} that ${source} allows`;
    }
  }
  return undefined;
}
