/**
 * src/core/policy/: what a Station or an Agent may ask for. The checks at Pending (spec-checks.ts),
 * what a Station's pod template may put in a run pod (station-policy.ts, station-template/), where
 * a delivery may go (delivery-bounds.ts). Each refusal is a literal message naming the field.
 *
 * Checks done at Pending, after the refs resolved (docs/validation-rules.md#in-the-controller-not-at-admission, in that order; the
 * first failing rule wins). Each returns the literal failureReason.
 */

import { effectiveModel, routeModel, VENDOR_CAPABILITIES } from "../cli/routing.js";
import { quotedId, sessionIdProblem } from "../cli/session-ids.js";
import { MAX_PROMPT_BYTES, renderPrompt } from "../cli/templating.js";
import type { ControllerSettings } from "../input.js";
import type { Agent, AgentDefinition, Execution } from "../types.js";
import { deliveryBoundsFailure } from "./delivery-bounds.js";

export const MSG_BATCH_DISABLED = "batch execution is disabled on this controller";
export const MSG_REALTIME_DISABLED = "realtime execution is disabled on this controller";
export const MSG_BATCH_FILES = "batch execution does not support files";
export const MSG_RESUME_NEEDS_REALTIME = "resumeSession requires realtime execution";
export const MSG_RESUME_NEEDS_SOURCE = "resumeSession needs resources.conversation.source";
export const MSG_DELIVERY_NEEDS_REPOS = "delivery.pullRequest needs resources.repos";
export const MSG_PROMPT_TOO_LARGE = `rendered prompt exceeds ${MAX_PROMPT_BYTES} bytes`;

export function executionOf(definition: AgentDefinition): Execution {
  return definition.spec.execution ?? "interactive";
}

const nonEmpty = (v: unknown): boolean =>
  Array.isArray(v)
    ? v.length > 0
    : v !== undefined && v !== null && (typeof v !== "object" || Object.values(v).some(nonEmpty));

/** The definition fields batch rejects, spelled as in the specification's messages (docs/validation-rules.md#in-the-controller-not-at-admission), in the order checked. */
export function batchUnsupportedFields(def: AgentDefinition["spec"]): string[] {
  const fields: [string, unknown][] = [
    ["allowed_tools", def.allowed_tools],
    ["disallowed_tools", def.disallowed_tools],
    ["max_turns", def.max_turns],
    ["resources.repos", def.resources?.repos],
    ["resources.mcp_servers", def.resources?.mcp_servers],
    ["resources.skills", def.resources?.skills],
    ["resources.conversation", def.resources?.conversation],
    ["output.watch", def.output?.watch],
  ];
  return fields.filter(([, v]) => nonEmpty(v)).map(([name]) => name);
}

/** The resources.secrets entry batch reads the key through; undefined when the entry is absent. */
export function batchKeyRef(definition: AgentDefinition, model: string): string | undefined {
  const name = VENDOR_CAPABILITIES[routeModel(model)].batchKeySecretName;
  return definition.spec.resources?.secrets?.find((s) => s.name === name)?.ref;
}

/**
 * The failureReason a Pending Agent fails with, or undefined when it may run. The webhook
 * (src/admission) and `kubectl agent validate` run it too, only to warn or report; the
 * controller's Pending rule is what fails the Agent with it.
 */
export function specCheckFailure(
  agent: Agent,
  definition: AgentDefinition,
  settings: Pick<
    ControllerSettings,
    "batchEnabled" | "realtimeEnabled" | "deliveryTargetRepos" | "deliveryBranchPrefix"
  >,
): string | undefined {
  const def = definition.spec;
  const execution = executionOf(definition);
  const model = effectiveModel(agent, definition);
  const vendor = routeModel(model);
  const resume = agent.spec.resumeSession ?? "";
  const conv = def.resources?.conversation ?? {};

  if (execution === "batch") {
    if (!settings.batchEnabled) return MSG_BATCH_DISABLED;
    const [field] = batchUnsupportedFields(def);
    if (field) return `batch execution does not support ${field}`;
    if (vendor === "exec") return "batch execution does not support the exec model";
    if (vendor === "opencode") return "batch execution does not support opencode models";
    if ((agent.spec.files ?? []).length > 0) return MSG_BATCH_FILES;
    if (def.delivery?.pullRequest) return "batch execution does not support delivery.pullRequest";
  }
  if (execution === "realtime") {
    if (!settings.realtimeEnabled) return MSG_REALTIME_DISABLED;
    if (conv.id) return "realtime execution does not support resources.conversation.id";
    if (conv.pin) return "realtime execution does not support resources.conversation.pin";
  }
  if (resume !== "" && execution !== "realtime") return MSG_RESUME_NEEDS_REALTIME;
  if (execution === "realtime") {
    if (resume !== "" && !conv.source) return MSG_RESUME_NEEDS_SOURCE;
    if (resume !== "" && !VENDOR_CAPABILITIES[vendor].canResume) return `${vendor} cannot resume a session`;
    // The id lands where the CLI's option parser reads it: only the vendor's own shape passes.
    const idProblem = resume !== "" ? sessionIdProblem(vendor, resume) : undefined;
    if (idProblem) return `resumeSession ${quotedId(resume)} ${idProblem}`;
    if (!VENDOR_CAPABILITIES[vendor].canRealtime) return `${vendor} cannot run a realtime session`;
  }
  // Not in the seeds: the courier delivers a declared clone only (its URL is the spec's, not a
  // config the agent could rewrite), so without resources.repos nothing could ever be delivered.
  if (def.delivery?.pullRequest && (def.resources?.repos ?? []).length === 0) return MSG_DELIVERY_NEEDS_REPOS;
  const outOfBounds = deliveryBoundsFailure(agent, definition, settings);
  if (outOfBounds) return outOfBounds;
  // Rule 13 (unbuildable Job) is reported by the Job builder when the Job is built.
  if (execution === "batch") {
    // Not in the seeds: without the key entry the submit could never succeed (reported deviation).
    const name = VENDOR_CAPABILITIES[vendor].batchKeySecretName;
    if (batchKeyRef(definition, model || "claude") === undefined) {
      return `batch execution needs a resources.secrets entry named ${name}`;
    }
  }
  const sendsPrompt = !(execution === "realtime" && resume !== "");
  if (
    sendsPrompt &&
    Buffer.byteLength(renderPrompt(def.prompt, agent.spec.parameters), "utf8") > MAX_PROMPT_BYTES
  ) {
    return MSG_PROMPT_TOO_LARGE;
  }
  return undefined;
}
