/**
 * What every rule reads: `Ctx`, derived once per reconcile from the input snapshot, and the shape
 * of a rule (guard and act over that context, plus the words docs/state-machine.md renders).
 */

import { type Action, type ApiKeyRef, BATCH_CLEANUP_FINALIZER } from "../actions.js";
import type { BatchProviderName } from "../batch-port.js";
import { effectiveModel, routeModel, VENDOR_CAPABILITIES, type Vendor } from "../cli/routing.js";
import type { ReconcileInput } from "../input.js";
import { executionOf } from "../policy/spec-checks.js";
import {
  type Agent,
  type AgentDefinition,
  type AgentPhase,
  type AgentRef,
  agentRef,
  type Execution,
  phaseOf,
  type Station,
} from "../types.js";
import { ms } from "./timing.js";

const KEY_NAME: Record<BatchProviderName, string> = {
  anthropic: "ANTHROPIC_API_KEY",
  gemini: "GEMINI_API_KEY",
  openai: "OPENAI_API_KEY",
};

/** Everything the rules look at, derived once from the input. */
export interface Ctx {
  input: ReconcileInput;
  agent: Agent;
  ref: AgentRef;
  rv: string;
  phase: AgentPhase;
  deleting: boolean;
  finalizerIndex: number;
  station: Station | undefined;
  definition: AgentDefinition | undefined;
  execution: Execution | undefined;
  /** Effective model ("" when none). */
  model: string;
  vendor: Vendor;
  /** status.batchId, else a submitted-but-unpatched batch id. */
  batchId: string | undefined;
  provider: BatchProviderName | undefined;
  apiKey: ApiKeyRef | undefined;
  startedAt: number | undefined;
  now: number;
  /** status.batchSubmission: what the submit recorded, which wins over the (maybe changed or deleted) definition. */
  recorded: NonNullable<Agent["status"]>["batchSubmission"];
}

export function context(input: ReconcileInput): Ctx {
  const { agent, station, definition } = input;
  const model = effectiveModel(agent, definition);
  const status = agent.status ?? {};
  const batchId = status.batchId || input.batch.submitted?.batchId || undefined;
  const provider =
    (status.batchProvider as BatchProviderName | undefined) ||
    VENDOR_CAPABILITIES[routeModel(model)].batchProvider;
  // status.batchProvider is read back from the API server: only the table's own names count.
  const keyName = provider && Object.hasOwn(KEY_NAME, provider) ? KEY_NAME[provider] : undefined;
  const recorded = status.batchSubmission;
  const keyRef =
    recorded?.keyRef ?? definition?.spec.resources?.secrets?.find((s) => s.name === keyName)?.ref;
  return {
    input,
    agent,
    ref: agentRef(agent),
    rv: agent.metadata.resourceVersion ?? "",
    phase: phaseOf(agent),
    deleting: !!agent.metadata.deletionTimestamp,
    finalizerIndex: (agent.metadata.finalizers ?? []).indexOf(BATCH_CLEANUP_FINALIZER),
    station,
    definition,
    execution: definition ? executionOf(definition) : undefined,
    model,
    vendor: routeModel(model),
    batchId,
    provider,
    apiKey: keyRef !== undefined ? { secretName: "agent-secrets", secretKey: keyRef } : undefined,
    startedAt: ms(status.startedAt),
    now: input.now,
    recorded,
  };
}

export interface Rule {
  /** Stable id; appears in docs and in `decide(...).rules`. */
  id: string;
  /** Phase the rule applies in ("any" for finalizer rules that ignore it). */
  from: string;
  /** Phase afterwards (same as `from` when it stays). */
  to: string;
  /** The guard, in words (rendered into the docs). */
  when: string;
  /** What it does, in words (rendered into the docs). */
  does: string;
  guard: (c: Ctx) => boolean;
  act: (c: Ctx) => Action[];
}
