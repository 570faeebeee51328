import { describe, expect, it } from "vitest";
import {
  batchDefinition,
  fullAgent,
  fullDefinition,
  fullStation,
  minimalAgent,
  minimalDefinition,
  minimalStation,
} from "../../test/support/validation-fixtures.js";
import {
  firstSchemaIssue,
  formatIssues,
  parseAgent,
  ResourceValidationError,
  type ValidationIssue,
  type ValidationResult,
  validateAgent,
  validateAgentDefinition,
  validateResource,
  validateStation,
} from "./validate.js";

type Obj = Record<string, unknown>;
type Validator = (obj: unknown) => ValidationResult<unknown>;

function issuesOf(result: ValidationResult<unknown>): ValidationIssue[] {
  return result.ok ? [] : result.issues;
}

/** Sets (or with `undefined` deletes) the value at a dotted path; numeric segments index lists. */
function setAt(obj: unknown, path: string, value: unknown): void {
  const segments = path.split(".");
  let node = obj as Obj;
  for (const segment of segments.slice(0, -1)) {
    node[segment] ??= {};
    node = node[segment] as Obj;
  }
  const last = segments[segments.length - 1] as string;
  if (value === undefined) delete node[last];
  else node[last] = value;
}

describe("valid objects pass", () => {
  it.each([
    ["minimal Agent", validateAgent, minimalAgent()],
    ["Agent with every spec and status field", validateAgent, fullAgent()],
    ["minimal Station", validateStation, minimalStation()],
    ["Station with every field", validateStation, fullStation()],
    ["minimal AgentDefinition", validateAgentDefinition, minimalDefinition()],
    ["AgentDefinition with every field", validateAgentDefinition, fullDefinition()],
    ["the seed's batch AgentDefinition", validateAgentDefinition, batchDefinition()],
  ] as [string, Validator, unknown][])("%s", (_name, validate, obj) => {
    const result = validate(obj);
    expect(issuesOf(result)).toEqual([]);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.value).toBe(obj);
  });
});

describe("execution-mode rules are left to the controller", () => {
  // docs/validation-rules.md#the-rule-for-choosing: the Agent fails with `batch execution does not support <field>`,
  // so the definition itself must be accepted.
  const batchOnlyFields: [string, unknown][] = [
    ["spec.allowed_tools", ["Edit"]],
    ["spec.disallowed_tools", ["Bash(rm *)"]],
    ["spec.max_turns", 3],
    ["spec.resources.repos", [{ name: "site", url: "re-cinq/site" }]],
    ["spec.resources.mcp_servers", [{ name: "m", transport: "stdio", command: "m" }]],
    ["spec.resources.skills", ["s"]],
    ["spec.resources.conversation", { source: "https://c.example.com", id: "x" }],
    ["spec.output.watch", [{ event: "report", path: "r.md" }]],
    ["spec.delivery.pullRequest", { tokenSecret: "gh" }],
    ["spec.model", "exec"],
  ];
  it.each(batchOnlyFields)("a batch definition with %s passes schema validation", (path, value) => {
    const def = batchDefinition();
    setAt(def, path, value);
    expect(issuesOf(validateAgentDefinition(def))).toEqual([]);
  });

  it("a realtime definition with resources.conversation.id and pin passes", () => {
    const def = minimalDefinition();
    setAt(def, "spec.execution", "realtime");
    setAt(def, "spec.resources.conversation", { source: "https://c.example.com", id: "a", pin: "b" });
    expect(issuesOf(validateAgentDefinition(def))).toEqual([]);
  });

  it("an Agent with resumeSession passes whatever its definition is", () => {
    const agent = minimalAgent();
    setAt(agent, "spec.resumeSession", "abc");
    expect(issuesOf(validateAgent(agent))).toEqual([]);
  });

  it.each(["fix/#128", "feat/a+b", "release", "x@"])(
    "an Agent with spec.branch %s passes (any name git accepts; the controller checks git's rules)",
    (branch) => {
      const agent = minimalAgent();
      setAt(agent, "spec.branch", branch);
      expect(issuesOf(validateAgent(agent))).toEqual([]);
    },
  );

  it("an Agent with spec.files inside a clone's .git passes (the init confines it to the workspace)", () => {
    const agent = minimalAgent();
    setAt(agent, "spec.files", [
      { path: "app/.git/hooks/pre-push", url: "https://f.example.com/h" },
      { path: "app/.Git/config", url: "https://f.example.com/c" },
    ]);
    expect(issuesOf(validateAgent(agent))).toEqual([]);
  });

  it("a Station template without an agent container passes (the controller fails the Agent)", () => {
    const station = minimalStation();
    setAt(station, "spec.template", { spec: { containers: [{ name: "other", image: "x" }] } });
    expect(issuesOf(validateStation(station))).toEqual([]);
  });
});

