/**
 * `kubectl agent validate`: offline checks of Agent, Station and AgentDefinition manifests, for CI
 * without a cluster. Two layers, both the product's own code:
 *
 * 1. the schema, through the ajv validators (src/validation): what the API server would refuse,
 *    the CEL rules' equivalents included;
 * 2. run checks, where the manifests hold what the controller needs to judge them: a Station's
 *    template (src/core/run-job/job.ts templateProblem, against the shipped policy: an
 *    installation's RUN_POD_* widening is not known offline; skipped when the Station's definition
 *    is among the manifests and is a batch run without fallback, which never uses it) and, for an Agent whose Station and
 *    AgentDefinition are among the manifests, the controller's Pending checks
 *    (src/core/policy/spec-checks.ts specCheckFailure) and the Job build. These are the run failures the
 *    API server accepts and the controller later reports as the Agent's failureReason.
 *
 * Pure: the caller reads the files (readManifestSources) and prints the report.
 */
import { parseAllDocuments } from "yaml";
import type { Agent } from "../../generated/crds/agent.js";
import type { AgentDefinition } from "../../generated/crds/agentdefinition.js";
import type { Station } from "../../generated/crds/station.js";
import type { ControllerSettings } from "../core/input.js";
import { executionOf, specCheckFailure } from "../core/policy/spec-checks.js";
import { DEFAULT_MAX_OUTPUT_BYTES } from "../core/readback/output.js";
import { buildJob, templateProblem } from "../core/run-job/job.js";
import { validateResource } from "../validation/index.js";

export interface ManifestSource {
  /** As the user named it (relative paths stay relative in messages). */
  file: string;
  text: string;
}

export interface ManifestProblem {
  file: string;
  /** 1-based number of the YAML document in its file; 0 for a problem with the file itself. */
  document: number;
  /** `Kind/name` when known. */
  object?: string;
  /** The field's dotted path; "" for the whole object. */
  path: string;
  /** A sentence naming the field (the validators' own wording). */
  message: string;
}

export interface ValidationReport {
  /** Agent, Station and AgentDefinition documents checked. */
  checked: number;
  /** Documents of other kinds (a Deployment, a kustomization …), left alone. */
  skipped: number;
  problems: ManifestProblem[];
}

export interface RunCheckSettings {
  /** Skip layer 2 (only what the API server checks). */
  schemaOnly?: boolean;
  /** As the controller is configured; both on unless said otherwise. */
  batchEnabled?: boolean;
  realtimeEnabled?: boolean;
}

const KINDS = new Set(["Agent", "Station", "AgentDefinition"]);
const GROUP = "agents.re-cinq.com/";

interface Doc {
  file: string;
  document: number;
  value: Record<string, unknown>;
}

function objectLabel(value: Record<string, unknown>): string {
  const meta = (value.metadata ?? {}) as { name?: unknown; generateName?: unknown };
  const name =
    typeof meta.name === "string"
      ? meta.name
      : typeof meta.generateName === "string"
        ? meta.generateName
        : "<unnamed>";
  return `${String(value.kind)}/${name}`;
}

/** Ours when the group says so, or (for hand-written snippets) the kind does and apiVersion is absent. */
function isOurs(value: Record<string, unknown>): boolean {
  const apiVersion = value.apiVersion;
  if (typeof apiVersion === "string") return apiVersion.startsWith(GROUP);
  return typeof value.kind === "string" && KINDS.has(value.kind);
}

