/**
 * Everything one reconcile of one Agent may look at, gathered by the I/O layer beforehand.
 *
 * The core never fetches: absent data is modelled explicitly (`found: false`, `available:
 * false`) so that "not there" and "not read" cannot be confused.
 */

import type { V1ContainerStatus } from "@kubernetes/client-node";
import type { BatchCleanupResult, BatchPollResult } from "./batch-port.js";
import type { CliVendor, ModelApiFamily } from "./cli/agent-clis.js";
import type { EgressStatus } from "./egress/refusals.js";
import type { StationPolicy } from "./policy/station-policy.js";
import type { MeteredRun } from "./pricing/metered.js";
import type { PriceTable } from "./pricing/prices.js";
import type { ProviderInput } from "./provider-limits/admission.js";
import type { LogFacts } from "./readback/log-meter.js";
import type { GatewayVendor } from "./run-job/gateway-credential.js";
import type { RunningPodObservation } from "./run-job/stuck-pod.js";
import type { Agent, AgentDefinition, Station } from "./types.js";

/** Controller settings (docs/controller.md#configuration), already parsed and validated. */
/** The model gateway as the Job builder needs it. */
export interface GatewaySettings {
  /** The gateway's origin, e.g. `http://agent-gateway.ai-agents.svc:8080`. */
  url: string;
  /** The key run credentials are signed with (src/core/run-job/gateway-credential.ts). */
  credentialKey: Uint8Array;
  /**
   * AGENT_GATEWAY_EGRESS_URL: the gateway's egress proxy (`http://host:port`). When set, every
   * run pod container gets the proxy variables with its role's egress credential
   * (docs/gateway.md#egress); unset, none.
   */
  egressProxyUrl?: string;
}

export interface ControllerSettings {
  /** The one namespace served. */
  namespace: string;
  /** AGENT_IMAGE: the init and courier image. */
  agentImage: string;
  /** MAX_OUTPUT_BYTES (default 262144). */
  maxOutputBytes: number;
  /** BATCH_ENABLED. */
  batchEnabled: boolean;
  /** REALTIME_ENABLED. */
  realtimeEnabled: boolean;
  /** BATCH_POLL_SECONDS (default 60; 0 = poll on every reconcile). */
  batchPollSeconds: number;
  /** PROVIDER_MAX_HOLD_SECONDS: the longest one run's report holds starts against its endpoint (default 3600). */
  providerMaxHoldSeconds?: number;
  /** STUCK_POD_SECONDS: how long a run pod may wait on a never-starts reason (docs/decisions.md D-22; default 300). */
  stuckPodSeconds?: number;
  /** REALTIME_SIGNING_KEY: derives each realtime run's token (docs/decisions.md D-40). Required when realtimeEnabled. */
  realtimeSigningKey?: string;
  /** GITHUB_API_URL for the courier (default https://api.github.com; GitHub Enterprise: `https://<host>/api/v3`). */
  githubApiUrl?: string;
  /** GITHUB_SERVER_URL for the courier: the git host its push URLs are built on (default https://github.com). */
  githubServerUrl?: string;
  /** `<VENDOR>_CLI_VERSION`: the CLI version a run installs when its image lacks the CLI (default: AGENT_CLIS). */
  cliVersions?: Partial<Record<CliVendor, string>>;
  /** `AGENT_<API>_BASE_URL`: the model API base URLs the run pods' CLIs use unless a run sets its own. */
  agentBaseUrls?: Partial<Record<ModelApiFamily, string>>;
  /**
   * AGENT_GATEWAY_URL and AGENT_GATEWAY_CREDENTIAL_KEY_FILE's key: with it every CLI run talks to
   * the model gateway with a per-run credential, and no run pod gets a provider key
   * (docs/gateway.md#run-credentials). Absent: the gateway is off.
   */
  gateway?: GatewaySettings;
  /**
   * DELIVERY_TARGET_REPOS: when set, the only owner/name repositories an Agent's targetRepo may
   * name beside those its definition declares (an opt-in narrowing; unset, any repository).
   */
  deliveryTargetRepos?: string[];
  /** DELIVERY_BRANCH_PREFIX: when set, the prefix every spec.branch must carry (an opt-in narrowing). */
  deliveryBranchPrefix?: string;
  /** RUN_POD_SERVICE_ACCOUNTS, RUN_POD_VOLUME_KINDS, RUN_POD_SECRETS, RUN_POD_FIELDS: how far the installation widens the Station template policy. */
  runPodPolicy?: StationPolicy;
}

