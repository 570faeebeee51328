/**
 * The CRD types the reconcile core reads: the generated ones (`generated/crds/`, compiled from
 * `schemas/crds/`), re-exported under their generated names (no second name for a type).
 * Field names are exactly the CRDs' (docs/reference/crds.md).
 */
export type {
  Agent,
  AgentCondition,
  AgentFile,
  AgentSpec,
  AgentStatus,
  ObjectMeta,
} from "../../generated/crds/agent.js";
export type {
  AgentDefinition,
  AgentDefinitionSpec,
  McpServer,
  OutputSelector,
  RepoRef,
  Sink,
  WatchedFile,
} from "../../generated/crds/agentdefinition.js";
export type {
  ModelUsage,
  ModelUsageEgressRefusal,
  ModelUsageSpec,
  ModelUsageTokens,
} from "../../generated/crds/modelusage.js";
export type { Station, StationSpec } from "../../generated/crds/station.js";

import type { Agent, AgentStatus } from "../../generated/crds/agent.js";
import type { AgentDefinitionSpec } from "../../generated/crds/agentdefinition.js";
import type { StationSpec } from "../../generated/crds/station.js";

export type AgentPhase = NonNullable<AgentStatus["phase"]>;
export type ConcurrencyPolicy = NonNullable<StationSpec["concurrencyPolicy"]>;
export type Execution = NonNullable<AgentDefinitionSpec["execution"]>;

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
