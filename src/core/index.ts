/** The reconcile core's public surface for the controller. */
export * from "./actions.js";
export { admit, effectiveLimit } from "./concurrency.js";
export type * from "./input.js";
export { buildJob } from "./job-builder.js";
export { jobNameFor, shortenName } from "./names.js";
export { capOutput, lastPullRequestUrl, lastSessionId } from "./output.js";
export { agentsToPrune } from "./pruning.js";
export type { Vendor } from "./routing.js";
export { DEFAULT_BATCH_MODEL, effectiveModel, routeModel, VENDOR_CAPABILITIES } from "./routing.js";
export type { Decision, Rule } from "./state-machine.js";
export { decide, FINALIZER_RULES, PHASE_RULES, reconcile, rfc3339 } from "./state-machine.js";
export { renderPrompt } from "./templating.js";
export type * from "./types.js";
export { agentRef, isTerminal, phaseOf } from "./types.js";