/**
 * A log read back from a pod container. `available: false` without `error`: the pod or the
 * container's log is gone (or the container never started). With `error`: the read kept failing
 * (5xx, timeout) past the retry window, so the log exists but could not be read.
 */
export type LogRead =
  | {
      available: true;
      /** The log, or its last bytes when `droppedBytes` came before them (src/core/readback/log-meter.ts). */
      text: string;
      /** Bytes of the log before `text`, not kept (the whole log passed through the meter). */
      droppedBytes?: number;
      /** What the meter read from the whole log as it streamed; absent: the core meters `text`. */
      facts?: LogFacts;
    }
  | { available: false; error?: string };

/** The Job as read for this reconcile (GET by status.jobName or the derived name). */
export type JobObservation =
  /** 404: never created, or garbage-collected (ttlSecondsAfterFinished passed). */
  | { found: false }
  | {
      found: true;
      /** metadata.uid of the Job's controller owner reference (docs/decisions.md D-56). */
      ownerUid?: string;
      /**
       * The vendor the Job's run credential allows, from its `agents.re-cinq.com/model-gateway`
       * annotation: the run called its model through the gateway, which metered it.
       */
      gatewayVendor?: GatewayVendor;
      /** The Job's .status, as read. */
      status?: {
        conditions?: { type: string; status: string; reason?: string; message?: string }[];
        succeeded?: number;
        failed?: number;
      };
    };

/** The run's pod (first pod labelled job-name=<job>) and its logs, read once the Job finished. */
export type PodObservation =
  | { found: false }
  | {
      found: true;
      containerStatuses?: V1ContainerStatus[];
      initContainerStatuses?: V1ContainerStatus[];
      /** `GET …/log?container=agent&limitBytes=…`, uncapped (the controller's read bound only). */
      agentLog: LogRead;
      /** The init container's log; read only when the agent container never ran (docs/decisions.md D-23). */
      initLog?: LogRead;
      /** The courier container's log; only for definitions with delivery.pullRequest. */
      courierLog?: LogRead;
    };

/**
 * What the executor remembers about one Agent's batch between reconciles (in memory, keyed by
 * the Agent's uid). Provider calls happen in the executor; their results come back here.
 */
export interface BatchMemory {
  /** Result of a submit whose Running patch has not been observed yet (docs/decisions.md D-50). Epoch ms. */
  submitted?: { batchId: string; at: number };
  /** When the last poll ran (success or error). Epoch ms. */
  lastPollAt?: number;
  /** The last successful poll's result; cleared when a later poll throws. */
  pollResult?: BatchPollResult;
  /** When a cancel request last succeeded. Epoch ms. */
  cancelledAt?: number;
  /** When the last cleanup attempt (or failed cancel) ran. Epoch ms. */
  lastCleanupAt?: number;
  /** The provider's Retry-After of the last failed cancel or cleanup, ms: the next try waits that long. */
  cleanupRetryAfterMs?: number;
  /**
   * One-shot: the outcome of the cleanup attempt made just before this reconcile. `cancel_failed`:
   * the cancel that must precede the cleanup failed (docs/decisions.md D-102, D-103).
   */
  cleanupResult?:
    | BatchCleanupResult
    /** `settleUnseen`: it failed reading whether the batch has settled, before deleting anything. */
    | { state: "failed"; error: string; settleUnseen?: boolean }
    | { state: "cancel_failed"; error: string };
  /**
   * The batch is settling: a cancel of it was confirmed, or the last cleanup found it not settled,
   * and no cleanup has got past that check since. A try that fails before it can see the batch
   * settled is then not a failed cleanup (docs/batch-runs.md#timeouts-delete-limits).
   */
  settling?: boolean;
  /** The last failed submit, until a submit succeeds (docs/decisions.md D-101). */
  submitFailure?: BatchSubmitFailure;
}

