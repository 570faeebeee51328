/**
 * Schema validation of Agent, Station and AgentDefinition objects over the ahead-of-time
 * compiled validators in generated/crds/. Every problem is reported, each with its path and
 * a sentence naming the field.
 *
 * This checks what the API server checks at admission (structure, types, enums, bounds,
 * patterns and the CEL rules that have a schema equivalent). Execution-mode compatibility
 * (e.g. batch with allowed_tools) is deliberately not checked: the controller fails such
 * Agents with the seeds' messages. See docs/validation-rules.md.
 */
import type { ErrorObject } from "ajv";
import type { Agent } from "../../generated/crds/agent.js";
import type { AgentDefinition } from "../../generated/crds/agentdefinition.js";
import { celRules } from "../../generated/crds/cel-rules.js";
import type { Station } from "../../generated/crds/station.js";
import {
  validateAgentDefinition as agentDefinitionValidator,
  validateAgent as agentValidator,
  type StandaloneValidator,
  validateStation as stationValidator,
} from "../../generated/crds/validators.js";
import {
  validateAgentDefinition as agentDefinitionFirstError,
  validateAgent as agentFirstError,
  validateStation as stationFirstError,
} from "../../generated/crds/validators-first-error.js";
import { actualType, describeType, patternHints, shown } from "./messages.js";
import { displayPath, pointerSegments, valueAt } from "./paths.js";

export type ResourceKind = "Agent" | "Station" | "AgentDefinition";

export interface ValidationIssue {
  /** Dotted path of the offending field, e.g. `spec.files[0].url`; empty for the object itself. */
  path: string;
  /** The same location as a JSON Pointer, e.g. `/spec/files/0/url`. */
  pointer: string;
  /** A sentence naming the field and what is wrong with it. */
  message: string;
  /** The schema keyword that failed (`required`, `enum`, `pattern`, `cel`, ...). */
  keyword: string;
}

export type ValidationResult<T> =
  | { ok: true; value: T; issues: [] }
  | { ok: false; issues: ValidationIssue[] };