interface InvalidCase {
  name: string;
  validate: Validator;
  make: () => unknown;
  path: string;
  message: string;
}

function agentWith(path: string, value: unknown): () => unknown {
  return () => {
    const agent = minimalAgent();
    setAt(agent, path, value);
    return agent;
  };
}
function stationWith(path: string, value: unknown): () => unknown {
  return () => {
    const station = minimalStation();
    setAt(station, path, value);
    return station;
  };
}
function definitionWith(path: string, value: unknown): () => unknown {
  return () => {
    const def = minimalDefinition();
    setAt(def, path, value);
    return def;
  };
}

const invalidCases: InvalidCase[] = [
  // required
  {
    name: "missing stationRef",
    validate: validateAgent,
    make: agentWith("spec.stationRef", undefined),
    path: "spec.stationRef",
    message: "spec.stationRef is required.",
  },
  {
    name: "missing spec",
    validate: validateAgent,
    make: agentWith("spec", undefined),
    path: "spec",
    message: "spec is required.",
  },
  {
    name: "missing agentDefRef",
    validate: validateStation,
    make: stationWith("spec.agentDefRef", undefined),
    path: "spec.agentDefRef",
    message: "spec.agentDefRef is required.",
  },
  {
    name: "missing template",
    validate: validateStation,
    make: stationWith("spec.template", undefined),
    path: "spec.template",
    message: "spec.template is required.",
  },
  {
    name: "missing prompt",
    validate: validateAgentDefinition,
    make: definitionWith("spec.prompt", undefined),
    path: "spec.prompt",
    message: "spec.prompt is required.",
  },
  {
    name: "file without url",
    validate: validateAgent,
    make: agentWith("spec.files", [{ path: "a.md" }]),
    path: "spec.files[0].url",
    message: "spec.files[0].url is required.",
  },
  {
    name: "pullRequest without tokenSecret",
    validate: validateAgentDefinition,
    make: definitionWith("spec.delivery.pullRequest", { draft: true }),
    path: "spec.delivery.pullRequest.tokenSecret",
    message: "spec.delivery.pullRequest.tokenSecret is required.",
  },
  {
    name: "secret without ref",
    validate: validateAgentDefinition,
    make: definitionWith("spec.resources.secrets", [{ name: "X" }]),
    path: "spec.resources.secrets[0].ref",
    message: "spec.resources.secrets[0].ref is required.",
  },
  // enums
  {
    name: "unknown concurrencyPolicy",
    validate: validateStation,
    make: stationWith("spec.concurrencyPolicy", "Sometimes"),
    path: "spec.concurrencyPolicy",
    message: 'spec.concurrencyPolicy must be one of Allow, Forbid, Replace; got "Sometimes".',
  },
  {
    name: "unknown execution",
    validate: validateAgentDefinition,
    make: definitionWith("spec.execution", "streaming"),
    path: "spec.execution",
    message: 'spec.execution must be one of interactive, batch, realtime; got "streaming".',
  },
  {
    name: "unknown permission_mode",
    validate: validateAgentDefinition,
    make: definitionWith("spec.permission_mode", "ask"),
    path: "spec.permission_mode",
    message: 'spec.permission_mode must be one of auto, bypass; got "ask".',
  },
  {
    name: "unknown onTimeout",
    validate: validateAgentDefinition,
    make: definitionWith("spec.batch", { onTimeout: "retry" }),
    path: "spec.batch.onTimeout",
    message: 'spec.batch.onTimeout must be one of fail, fallback; got "retry".',
  },
  {
    name: "unknown sink type",
    validate: validateAgentDefinition,
    make: definitionWith("spec.output.sinks", [{ type: "kafka" }]),
    path: "spec.output.sinks[0].type",
    message: 'spec.output.sinks[0].type must be one of stdout, http, file; got "kafka".',
  },
  {
    name: "unknown select event",
    validate: validateAgentDefinition,
    make: definitionWith("spec.output.select", [{ event: "thinking" }]),
    path: "spec.output.select[0].event",
    message:
      'spec.output.select[0].event must be one of tool_call, message, tool_result, result, usage; got "thinking".',
  },
  {
    name: "unknown MCP transport",
    validate: validateAgentDefinition,
    make: definitionWith("spec.resources.mcp_servers", [{ name: "m", transport: "grpc" }]),
    path: "spec.resources.mcp_servers[0].transport",
    message: 'spec.resources.mcp_servers[0].transport must be one of stdio, http, sse; got "grpc".',
  },
  {
    name: "unknown phase",
    validate: validateAgent,
    make: agentWith("status", { phase: "Done" }),
    path: "status.phase",
    message: 'status.phase must be one of Pending, Running, Succeeded, Failed; got "Done".',
  },
  // bounds
  {
    name: "negative maxConcurrentRuns",
    validate: validateStation,
    make: stationWith("spec.maxConcurrentRuns", -1),
    path: "spec.maxConcurrentRuns",
    message: "spec.maxConcurrentRuns must be at least 0, got -1.",
  },
  {
    name: "zero deadlineMinutes",
    validate: validateStation,
    make: stationWith("spec.deadlineMinutes", 0),
    path: "spec.deadlineMinutes",
    message: "spec.deadlineMinutes must be at least 1, got 0.",
  },
  {
    name: "negative history limit",
    validate: validateStation,
    make: stationWith("spec.failedRunsHistoryLimit", -3),
    path: "spec.failedRunsHistoryLimit",
    message: "spec.failedRunsHistoryLimit must be at least 0, got -3.",
  },
  {
    name: "zero batch.timeoutMinutes",
    validate: validateAgentDefinition,
    make: definitionWith("spec.batch", { timeoutMinutes: 0 }),
    path: "spec.batch.timeoutMinutes",
    message: "spec.batch.timeoutMinutes must be at least 1, got 0.",
  },
  {
    name: "zero batch.maxTokens",
    validate: validateAgentDefinition,
    make: definitionWith("spec.batch", { maxTokens: 0 }),
    path: "spec.batch.maxTokens",
    message: "spec.batch.maxTokens must be at least 1, got 0.",
  },
  {
    name: "zero max_turns",
    validate: validateAgentDefinition,
    make: definitionWith("spec.max_turns", 0),
    path: "spec.max_turns",
    message: "spec.max_turns must be at least 1, got 0.",
  },
  {
    name: "101 files",
    validate: validateAgent,
    make: agentWith(
      "spec.files",
      Array.from({ length: 101 }, (_, i) => ({ path: `f${i}`, url: `https://x.example.com/${i}` })),
    ),
    path: "spec.files",
    message: "spec.files must have at most 100 entries.",
  },
  {
    name: "maxConcurrentRuns beyond int32",
    validate: validateStation,
    make: stationWith("spec.maxConcurrentRuns", 2 ** 31),
    path: "spec.maxConcurrentRuns",
    message: "spec.maxConcurrentRuns must be a 32-bit integer; got 2147483648.",
  },
  // patterns
  {
    name: "an allowHosts entry that is a URL",
    validate: validateStation,
    make: stationWith("spec.egress", { allowHosts: ["pypi.org", "https://pypi.org"] }),
    path: "spec.egress.allowHosts[1]",
    message:
      'spec.egress.allowHosts[1] must be a host name, a *.suffix wildcard, an IPv4 address or a bracketed IPv6 address, optionally with :port (1-65535), e.g. pypi.org, *.example.com or registry.example.com:8443; got "https://pypi.org".',
  },
  {
    name: "65 allowHosts entries",
    validate: validateStation,
    make: stationWith("spec.egress", {
      allowHosts: Array.from({ length: 65 }, (_, i) => `h${i}.example.com`),
    }),
    path: "spec.egress.allowHosts",
    message: "spec.egress.allowHosts must have at most 64 entries.",
  },
  {
    name: "an allowHosts entry that is a bare wildcard",
    validate: validateStation,
    make: stationWith("spec.egress", { allowHosts: ["*"] }),
    path: "spec.egress.allowHosts[0]",
    message:
      'spec.egress.allowHosts[0] must be a host name, a *.suffix wildcard, an IPv4 address or a bracketed IPv6 address, optionally with :port (1-65535), e.g. pypi.org, *.example.com or registry.example.com:8443; got "*".',
  },
  {
    name: "an allowHosts entry with port 0",
    validate: validateStation,
    make: stationWith("spec.egress", { allowHosts: ["pypi.org:0"] }),
    path: "spec.egress.allowHosts[0]",
    message:
      'spec.egress.allowHosts[0] must be a host name, a *.suffix wildcard, an IPv4 address or a bracketed IPv6 address, optionally with :port (1-65535), e.g. pypi.org, *.example.com or registry.example.com:8443; got "pypi.org:0".',
  },
  {
    name: "ftp:// file url",
    validate: validateAgent,
    make: agentWith("spec.files", [{ path: "a.md", url: "ftp://files.example.com/a.md" }]),
    path: "spec.files[0].url",
    message:
      'spec.files[0].url must be an http:// or https:// URL; no other scheme is fetched; got "ftp://files.example.com/a.md".',
  },
  {
    name: "file:// file url",
    validate: validateAgent,
    make: agentWith("spec.files", [{ path: "a.md", url: "file:///etc/passwd" }]),
    path: "spec.files[0].url",
    message:
      'spec.files[0].url must be an http:// or https:// URL; no other scheme is fetched; got "file:///etc/passwd".',
  },
  {
    name: "url without host",
    validate: validateAgent,
    make: agentWith("spec.files", [{ path: "a.md", url: "https://" }]),
    path: "spec.files[0].url",
    message:
      'spec.files[0].url must be an http:// or https:// URL; no other scheme is fetched; got "https://".',
  },
  {
    name: "targetRepo not owner/name",
    validate: validateAgent,
    make: agentWith("spec.targetRepo", "https://github.com/re-cinq/x"),
    path: "spec.targetRepo",
    message: 'spec.targetRepo must be a repository in owner/name form; got "https://github.com/re-cinq/x".',
  },
  {
    name: "stationRef not a DNS name",
    validate: validateAgent,
    make: agentWith("spec.stationRef", "Writer_Station"),
    path: "spec.stationRef",
    message:
      "spec.stationRef must be a Kubernetes object name: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit; got \"Writer_Station\".",
  },
  {
    name: "empty stationRef",
    validate: validateAgent,
    make: agentWith("spec.stationRef", ""),
    path: "spec.stationRef",
    message: "spec.stationRef must not be empty.",
  },
  {
    name: "headers_secret not a Secret key",
    validate: validateAgent,
    make: agentWith("spec.files", [{ path: "a", url: "https://x.example.com/a", headers_secret: "bad key" }]),
    path: "spec.files[0].headers_secret",
    message:
      "spec.files[0].headers_secret must be a Secret key: letters, digits, '-', '_' and '.'; got \"bad key\".",
  },
  // wrong types
  {
    name: "stationRef a number",
    validate: validateAgent,
    make: agentWith("spec.stationRef", 42),
    path: "spec.stationRef",
    message: "spec.stationRef must be a string, got an integer.",
  },
  {
    name: "parameter value a number",
    validate: validateAgent,
    make: agentWith("spec.parameters", { count: 3 }),
    path: "spec.parameters.count",
    message: "spec.parameters.count must be a string, got an integer.",
  },
  {
    name: "parameter key with dots",
    validate: validateAgent,
    make: agentWith("spec.parameters", { "ticket.body": true }),
    path: 'spec.parameters["ticket.body"]',
    message: 'spec.parameters["ticket.body"] must be a string, got a boolean (true or false).',
  },
  {
    name: "files not a list",
    validate: validateAgent,
    make: agentWith("spec.files", { path: "a", url: "https://x.example.com" }),
    path: "spec.files",
    message: "spec.files must be a list, got an object.",
  },
  {
    name: "maxConcurrentRuns a string",
    validate: validateStation,
    make: stationWith("spec.maxConcurrentRuns", "3"),
    path: "spec.maxConcurrentRuns",
    message: "spec.maxConcurrentRuns must be an integer, got a string.",
  },
  {
    name: "deadlineMinutes a fraction",
    validate: validateStation,
    make: stationWith("spec.deadlineMinutes", 1.5),
    path: "spec.deadlineMinutes",
    message: "spec.deadlineMinutes must be an integer, got a number.",
  },
  {
    name: "template a string",
    validate: validateStation,
    make: stationWith("spec.template", "pod.yaml"),
    path: "spec.template",
    message: "spec.template must be an object, got a string.",
  },
  {
    name: "allowed_tools a string",
    validate: validateAgentDefinition,
    make: definitionWith("spec.allowed_tools", "Edit"),
    path: "spec.allowed_tools",
    message: "spec.allowed_tools must be a list, got a string.",
  },
  {
    name: "batchFallback a string",
    validate: validateAgent,
    make: agentWith("status", { batchFallback: "yes" }),
    path: "status.batchFallback",
    message: "status.batchFallback must be a boolean (true or false), got a string.",
  },
  {
    name: "startedAt not a date-time",
    validate: validateAgent,
    make: agentWith("status", { startedAt: "yesterday" }),
    path: "status.startedAt",
    message: 'status.startedAt must be an RFC 3339 date-time such as 2026-01-02T15:04:05Z; got "yesterday".',
  },
  {
    name: "spec null",
    validate: validateAgent,
    make: agentWith("spec", null),
    path: "spec",
    message: "spec must be an object, got null.",
  },
  // unknown fields, apiVersion and kind
  {
    name: "misspelt field",
    validate: validateAgent,
    make: agentWith("spec.stationref", "x"),
    path: "spec.stationref",
    message: "spec.stationref is not a known field of Agent.",
  },
  {
    name: "wrong apiVersion",
    validate: validateAgent,
    make: agentWith("apiVersion", "agents.re-cinq.com/v1alpha1"),
    path: "apiVersion",
    message: 'apiVersion must be "agents.re-cinq.com/v1beta1", got "agents.re-cinq.com/v1alpha1".',
  },
  {
    name: "wrong kind",
    validate: validateStation,
    make: stationWith("kind", "Agent"),
    path: "kind",
    message: 'kind must be "Station", got "Agent".',
  },
  // CEL rules with a schema equivalent
  {
    name: "file path ending in /",
    validate: validateAgent,
    make: agentWith("spec.files", [
      { path: "app/.github/x.yml", url: "https://f.example.com/a" },
      { path: "notes/", url: "https://f.example.com/b" },
    ]),
    path: "spec.files[1]",
    message: "spec.files[1]: a file path must end in a file name (not /, . or ..).",
  },
  {
    name: "http sink without url",
    validate: validateAgentDefinition,
    make: definitionWith("spec.output.sinks", [{ type: "stdout" }, { type: "http" }]),
    path: "spec.output.sinks[1].url",
    message: "spec.output.sinks[1].url: an http sink needs url.",
  },
  {
    name: "http sink with an empty url",
    validate: validateAgentDefinition,
    make: definitionWith("spec.output.sinks", [{ type: "http", url: "" }]),
    path: "spec.output.sinks[0].url",
    message: "spec.output.sinks[0].url: an http sink needs url.",
  },
  {
    name: "file sink without path",
    validate: validateAgentDefinition,
    make: definitionWith("spec.output.sinks", [{ type: "file" }]),
    path: "spec.output.sinks[0].path",
    message: "spec.output.sinks[0].path: a file sink needs path.",
  },
  {
    name: "stdio MCP server without command",
    validate: validateAgentDefinition,
    make: definitionWith("spec.resources.mcp_servers", [{ name: "m", transport: "stdio" }]),
    path: "spec.resources.mcp_servers[0].command",
    message: "spec.resources.mcp_servers[0].command: a stdio MCP server needs command.",
  },
  {
    name: "sse MCP server without url",
    validate: validateAgentDefinition,
    make: definitionWith("spec.resources.mcp_servers", [{ name: "m", transport: "sse" }]),
    path: "spec.resources.mcp_servers[0].url",
    message: "spec.resources.mcp_servers[0].url: an http or sse MCP server needs url.",
  },
];

