/**
 * The admission warnings for one object: pure, given the neighbours the webhook looked up. Every
 * warning is advice; the API server still stores the object and the controller still fails a
 * broken Agent with its literal reason (the seeds' run failures stay controller decisions).
 */

import {
  executionOf,
  MSG_BATCH_DISABLED,
  MSG_REALTIME_DISABLED,
  specCheckFailure,
} from "../core/policy/spec-checks.js";
import {
  type StationPolicy,
  stationTemplateAdvice,
  stationTemplateProblem,
} from "../core/policy/station-policy.js";
import { SECRET_NAME } from "../core/run-job/job.js";
import { budgetMessage, budgetVerdict } from "../core/station-limits/budget.js";
import type { Agent, AgentDefinition, Station } from "../core/types.js";
import { firstSchemaIssue } from "../validation/index.js";
import type { Lookup } from "./facts.js";
import { agentSecretKeys, definitionSecretKeys, type SecretKeyRef } from "./secret-refs.js";

export type AdmittedKind = "Agent" | "Station" | "AgentDefinition";

export interface ControllerModes {
  batchEnabled: boolean;
  realtimeEnabled: boolean;
  /** DELIVERY_TARGET_REPOS: so the webhook does not warn about a targetRepo the installation allows. */
  deliveryTargetRepos?: string[];
  /** DELIVERY_BRANCH_PREFIX: so the webhook warns where the controller will fail. */
  deliveryBranchPrefix?: string;
  /** The Station template policy's widening, so the webhook warns exactly where the controller will fail. */
  runPodPolicy?: StationPolicy;
}

/**
 * What the webhook learned about an object's neighbours. A fact that is absent was not looked
 * up, mostly because the review's user may not read that object: the warnings then say nothing
 * about it.
 */
export interface AgentFacts {
  station?: Lookup<Station>;
  /** Looked up only when the Station was found. */
  definition?: Lookup<AgentDefinition>;
  /** Keys of agent-secrets; looked up only when something references a key. */
  secretKeys?: Lookup<ReadonlySet<string>>;
  /** Epoch ms the Station's budget is judged at; without it there is no budget warning. */
  now?: number;
}

export interface StationFacts {
  definition?: Lookup<AgentDefinition>;
}

export interface DefinitionFacts {
  secretKeys?: Lookup<ReadonlySet<string>>;
}

/**
 * The first schema problem ajv finds (normally none: the API server has applied the same schema).
 * Only the first: anyone who reaches the webhook's port can send an object, and collecting every
 * error of an object with 400,000 bad array entries exhausts the heap (docs/admission.md).
 */
export function schemaWarnings(kind: AdmittedKind, obj: unknown): string[] {
  const issue = firstSchemaIssue(kind, obj);
  return issue ? [`schema: ${issue.message}`] : [];
}

/** Secret keys an Agent's run reads: its own files' headers, then its definition's keys. */
export function agentRunSecretKeys(agent: Agent, definition: AgentDefinition | undefined): SecretKeyRef[] {
  const own = agentSecretKeys(agent);
  if (!definition) return own;
  const prefix = `AgentDefinition ${definition.metadata?.name ?? ""} `;
  return [...own, ...definitionSecretKeys(definition).map((r) => ({ ...r, path: prefix + r.path }))];
}

function secretWarnings(
  namespace: string,
  refs: readonly SecretKeyRef[],
  keys: Lookup<ReadonlySet<string>> | undefined,
): string[] {
  if (refs.length === 0 || keys === undefined) return [];
  if (keys.state === "unknown") {
    return [`could not read Secret ${SECRET_NAME} to check the keys this object references: ${keys.error}`];
  }
  if (keys.state === "missing") {
    const named = [...new Set(refs.map((r) => r.key))].join(", ");
    return [`Secret ${SECRET_NAME} does not exist in namespace ${namespace}; runs need its keys: ${named}`];
  }
  return refs
    .filter((r) => !keys.value.has(r.key))
    .map((r) => `${r.path}: key "${r.key}" is not in Secret ${SECRET_NAME} in namespace ${namespace}`);
}

const disabledMessage = (execution: string): string | undefined =>
  execution === "batch" ? MSG_BATCH_DISABLED : execution === "realtime" ? MSG_REALTIME_DISABLED : undefined;

function modeDisabled(def: AgentDefinition, modes: ControllerModes): string | undefined {
  const execution = executionOf(def);
  if (execution === "batch" && !modes.batchEnabled) return disabledMessage(execution);
  if (execution === "realtime" && !modes.realtimeEnabled) return disabledMessage(execution);
  return undefined;
}

