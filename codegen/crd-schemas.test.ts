/**
 * Checks on schemas/crds/ the API server would otherwise only report at install time, plus
 * the API surface the specification fixes (names, columns, fields; docs/validation-rules.md#in-the-schema).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { patternHints } from "../src/validation/messages.js";
import { type CrdSource, type JsonSchema, readCrds } from "./crd-source.js";

const crdDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../schemas/crds");
let crds: Map<string, CrdSource>;
beforeAll(async () => {
  crds = new Map((await readCrds(crdDir)).map((c) => [c.kind, c]));
});

function crd(kind: string): CrdSource {
  const found = crds.get(kind);
  if (!found) throw new Error(`no CRD for ${kind}`);
  return found;
}

function version(kind: string): JsonSchema {
  return (crd(kind).manifest.spec as { versions: JsonSchema[] }).versions[0] as JsonSchema;
}

interface Node {
  path: string;
  schema: JsonSchema;
}

function walk(schema: JsonSchema, at = ""): Node[] {
  const out: Node[] = [{ path: at, schema }];
  const props = schema.properties as Record<string, JsonSchema> | undefined;
  for (const [name, child] of Object.entries(props ?? {}))
    out.push(...walk(child, at ? `${at}.${name}` : name));
  if (schema.items) out.push(...walk(schema.items as JsonSchema, `${at}[]`));
  if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
    out.push(...walk(schema.additionalProperties as JsonSchema, `${at}.*`));
  }
  return out;
}

/** JSONSchemaProps fields of apiextensions.k8s.io/v1 that a structural schema may use. */
const allowedKeywords = new Set([
  "description",
  "type",
  "format",
  "title",
  "default",
  "maximum",
  "exclusiveMaximum",
  "minimum",
  "exclusiveMinimum",
  "maxLength",
  "minLength",
  "pattern",
  "maxItems",
  "minItems",
  "multipleOf",
  "enum",
  "maxProperties",
  "minProperties",
  "required",
  "items",
  "properties",
  "additionalProperties",
  "nullable",
  "example",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-validations",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
]);

const kinds = ["Agent", "Station", "AgentDefinition"];

describe("structural schemas", () => {
  it.each(kinds)(
    "%s: every node has a type (or preserves unknown fields) and uses only CRD keywords",
    (kind) => {
      for (const { path: at, schema } of walk(crd(kind).schema)) {
        if (schema["x-kubernetes-preserve-unknown-fields"] !== true)
          expect(schema.type, `${kind} ${at}`).toBeTypeOf("string");
        for (const key of Object.keys(schema))
          expect(allowedKeywords.has(key), `${kind} ${at}: ${key}`).toBe(true);
        expect(
          schema.properties && schema.additionalProperties,
          `${kind} ${at}: properties with additionalProperties`,
        ).toBeFalsy();
      }
    },
  );

  it.each(kinds)("%s: every field has a description for kubectl explain", (kind) => {
    for (const { path: at, schema } of walk(crd(kind).schema)) {
      const isScalarItem = at.endsWith("[]") || at.endsWith(".*");
      if (at === "metadata" || isScalarItem) continue;
      expect(
        typeof schema.description === "string" && schema.description.length > 10,
        `${kind} ${at || "<root>"}`,
      ).toBe(true);
    }
  });

  it.each(kinds)("%s: defaults satisfy their own type, enum and minimum", (kind) => {
    for (const { path: at, schema } of walk(crd(kind).schema)) {
      if (!("default" in schema)) continue;
      const value = schema.default;
      if (schema.type === "integer") expect(Number.isInteger(value), at).toBe(true);
      else expect(typeof value, at).toBe(schema.type);
      if (Array.isArray(schema.enum)) expect(schema.enum, at).toContain(value);
      if (typeof schema.minimum === "number")
        expect(value as number, at).toBeGreaterThanOrEqual(schema.minimum);
    }
  });

  it.each(kinds)("%s: every pattern compiles and has a sentence in src/validation/messages.ts", (kind) => {
    for (const { path: at, schema } of walk(crd(kind).schema)) {
      if (typeof schema.pattern !== "string") continue;
      expect(() => new RegExp(schema.pattern as string, "u"), at).not.toThrow();
      expect(patternHints[schema.pattern], `${kind} ${at}: ${schema.pattern}`).toBeTypeOf("string");
    }
  });
});