describe("each class of invalid input fails with a message naming the field", () => {
  it.each(invalidCases)("$name", ({ validate, make, path, message }) => {
    const result = validate(make());
    expect(result.ok).toBe(false);
    const issues = issuesOf(result);
    expect(issues).toContainEqual(expect.objectContaining({ path, message }));
    // Exactly one problem was introduced, so exactly one is reported.
    expect(issues).toHaveLength(1);
  });
});

describe("reporting", () => {
  it("returns every error, not just the first", () => {
    const station = minimalStation();
    setAt(station, "spec.maxConcurrentRuns", -1);
    setAt(station, "spec.concurrencyPolicy", "Never");
    setAt(station, "spec.agentDefRef", undefined);
    const issues = issuesOf(validateStation(station));
    expect(issues.map((i) => i.path).sort()).toEqual([
      "spec.agentDefRef",
      "spec.concurrencyPolicy",
      "spec.maxConcurrentRuns",
    ]);
  });

  it("gives the JSON Pointer next to the dotted path", () => {
    const issues = issuesOf(validateAgent(agentWith("spec.files", [{ path: "a", url: "ftp://x" }])()));
    expect(issues[0]).toMatchObject({
      path: "spec.files[0].url",
      pointer: "/spec/files/0/url",
      keyword: "pattern",
    });
  });

  it("names the kind when the object itself is not an object", () => {
    expect(issuesOf(validateAgentDefinition("apiVersion: x"))).toEqual([
      { path: "", pointer: "", keyword: "type", message: "AgentDefinition must be an object, got a string." },
    ]);
  });

  it("marks CEL-equivalent failures with keyword cel", () => {
    const issues = issuesOf(
      validateAgentDefinition(definitionWith("spec.output.sinks", [{ type: "http" }])()),
    );
    expect(issues.map((i) => i.keyword)).toEqual(["cel"]);
  });

  it("joins issues into one message", () => {
    const station = minimalStation();
    setAt(station, "spec.maxConcurrentRuns", -1);
    setAt(station, "spec.deadlineMinutes", 0);
    expect(formatIssues(issuesOf(validateStation(station)))).toBe(
      "spec.deadlineMinutes must be at least 1, got 0.\nspec.maxConcurrentRuns must be at least 0, got -1.",
    );
  });
});