function joinPointer(pointer: string, key: string): string {
  return `${pointer}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

function issueAt(
  kind: ResourceKind,
  pointer: string,
  data: unknown,
  keyword: string,
  text: (p: string) => string,
) {
  const path = displayPath(pointerSegments(pointer), data);
  return { path, pointer, keyword, message: text(path || kind) };
}

/** One ajv error as a sentence. `undefined` for errors that only restate another one. */
export function describeError(
  kind: ResourceKind,
  error: ErrorObject,
  data: unknown,
): ValidationIssue | undefined {
  const segments = pointerSegments(error.instancePath);
  const value = valueAt(segments, data);
  const params = error.params as Record<string, unknown>;

  const rule = celRules.find(
    (r) => r.kind === kind && r.schemaPath !== undefined && error.schemaPath.startsWith(`${r.schemaPath}/`),
  );
  if (rule) {
    if (error.keyword === "if") return undefined;
    // Point at the field the rule asks for: the missing property, or the empty one.
    const pointer =
      error.keyword === "required"
        ? joinPointer(error.instancePath, String(params.missingProperty))
        : error.instancePath;
    return issueAt(kind, pointer, data, "cel", (p) => `${p}: ${rule.message}.`);
  }

  switch (error.keyword) {
    case "required":
      return issueAt(
        kind,
        joinPointer(error.instancePath, String(params.missingProperty)),
        data,
        "required",
        (p) => `${p} is required.`,
      );
    case "additionalProperties":
      return issueAt(
        kind,
        joinPointer(error.instancePath, String(params.additionalProperty)),
        data,
        "additionalProperties",
        (p) => `${p} is not a known field of ${kind}.`,
      );
    case "type":
      return issueAt(
        kind,
        error.instancePath,
        data,
        "type",
        (p) => `${p} must be ${describeType(params.type)}, got ${actualType(value)}.`,
      );
    case "enum": {
      const allowed = (params.allowedValues as unknown[]).map((v) => String(v)).join(", ");
      return issueAt(
        kind,
        error.instancePath,
        data,
        "enum",
        (p) => `${p} must be one of ${allowed}; got ${shown(value)}.`,
      );
    }
    case "const":
      return issueAt(
        kind,
        error.instancePath,
        data,
        "const",
        (p) => `${p} must be ${shown(params.allowedValue)}, got ${shown(value)}.`,
      );
    case "minimum":
      return issueAt(
        kind,
        error.instancePath,
        data,
        "minimum",
        (p) => `${p} must be at least ${params.limit}, got ${shown(value)}.`,
      );
    case "maximum":
      return issueAt(
        kind,
        error.instancePath,
        data,
        "maximum",
        (p) => `${p} must be at most ${params.limit}, got ${shown(value)}.`,
      );
    case "minLength":
      return issueAt(kind, error.instancePath, data, "minLength", (p) =>
        params.limit === 1
          ? `${p} must not be empty.`
          : `${p} must be at least ${params.limit} characters long.`,
      );
    case "maxLength":
      return issueAt(
        kind,
        error.instancePath,
        data,
        "maxLength",
        (p) => `${p} must be at most ${params.limit} characters long.`,
      );
    case "maxItems":
      return issueAt(
        kind,
        error.instancePath,
        data,
        "maxItems",
        (p) => `${p} must have at most ${params.limit} entries.`,
      );
    case "minItems":
      return issueAt(
        kind,
        error.instancePath,
        data,
        "minItems",
        (p) => `${p} must have at least ${params.limit} entries.`,
      );
    case "pattern": {
      const hint = patternHints[String(params.pattern)];
      return issueAt(kind, error.instancePath, data, "pattern", (p) =>
        hint
          ? `${p} must be ${hint}; got ${shown(value)}.`
          : `${p} must match ${String(params.pattern)}; got ${shown(value)}.`,
      );
    }
    case "format": {
      const expected =
        params.format === "date-time"
          ? "an RFC 3339 date-time such as 2026-01-02T15:04:05Z"
          : params.format === "int32"
            ? "a 32-bit integer"
            : `in ${String(params.format)} format`;
      return issueAt(
        kind,
        error.instancePath,
        data,
        "format",
        (p) => `${p} must be ${expected}; got ${shown(value)}.`,
      );
    }
    default:
      return issueAt(
        kind,
        error.instancePath,
        data,
        error.keyword,
        (p) => `${p} ${error.message ?? "is invalid"}.`,
      );
  }
}

function run<T>(kind: ResourceKind, validator: StandaloneValidator, obj: unknown): ValidationResult<T> {
  if (validator(obj)) return { ok: true, value: obj as T, issues: [] };
  // One issue per field: ajv checks type before bounds and length before pattern, so the
  // first error at a location is the most basic one (an empty name is "must not be empty",
  // not also "must match the name pattern").
  const seen = new Set<string>();
  const issues: ValidationIssue[] = [];
  for (const error of validator.errors ?? []) {
    const issue = describeError(kind, error, obj);
    if (!issue || seen.has(issue.pointer)) continue;
    seen.add(issue.pointer);
    issues.push(issue);
  }
  return { ok: false, issues };
}

export function validateAgent(obj: unknown): ValidationResult<Agent> {
  return run<Agent>("Agent", agentValidator, obj);
}

export function validateStation(obj: unknown): ValidationResult<Station> {
  return run<Station>("Station", stationValidator, obj);
}

export function validateAgentDefinition(obj: unknown): ValidationResult<AgentDefinition> {
  return run<AgentDefinition>("AgentDefinition", agentDefinitionValidator, obj);
}

const FIRST_ERROR_VALIDATORS: Record<ResourceKind, StandaloneValidator> = {
  Agent: agentFirstError,
  Station: stationFirstError,
  AgentDefinition: agentDefinitionFirstError,
};

/**
 * The first schema problem, or undefined for a valid object. The validators behind it stop at the
 * first failure, so work and memory stay bounded by the object's size whatever it holds: this is
 * the check for input from callers that are not trusted (the admission webhook). The all-errors
 * `validate*` functions can build one error object per bad array entry.
 */
export function firstSchemaIssue(kind: ResourceKind, obj: unknown): ValidationIssue | undefined {
  const validator = FIRST_ERROR_VALIDATORS[kind];
  if (validator(obj)) return undefined;
  for (const error of validator.errors ?? []) {
    const issue = describeError(kind, error, obj);
    if (issue) return issue;
  }
  return { path: "", pointer: "", keyword: "schema", message: `${kind} does not match its schema.` };
}

export type AnyResource = Agent | Station | AgentDefinition;

/** Dispatches on `kind`; an object of another kind is one issue naming `kind`. */
export function validateResource(obj: unknown): ValidationResult<AnyResource> {
  const kind = obj !== null && typeof obj === "object" ? (obj as { kind?: unknown }).kind : undefined;
  if (kind === "Agent") return validateAgent(obj);
  if (kind === "Station") return validateStation(obj);
  if (kind === "AgentDefinition") return validateAgentDefinition(obj);
  return {
    ok: false,
    issues: [
      {
        path: "kind",
        pointer: "/kind",
        keyword: "kind",
        message: `kind must be one of Agent, Station, AgentDefinition; got ${shown(kind)}.`,
      },
    ],
  };
}

/** All issues as one multi-line message, e.g. for an exception or a log line. */
export function formatIssues(issues: readonly ValidationIssue[]): string {
  return issues.map((i) => i.message).join("\n");
}

/** Thrown by the `parse*` helpers; carries every issue. */
export class ResourceValidationError extends Error {
  readonly issues: readonly ValidationIssue[];
  constructor(kind: string, issues: readonly ValidationIssue[]) {
    super(`invalid ${kind}:\n${formatIssues(issues)}`);
    this.name = "ResourceValidationError";
    this.issues = issues;
  }
}

function orThrow<T>(kind: ResourceKind, result: ValidationResult<T>): T {
  if (result.ok) return result.value;
  throw new ResourceValidationError(kind, result.issues);
}

export function parseAgent(obj: unknown): Agent {
  return orThrow("Agent", validateAgent(obj));
}

export function parseStation(obj: unknown): Station {
  return orThrow("Station", validateStation(obj));
}

export function parseAgentDefinition(obj: unknown): AgentDefinition {
  return orThrow("AgentDefinition", validateAgentDefinition(obj));
}
