/**
 * The subset of the three CRDs the reconcile core reads, with field names exactly as in
 * spec/crds.md and seeds/agent-crd.txt.
 *
 * These are structural: the generated types in `generated/crds/` (when present) are
 * assignable to them, so the controller can pass its cached objects straight in. Keeping the
 * core's own view narrow means a new optional CRD field never forces a core change.
 */
import type { V1PodTemplateSpec } from "@kubernetes/client-node";

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  /** RFC 3339. */
  creationTimestamp?: string | Date;
  /** RFC 3339; set once a delete was requested while finalizers remain. */
  deletionTimestamp?: string | Date;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export type AgentPhase = "Pending" | "Running" | "Succeeded" | "Failed";

export interface AgentFile {
  path: string;
  url: string;
  headers_secret?: string;
}

export interface AgentSpec {
  stationRef: string;
  parameters?: Record<string, string>;
  taskId?: string;
  model?: string;
  targetRepo?: string;
  branch?: string;
  files?: AgentFile[];
  resumeSession?: string;
}

export interface AgentStatus {
  phase?: AgentPhase;
  jobName?: string;
  startedAt?: string;
  completedAt?: string;
  exitCode?: number;
  output?: string;
  failureReason?: string;
  prUrl?: string;
  sessionId?: string;
  batchId?: string;
  batchProvider?: string;
  batchFallback?: boolean;
  batchCleanupAttempts?: number;
}

export interface Agent {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: AgentSpec;
  status?: AgentStatus;
}

export type ConcurrencyPolicy = "Allow" | "Forbid" | "Replace";

export interface StationSpec {
  agentDefRef: string;
  /** A PodTemplateSpec; unknown fields are preserved by the Job builder. */
  template: V1PodTemplateSpec | Record<string, unknown>;
  deadlineMinutes?: number;
  maxConcurrentRuns?: number;
  concurrencyPolicy?: ConcurrencyPolicy;
  successfulRunsHistoryLimit?: number;
  failedRunsHistoryLimit?: number;
}

export interface Station {
  metadata: ObjectMeta;
  spec: StationSpec;
}

export type Execution = "interactive" | "batch" | "realtime";

export interface McpServer {
  name: string;
  transport: "stdio" | "http" | "sse";
  command?: string;
  args?: string[];
  url?: string;
  headers_secret?: string;
}

export interface RepoSpec {
  name: string;
  url: string;
  ref?: string;
  path?: string;
  token_secret?: string;
}

export interface ConversationSpec {
  source?: string;
  id?: string;
  pin?: string;
  headers_secret?: string;
}

export interface SinkSpec {
  type: "stdout" | "http" | "file";
  url?: string;
  headers_secret?: string;
  path?: string;
}

export interface SelectorSpec {
  event: "tool_call" | "message" | "tool_result" | "result" | "usage";
  tool?: string;
  role?: "assistant" | "user";
  contains?: string;
}

export interface WatchSpec {
  event: string;
  path: string;
}

export interface PullRequestSpec {
  tokenSecret?: string;
  repo?: string;
  base?: string;
  title?: string;
  body?: string;
  draft?: boolean;
}

export interface AgentDefinitionSpec {
  description?: string;
  prompt: string;
  model?: string;
  execution?: Execution;
  batch?: { timeoutMinutes?: number; onTimeout?: "fail" | "fallback"; maxTokens?: number };
  allowed_tools?: string[];
  disallowed_tools?: string[];
  permission_mode?: "auto" | "bypass";
  max_turns?: number;
  tool_config?: Record<string, unknown>;
  resources?: {
    env?: { name: string; value: string }[];
    secrets?: { name: string; ref: string }[];
    mcp_servers?: McpServer[];
    repos?: RepoSpec[];
    skills?: string[];
    skills_source?: string;
    conversation?: ConversationSpec;
  };
  output?: {
    format?: "text" | "json" | "stream-json";
    schema?: Record<string, unknown>;
    select?: SelectorSpec[];
    sinks?: SinkSpec[];
    watch?: WatchSpec[];
  };
  delivery?: { pullRequest?: PullRequestSpec };
}

export interface AgentDefinition {
  metadata: ObjectMeta;
  spec: AgentDefinitionSpec;
}

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

/** An absent phase is Pending (crds.md §1). */
export function phaseOf(agent: Agent): AgentPhase {
  return agent.status?.phase ?? "Pending";
}

export function isTerminal(phase: AgentPhase): boolean {
  return phase === "Succeeded" || phase === "Failed";
}