function documentsOf(source: ManifestSource, problems: ManifestProblem[]): Doc[] {
  const docs: Doc[] = [];
  parseAllDocuments(source.text).forEach((doc, i) => {
    const document = i + 1;
    if (doc.errors.length > 0) {
      const first = doc.errors[0] as { message: string };
      problems.push({
        file: source.file,
        document,
        path: "",
        message: `not valid YAML: ${(first.message.split("\n")[0] ?? "").replace(/:$/, "")}.`,
      });
      return;
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return;
    if (typeof value !== "object" || Array.isArray(value)) {
      problems.push({
        file: source.file,
        document,
        path: "",
        message: "is not a Kubernetes object (a YAML mapping).",
      });
      return;
    }
    const obj = value as Record<string, unknown>;
    // A kubectl List (`kind: List`, `items: […]`) holds objects too.
    if (obj.kind === "List" && Array.isArray(obj.items)) {
      for (const item of obj.items) {
        if (item && typeof item === "object" && !Array.isArray(item)) {
          docs.push({ file: source.file, document, value: item as Record<string, unknown> });
        }
      }
      return;
    }
    docs.push({ file: source.file, document, value: obj });
  });
  return docs;
}

const RUN_CHECK_SETTINGS: ControllerSettings = {
  namespace: "validate",
  agentImage: "validate.invalid/agent:0",
  maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES,
  batchEnabled: true,
  realtimeEnabled: true,
  batchPollSeconds: 60,
  realtimeSigningKey: "validate",
};

const sameNamespace = (a: Record<string, unknown>, b: Record<string, unknown>) => {
  const ns = (v: Record<string, unknown>) => (v.metadata as { namespace?: string } | undefined)?.namespace;
  return ns(a) === undefined || ns(b) === undefined || ns(a) === ns(b);
};

const nameOf = (v: Record<string, unknown>) => (v.metadata as { name?: string } | undefined)?.name;

/** Whether a definition's runs build a Job from the Station template: Job runs, and batch runs that fall back to one. */
function templateUsed(definition: AgentDefinition): boolean {
  return executionOf(definition) !== "batch" || definition.spec.batch?.onTimeout === "fallback";
}

/** Why the controller would fail this Agent, judged against the Station and definition found. */
function runFailure(
  agent: Agent,
  station: Station,
  definition: AgentDefinition,
  s: RunCheckSettings,
): string | undefined {
  const settings = {
    ...RUN_CHECK_SETTINGS,
    batchEnabled: s.batchEnabled ?? true,
    realtimeEnabled: s.realtimeEnabled ?? true,
  };
  const failure = specCheckFailure(agent, definition, settings);
  if (failure) return failure;
  const execution = executionOf(definition);
  // The batch seed: the batch request does not use the template; a fallback Job does.
  if (!templateUsed(definition)) return undefined;
  const named = {
    ...agent,
    metadata: { ...agent.metadata, name: agent.metadata.name ?? "validate", uid: "validate" },
  };
  const built = buildJob(
    named,
    station,
    definition,
    settings,
    execution === "realtime" ? "realtime" : "interactive",
  );
  return built.ok ? undefined : built.reason;
}

export function validateManifests(
  sources: readonly ManifestSource[],
  settings: RunCheckSettings = {},
): ValidationReport {
  const problems: ManifestProblem[] = [];
  const docs = sources.flatMap((s) => documentsOf(s, problems));
  const ours = docs.filter((d) => isOurs(d.value));
  const valid: Doc[] = [];
  for (const d of ours) {
    const result = validateResource(d.value);
    const object = objectLabel(d.value);
    if (result.ok) {
      valid.push(d);
      continue;
    }
    for (const issue of result.issues) {
      problems.push({ file: d.file, document: d.document, object, path: issue.path, message: issue.message });
    }
  }
  if (!settings.schemaOnly) {
    const stations = valid.filter((d) => d.value.kind === "Station");
    const definitions = valid.filter((d) => d.value.kind === "AgentDefinition");
    for (const d of stations) {
      const st = d.value as unknown as Station;
      const def = definitions.find(
        (x) => nameOf(x.value) === st.spec.agentDefRef && sameNamespace(x.value, d.value),
      );
      if (def && !templateUsed(def.value as unknown as AgentDefinition)) continue;
      const problem = templateProblem(st.spec.template);
      if (problem) {
        problems.push({
          file: d.file,
          document: d.document,
          object: objectLabel(d.value),
          path: "spec.template",
          message: `spec.template: the controller fails every run of this Station: invalid Station template: ${problem}.`,
        });
      }
    }
    for (const d of valid.filter((v) => v.value.kind === "Agent")) {
      const agent = d.value as unknown as Agent;
      const station = stations.find(
        (s) => nameOf(s.value) === agent.spec.stationRef && sameNamespace(s.value, d.value),
      );
      if (!station) continue;
      const st = station.value as unknown as Station;
      const definition = definitions.find(
        (x) => nameOf(x.value) === st.spec.agentDefRef && sameNamespace(x.value, station.value),
      );
      if (!definition) continue;
      const reason = runFailure(agent, st, definition.value as unknown as AgentDefinition, settings);
      if (reason) {
        problems.push({
          file: d.file,
          document: d.document,
          object: objectLabel(d.value),
          path: "",
          message: `the controller would fail this run: ${reason}.`,
        });
      }
    }
  }
  // Stable: within one document the schema issues stay ahead of the run checks.
  const order = new Map(sources.map((s, i) => [s.file, i]));
  problems.sort((a, b) => (order.get(a.file) ?? 0) - (order.get(b.file) ?? 0) || a.document - b.document);
  return { checked: ours.length, skipped: docs.length - ours.length, problems };
}

/** One problem as the plugin prints it: `FILE#DOC Kind/name: sentence`. */
export function formatProblem(p: ManifestProblem): string {
  const where = p.document > 0 ? `${p.file}#${p.document}` : p.file;
  return `${where}${p.object ? ` ${p.object}` : ""}: ${p.message}`;
}
