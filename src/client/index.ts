/**
 * `ai-agent-subsystem/client`: the typed TypeScript client (docs/client.md).
 *
 *   const agents = await AgentsClient.connect({ namespace: "ai-agents" });
 *   const run = await agents.create({ metadata: { generateName: "fix-" }, spec: { stationRef: "default" } });
 *   const done = await agents.waitForTerminal(run.metadata.name!, { timeoutMs: 600_000 });
 */
export type { Agent, AgentCondition, AgentFile, AgentSpec, AgentStatus } from "../../generated/crds/agent.js";
export type { AgentDefinition, AgentDefinitionSpec } from "../../generated/crds/agentdefinition.js";
export type { ObjectMeta } from "../../generated/crds/meta.js";
export type { Station, StationSpec } from "../../generated/crds/station.js";
export { KubeApiError } from "../kube/errors.js";
export type { ValidationIssue, ValidationResult } from "../validation/index.js";
export {
  formatIssues,
  validateAgent,
  validateAgentDefinition,
  validateResource,
  validateStation,
} from "../validation/index.js";
export {
  type AgentInput,
  AgentsClient,
  type AgentsClientOptions,
  type AgentWatchEvent,
  API_VERSION,
  type WaitOptions,
} from "./agents.js";
export {
  AgentValidationError,
  PromptApiError,
  PromptBadGatewayError,
  PromptBadRequestError,
  PromptConflictError,
  PromptNotFoundError,
  PromptQueueFullError,
  PromptTooLargeError,
  PromptUnauthorizedError,
  PromptUnavailableError,
  WaitTimeoutError,
} from "./errors.js";
export { defaultNamespace, type KubeConfigChoice, loadKubeConfig } from "./kubeconfig.js";
export {
  type CloseReply,
  PromptApiClient,
  type PromptApiClientOptions,
  type PromptReply,
} from "./prompt-api-client.js";
export {
  type AgentPhase,
  conditionOf,
  exitCodeOf,
  isTerminal,
  phaseOf,
  type QueuePlace,
  queuePlaceOf,
  reasonOf,
} from "./terminal.js";