describe("API surface (docs/reference/crds.md)", () => {
  it.each([
    ["Agent", "agents", "agent", ["agt"], true],
    ["Station", "stations", "station", ["stn"], true],
    ["AgentDefinition", "agentdefinitions", "agentdefinition", ["agentdef", "ad"], false],
  ] as const)(
    "%s: names, scope, version and status subresource",
    (kind, plural, singular, shortNames, hasStatus) => {
      const spec = crd(kind).manifest.spec as JsonSchema;
      expect(crd(kind).manifest.metadata).toEqual({ name: `${plural}.agents.re-cinq.com` });
      expect(spec.group).toBe("agents.re-cinq.com");
      expect(spec.scope).toBe("Namespaced");
      expect(spec.names).toEqual({ kind, listKind: `${kind}List`, plural, singular, shortNames });
      const versions = spec.versions as JsonSchema[];
      expect(versions.map((v) => [v.name, v.served, v.storage])).toEqual([["v1beta1", true, true]]);
      expect(version(kind).subresources).toEqual(hasStatus ? { status: {} } : undefined);
      expect(crd(kind).schema.required).toEqual(["spec"]);
    },
  );

  it.each([
    ["Agent", "Phase", ".status.phase", "string", 0],
    ["Agent", "Station", ".spec.stationRef", "string", 0],
    ["Agent", "Job", ".status.jobName", "string", 0],
    ["Agent", "Age", ".metadata.creationTimestamp", "date", 0],
    ["Agent", "Exit", ".status.exitCode", "integer", 1],
    ["Agent", "PR", ".status.prUrl", "string", 1],
    ["Agent", "Cost", ".status.costUSD", "string", 1],
    ["Agent", "Tokens", ".status.usage.totalTokens", "integer", 1],
    ["Agent", "Reason", '.status.conditions[?(@.type=="Ready")].reason', "string", 1],
    ["Agent", "Message", '.status.conditions[?(@.type=="Ready")].message', "string", 1],
    ["Station", "Recipe", ".spec.agentDefRef", "string", 0],
    ["Station", "Deadline", ".spec.deadlineMinutes", "integer", 0],
    ["Station", "Max", ".spec.maxConcurrentRuns", "integer", 1],
    ["Station", "Age", ".metadata.creationTimestamp", "date", 0],
    ["AgentDefinition", "Model", ".spec.model", "string", 0],
    ["AgentDefinition", "Execution", ".spec.execution", "string", 0],
    ["AgentDefinition", "Age", ".metadata.creationTimestamp", "date", 0],
  ] as const)("%s printer column %s", (kind, name, jsonPath, type, priority) => {
    const columns = version(kind).additionalPrinterColumns as JsonSchema[];
    const column = columns.find((c) => c.name === name);
    expect(column).toMatchObject({ jsonPath, type });
    expect(column?.priority ?? 0).toBe(priority);
  });

  it.each(kinds)("%s: printer columns are exactly the table's, in its order", (kind) => {
    const expected = {
      Agent: ["Phase", "Station", "Job", "Age", "Exit", "PR", "Cost", "Tokens", "Reason", "Message"],
      Station: ["Recipe", "Deadline", "Max", "Age"],
      AgentDefinition: ["Model", "Execution", "Age"],
    }[kind];
    expect((version(kind).additionalPrinterColumns as JsonSchema[]).map((c) => c.name)).toEqual(expected);
  });
});