describe("validateResource", () => {
  it.each([
    ["Agent", minimalAgent()],
    ["Station", minimalStation()],
    ["AgentDefinition", minimalDefinition()],
  ])("dispatches a valid %s", (_kind, obj) => {
    expect(validateResource(obj).ok).toBe(true);
  });

  it("validates by the object's own kind", () => {
    const station = minimalStation();
    setAt(station, "spec.maxConcurrentRuns", -2);
    expect(issuesOf(validateResource(station)).map((i) => i.path)).toEqual(["spec.maxConcurrentRuns"]);
  });

  it("rejects an unknown kind by name", () => {
    expect(issuesOf(validateResource({ kind: "Pod" }))).toEqual([
      {
        path: "kind",
        pointer: "/kind",
        keyword: "kind",
        message: 'kind must be one of Agent, Station, AgentDefinition; got "Pod".',
      },
    ]);
  });
});

describe("parseAgent", () => {
  it("returns the typed object when valid", () => {
    const agent = fullAgent();
    expect(parseAgent(agent)).toBe(agent);
  });

  it("throws ResourceValidationError carrying every issue", () => {
    const agent = minimalAgent();
    setAt(agent, "spec.stationRef", undefined);
    setAt(agent, "spec.targetRepo", "nope");
    let caught: unknown;
    try {
      parseAgent(agent);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ResourceValidationError);
    const error = caught as ResourceValidationError;
    expect(error.issues.map((i) => i.path).sort()).toEqual(["spec.stationRef", "spec.targetRepo"]);
    expect(error.message).toContain("invalid Agent:\nspec.stationRef is required.");
  });
});

describe("firstSchemaIssue", () => {
  it("is undefined for valid objects of each kind", () => {
    expect(firstSchemaIssue("Agent", fullAgent())).toBeUndefined();
    expect(firstSchemaIssue("Station", fullStation())).toBeUndefined();
    expect(firstSchemaIssue("AgentDefinition", fullDefinition())).toBeUndefined();
  });

  it("names one problem where the all-errors validator names one per bad entry", () => {
    const agent = minimalAgent() as unknown as Obj;
    setAt(agent, "spec.parameters", Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`p${i}`, i])));
    expect(issuesOf(validateAgent(agent))).toHaveLength(1000);
    expect(firstSchemaIssue("Agent", agent)).toEqual({
      path: "spec.parameters.p0",
      pointer: "/spec/parameters/p0",
      keyword: "type",
      message: "spec.parameters.p0 must be a string, got an integer.",
    });
  });
});