export function agentWarnings(
  agent: Agent,
  namespace: string,
  modes: ControllerModes,
  facts: AgentFacts,
): string[] {
  const out: string[] = [];
  const stationName = agent.spec.stationRef;
  const { station, definition } = facts;
  if (station === undefined) {
    // Not looked up: nothing to say about the Station or its definition.
  } else if (station.state === "missing") {
    out.push(
      `Station ${stationName} does not exist in namespace ${namespace}: the controller will fail this Agent with "Station ${stationName} not found"`,
    );
  } else if (station.state === "unknown") {
    out.push(`could not check Station ${stationName}: ${station.error}`);
  } else {
    out.push(...budgetWarnings(station.value, facts.now));
  }
  if (station?.state === "found" && definition) {
    const defName = station.value.spec.agentDefRef;
    if (definition.state === "missing") {
      out.push(
        `AgentDefinition ${defName} (agentDefRef of Station ${stationName}) does not exist in namespace ${namespace}: the controller will fail this Agent with "AgentDefinition ${defName} not found"`,
      );
    } else if (definition.state === "unknown") {
      out.push(`could not check AgentDefinition ${defName}: ${definition.error}`);
    } else {
      const reason = specCheckFailure(agent, definition.value, modes);
      if (reason !== undefined) {
        out.push(`the controller will fail this Agent with "${reason}" (AgentDefinition ${defName})`);
      }
    }
  }
  const def = definition?.state === "found" ? definition.value : undefined;
  out.push(...secretWarnings(namespace, agentRunSecretKeys(agent, def), facts.secretKeys));
  return out;
}

/**
 * A Station whose budget is spent holds new Agents Pending (docs/cost-and-budgets.md). Said only
 * when the Station was looked up, that is when the requesting user may read it, budget and spend
 * included (docs/admission.md).
 */
function budgetWarnings(station: Station, now: number | undefined): string[] {
  if (now === undefined) return [];
  const v = budgetVerdict(station, now);
  if (v.state !== "exhausted") return [];
  const at = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
  return [`this Agent will stay Pending: ${budgetMessage(station.metadata?.name ?? "", v, at)}`];
}

export function stationWarnings(
  station: Station,
  namespace: string,
  modes: ControllerModes,
  facts: StationFacts,
): string[] {
  const defName = station.spec.agentDefRef;
  const definition = facts.definition?.state === "found" ? facts.definition.value : undefined;
  // The batch seed: a batch request does not use the template; only a fallback Job does.
  const templateUnused = definition !== undefined && !templateUsed(definition);
  const problem = templateUnused
    ? undefined
    : stationTemplateProblem(station.spec.template, modes.runPodPolicy);
  const policy = templateUnused
    ? []
    : problem === undefined
      ? stationTemplateAdvice(station.spec.template)
      : [`Agents of this Station will fail with "invalid Station template: ${problem}"`];
  return [...policy, ...definitionStateWarnings(namespace, modes, facts, defName)];
}

/** Whether a definition's runs build a Job from the Station template: Job runs, and batch runs that fall back to one. */
function templateUsed(def: AgentDefinition): boolean {
  return executionOf(def) !== "batch" || def.spec.batch?.onTimeout === "fallback";
}

function definitionStateWarnings(
  namespace: string,
  modes: ControllerModes,
  facts: StationFacts,
  defName: string,
): string[] {
  const { definition } = facts;
  if (definition === undefined) return [];
  if (definition.state === "missing") {
    return [
      `AgentDefinition ${defName} does not exist in namespace ${namespace}: Agents of this Station will fail with "AgentDefinition ${defName} not found" until it is created`,
    ];
  }
  if (definition.state === "unknown")
    return [`could not check AgentDefinition ${defName}: ${definition.error}`];
  const disabled = modeDisabled(definition.value, modes);
  return disabled === undefined
    ? []
    : [
        `AgentDefinition ${defName} runs as ${executionOf(definition.value)}: Agents of this Station will fail with "${disabled}"`,
      ];
}

export function definitionWarnings(
  def: AgentDefinition,
  namespace: string,
  modes: ControllerModes,
  facts: DefinitionFacts,
): string[] {
  const out: string[] = [];
  const disabled = modeDisabled(def, modes);
  if (disabled !== undefined) {
    out.push(`spec.execution: Agents using this AgentDefinition will fail with "${disabled}"`);
  }
  out.push(...secretWarnings(namespace, definitionSecretKeys(def), facts.secretKeys));
  return out;
}