/** [kind, dotted path, type, extra expectations] for every field the seeds and crds.md list. */
const fields: [string, string, string, JsonSchema?][] = [
  ["Agent", "spec.stationRef", "string", { maxLength: 253 }],
  ["Agent", "spec.parameters", "object", { additionalProperties: { type: "string" } }],
  ["Agent", "spec.taskId", "string"],
  ["Agent", "spec.model", "string"],
  ["Agent", "spec.targetRepo", "string", { pattern: "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$" }],
  ["Agent", "spec.branch", "string"],
  ["Agent", "spec.files", "array", { maxItems: 100 }],
  ["Agent", "spec.files[]", "object", { required: ["path", "url"] }],
  ["Agent", "spec.files[].path", "string"],
  ["Agent", "spec.files[].url", "string"],
  ["Agent", "spec.files[].headers_secret", "string"],
  ["Agent", "spec.resumeSession", "string"],
  ["Agent", "status.phase", "string", { enum: ["Pending", "Running", "Succeeded", "Failed"] }],
  ["Agent", "status.jobName", "string"],
  ["Agent", "status.startedAt", "string", { format: "date-time" }],
  ["Agent", "status.completedAt", "string", { format: "date-time" }],
  ["Agent", "status.exitCode", "integer"],
  ["Agent", "status.output", "string"],
  ["Agent", "status.failureReason", "string"],
  ["Agent", "status.prUrl", "string"],
  ["Agent", "status.sessionId", "string"],
  ["Agent", "status.batchId", "string"],
  ["Agent", "status.batchProvider", "string"],
  ["Agent", "status.batchFallback", "boolean"],
  ["Agent", "status.batchCleanupAttempts", "integer"],
  [
    "Agent",
    "status.conditions",
    "array",
    { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] },
  ],
  [
    "Agent",
    "status.conditions[]",
    "object",
    { required: ["type", "status", "lastTransitionTime", "reason", "message"] },
  ],
  ["Agent", "status.conditions[].status", "string", { enum: ["True", "False", "Unknown"] }],
  ["Agent", "status.conditions[].observedGeneration", "integer"],
  ["Agent", "status.conditions[].lastTransitionTime", "string", { format: "date-time" }],
  ["Station", "spec", "object", { required: ["agentDefRef", "template"] }],
  ["Station", "spec.agentDefRef", "string", { maxLength: 253 }],
  ["Station", "spec.template", "object", { "x-kubernetes-preserve-unknown-fields": true }],
  ["Station", "spec.deadlineMinutes", "integer", { default: 30, minimum: 1 }],
  ["Station", "spec.maxConcurrentRuns", "integer", { default: 0, minimum: 0 }],
  ["Station", "spec.concurrencyPolicy", "string", { default: "Allow", enum: ["Allow", "Forbid", "Replace"] }],
  ["Station", "spec.successfulRunsHistoryLimit", "integer", { default: 3, minimum: 0 }],
  ["Station", "spec.failedRunsHistoryLimit", "integer", { default: 3, minimum: 0 }],
  ["AgentDefinition", "spec", "object", { required: ["prompt"] }],
  ["AgentDefinition", "spec.description", "string"],
  ["AgentDefinition", "spec.prompt", "string"],
  ["AgentDefinition", "spec.model", "string"],
  [
    "AgentDefinition",
    "spec.execution",
    "string",
    { default: "interactive", enum: ["interactive", "batch", "realtime"] },
  ],
  ["AgentDefinition", "spec.batch.timeoutMinutes", "integer", { default: 1440, minimum: 1 }],
  ["AgentDefinition", "spec.batch.onTimeout", "string", { default: "fail", enum: ["fail", "fallback"] }],
  ["AgentDefinition", "spec.batch.maxTokens", "integer", { default: 16000, minimum: 1 }],
  ["AgentDefinition", "spec.allowed_tools", "array"],
  ["AgentDefinition", "spec.disallowed_tools", "array"],
  ["AgentDefinition", "spec.permission_mode", "string", { default: "auto", enum: ["auto", "bypass"] }],
  ["AgentDefinition", "spec.max_turns", "integer", { minimum: 1 }],
  ["AgentDefinition", "spec.tool_config", "object", { "x-kubernetes-preserve-unknown-fields": true }],
  ["AgentDefinition", "spec.resources.env[]", "object", { required: ["name", "value"] }],
  ["AgentDefinition", "spec.resources.secrets[]", "object", { required: ["name", "ref"] }],
  ["AgentDefinition", "spec.resources.mcp_servers[]", "object", { required: ["name", "transport"] }],
  ["AgentDefinition", "spec.resources.mcp_servers[].transport", "string", { enum: ["stdio", "http", "sse"] }],
  ["AgentDefinition", "spec.resources.mcp_servers[].command", "string"],
  ["AgentDefinition", "spec.resources.mcp_servers[].args", "array"],
  ["AgentDefinition", "spec.resources.mcp_servers[].url", "string"],
  ["AgentDefinition", "spec.resources.mcp_servers[].headers_secret", "string"],
  ["AgentDefinition", "spec.resources.repos[]", "object", { required: ["name", "url"] }],
  ["AgentDefinition", "spec.resources.repos[].ref", "string"],
  ["AgentDefinition", "spec.resources.repos[].path", "string"],
  ["AgentDefinition", "spec.resources.repos[].token_secret", "string"],
  ["AgentDefinition", "spec.resources.skills", "array"],
  ["AgentDefinition", "spec.resources.skills_source", "string"],
  ["AgentDefinition", "spec.resources.conversation.source", "string"],
  ["AgentDefinition", "spec.resources.conversation.id", "string"],
  ["AgentDefinition", "spec.resources.conversation.pin", "string"],
  ["AgentDefinition", "spec.resources.conversation.headers_secret", "string"],
  ["AgentDefinition", "spec.output.format", "string", { enum: ["text", "json", "stream-json"] }],
  ["AgentDefinition", "spec.output.schema", "object", { "x-kubernetes-preserve-unknown-fields": true }],
  ["AgentDefinition", "spec.output.select[]", "object", { required: ["event"] }],
  [
    "AgentDefinition",
    "spec.output.select[].event",
    "string",
    { enum: ["tool_call", "message", "tool_result", "result", "usage"] },
  ],
  ["AgentDefinition", "spec.output.select[].tool", "string"],
  ["AgentDefinition", "spec.output.select[].role", "string", { enum: ["assistant", "user"] }],
  ["AgentDefinition", "spec.output.select[].contains", "string"],
  ["AgentDefinition", "spec.output.sinks[]", "object", { required: ["type"] }],
  ["AgentDefinition", "spec.output.sinks[].type", "string", { enum: ["stdout", "http", "file"] }],
  ["AgentDefinition", "spec.output.sinks[].url", "string"],
  ["AgentDefinition", "spec.output.sinks[].headers_secret", "string"],
  ["AgentDefinition", "spec.output.sinks[].path", "string"],
  ["AgentDefinition", "spec.output.watch[]", "object", { required: ["event", "path"] }],
  ["AgentDefinition", "spec.delivery.pullRequest", "object", { required: ["tokenSecret"] }],
  ["AgentDefinition", "spec.delivery.pullRequest.draft", "boolean", { default: false }],
];

describe("fields (docs/validation-rules.md#in-the-schema)", () => {
  it.each(fields)("%s %s is %s", (kind, at, type, extra) => {
    const node = walk(crd(kind).schema).find((n) => n.path === at);
    expect(node, `${kind} ${at}`).toBeDefined();
    expect(node?.schema.type).toBe(type);
    if (extra) expect(node?.schema).toMatchObject(extra);
  });

  it("the Agent spec is immutable through CEL with the docs/decisions.md D-2 message", () => {
    expect(crd("Agent").schema.properties).toMatchObject({
      spec: {
        "x-kubernetes-validations": [
          { rule: "self == oldSelf", message: "Agent spec is immutable; create a new Agent" },
        ],
      },
    });
  });
});