/** A failed batch submit, as the executor remembers it for the core's retry decision. */
export interface BatchSubmitFailure {
  /**
   * A 4xx other than 408/409/429 (bad key, unknown model, invalid field), or the API key missing
   * from agent-secrets: retrying cannot help, the Agent fails.
   */
  permanent: boolean;
  /** What went wrong, quoting the provider's (or the API server's) message. */
  message: string;
  /** Epoch ms of the failed attempt. */
  at: number;
  /** Failed attempts in a row, 1 for the first. */
  attempts: number;
  /** The provider's Retry-After, ms, when it sent one. */
  retryAfterMs?: number;
  /** OpenAI: the input file this submit already uploaded; the retry reuses it. */
  inputFileId?: string;
  /**
   * Epoch ms the first attempt was sent whose answer was lost after sending (a timeout, a reset, a
   * 500/502/504): it may have created a batch, which the next attempt looks for before it sends
   * again (docs/batch-runs.md#a-submit-whose-answer-was-lost). Kept until a submit succeeds.
   */
  unansweredSince?: number;
}

/**
 * The last failed Job creation of this Agent, remembered by the executor until a creation
 * succeeds or the Agent leaves Pending (docs/decisions.md D-101).
 */
export interface JobCreateFailure {
  /** A 4xx other than 408/409/429 (invalid field, quota, admission denial, RBAC): retrying cannot help. */
  permanent: boolean;
  /** What the API server said, e.g. `403 Forbidden: jobs.batch "…" is forbidden: exceeded quota: …`. */
  message: string;
  /** Epoch ms of the failed attempt. */
  at: number;
  /** Failed attempts in a row, 1 for the first. */
  attempts: number;
  /** The server's Retry-After, ms, when it sent one. */
  retryAfterMs?: number;
}

/** A gateway run's metered calls as the core prices them. */
export interface MeteredInput extends MeteredRun {
  vendor: GatewayVendor;
  /**
   * Calls the gateway still had in flight when the controller stopped waiting for them
   * (src/controller/metered-usage.ts): their usage is missing, and status.costNote says so.
   */
  unsettledCalls?: number;
}

export interface ReconcileInput {
  /** The Agent as cached (its resourceVersion guards every patch). */
  agent: Agent;
  /** The Station named by spec.stationRef; undefined when it does not exist. */
  station: Station | undefined;
  /** The AgentDefinition named by station.spec.agentDefRef; undefined when absent or not looked up. */
  definition: AgentDefinition | undefined;
  /** The run's Job; undefined when not read (the core then waits). Needed while a Job run is Running. */
  job?: JobObservation;
  /** The run's pod; undefined when not read. Read when the Job has finished. */
  pod?: PodObservation;
  /**
   * The run's pod while its Job runs; read only when the run may be stuck (old, no ready pod),
   * to tell a pod that can never start (docs/decisions.md D-22).
   */
  runningPod?: RunningPodObservation;
  /** Every cached Agent whose spec.stationRef is this Station (may include this Agent). */
  stationAgents: Agent[];
  /**
   * Names of this Station's Agents for which a Job creation or batch submit was issued but whose
   * Running status the cache does not show yet. Counted as Running, so a lagging cache cannot
   * over-admit.
   */
  pendingCreations: string[];
  /** The last failed Job creation of this Agent, if the latest attempt failed. */
  jobCreateFailure?: JobCreateFailure;
  /**
   * A Pending Agent's provider endpoint and what the controller knows of it, when a limit may hold
   * it (its Station declares providerLimits, or the controller learned one); docs/provider-limits.md.
   */
  provider?: ProviderInput;
  /** This Agent's batch memory (empty object when none). */
  batch: BatchMemory;
  settings: ControllerSettings;
  /** The installation's price overrides, read from its ConfigMap (docs/cost-and-budgets.md#price-overrides). */
  prices?: PriceTable;
  /**
   * What the model gateway metered of this run's calls (its ModelUsage objects, summed): set only
   * for a run that called its model through the gateway, once its Job has finished. Its cost is
   * then this, never the run's own lines (docs/gateway.md#metering).
   */
  metered?: MeteredInput;
  /**
   * What the gateway's egress proxy refused the run (its ModelUsage objects, summed): read with
   * them when the run's Job has finished, while the gateway is on.
   */
  egress?: EgressStatus;
  /** The current time, epoch milliseconds. */
  now: number;
}
