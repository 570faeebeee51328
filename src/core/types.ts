/**
 * The CRD types the reconcile core reads: the generated ones (`generated/crds/`, compiled from
 * `schemas/crds/`), re-exported under the names the core uses, plus the element types it names.
 * Field names are exactly the CRDs' (spec/crds.md, seeds/agent-crd.txt).
 */
import type {
  Agent as GenAgent,
  AgentCondition as GenAgentCondition,
  AgentFile as GenAgentFile,
  AgentSpec as GenAgentSpec,
  AgentStatus as GenAgentStatus,
  ObjectMeta as GenObjectMeta,
} from "../../generated/crds/agent.js";
import type {
  ConversationSettings,
  AgentDefinition as GenAgentDefinition,
  AgentDefinitionSpec as GenAgentDefinitionSpec,
  McpServer as GenMcpServer,
  OutputSelector,
  PullRequestDelivery,
  RepoRef,
  Sink,
  WatchedFile,
} from "../../generated/crds/agentdefinition.js";
import type { Station as GenStation, StationSpec as GenStationSpec } from "../../generated/crds/station.js";

export type ObjectMeta = GenObjectMeta;
export type Agent = GenAgent;
export type AgentSpec = GenAgentSpec;
export type AgentStatus = GenAgentStatus;
export type AgentCondition = GenAgentCondition;
export type AgentFile = GenAgentFile;
export type AgentPhase = NonNullable<AgentStatus["phase"]>;

export type Station = GenStation;
export type StationSpec = GenStationSpec;
export type ConcurrencyPolicy = NonNullable<StationSpec["concurrencyPolicy"]>;

export type AgentDefinition = GenAgentDefinition;
export type AgentDefinitionSpec = GenAgentDefinitionSpec;
export type Execution = NonNullable<AgentDefinitionSpec["execution"]>;
export type McpServer = GenMcpServer;
export type RepoSpec = RepoRef;
export type ConversationSpec = ConversationSettings;
export type SinkSpec = Sink;
export type SelectorSpec = OutputSelector;
export type WatchSpec = WatchedFile;
export type PullRequestSpec = PullRequestDelivery;

/** Reference to one Agent, enough for the executor to address it. */
export interface AgentRef {
  namespace: string;
  name: string;
  uid: string;
}

export function agentRef(agent: Agent): AgentRef {
  return {
    namespace: agent.metadata.namespace ?? "",
    name: agent.metadata.name ?? "",
    uid: agent.metadata.uid ?? "",
  };
}

/** An absent phase is Pending (docs/reconcile.md#concurrency-and-pruning). */
export function phaseOf(agent: Agent): AgentPhase {
  return agent.status?.phase ?? "Pending";
}

export function isTerminal(phase: AgentPhase): boolean {
  return phase === "Succeeded" || phase === "Failed";
}
