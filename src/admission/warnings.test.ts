import { describe, expect, it } from "vitest";
import {
  fullDefinition,
  minimalAgent,
  minimalDefinition,
  minimalStation,
} from "../../test/support/validation-fixtures.js";
import type { Agent, AgentDefinition, Station } from "../core/types.js";
import { found, missing, unknown } from "./facts.js";
import { agentSecretKeys, definitionSecretKeys } from "./secret-refs.js";
import { agentWarnings, definitionWarnings, schemaWarnings, stationWarnings } from "./warnings.js";

const NS = "ai-agents";
const allModes = { batchEnabled: true, realtimeEnabled: true };
const noModes = { batchEnabled: false, realtimeEnabled: false };

function definition(spec: Partial<AgentDefinition["spec"]> = {}): AgentDefinition {
  const d = minimalDefinition();
  return { ...d, spec: { ...d.spec, ...spec } };
}

describe("secret key references", () => {
  it("lists every agent-secrets key a definition's runs read, with the field naming it", () => {
    expect(definitionSecretKeys(fullDefinition())).toEqual([
      { path: "spec.resources.secrets[0].ref", key: "anthropic-key" },
      { path: "spec.resources.mcp_servers[1].headers_secret", key: "lore-mcp-auth" },
      { path: "spec.resources.repos[0].token_secret", key: "gh-token" },
      { path: "spec.resources.conversation.headers_secret", key: "conv-auth" },
      { path: "spec.output.sinks[1].headers_secret", key: "hook-auth" },
      { path: "spec.delivery.pullRequest.tokenSecret", key: "gh-token" },
    ]);
  });

  it("lists an Agent's files headers_secret keys", () => {
    const a = minimalAgent();
    a.spec.files = [
      { path: "a", url: "https://x.example/a" },
      { path: "b", url: "https://x.example/b", headers_secret: "files-auth" },
    ];
    expect(agentSecretKeys(a)).toEqual([{ path: "spec.files[1].headers_secret", key: "files-auth" }]);
  });
});

describe("agentWarnings", () => {
  const station = minimalStation();
  const agent = (): Agent => minimalAgent();

  it.each([
    [
      "Station missing",
      { station: missing },
      allModes,
      [
        'Station writer-station does not exist in namespace ai-agents: the controller will fail this Agent with "Station writer-station not found"',
      ],
    ],
    [
      "AgentDefinition missing",
      { station: found(station), definition: missing },
      allModes,
      [
        'AgentDefinition writer (agentDefRef of Station writer-station) does not exist in namespace ai-agents: the controller will fail this Agent with "AgentDefinition writer not found"',
      ],
    ],
    [
      "batch disabled",
      { station: found(station), definition: found(definition({ execution: "batch" })) },
      noModes,
      [
        'the controller will fail this Agent with "batch execution is disabled on this controller" (AgentDefinition writer)',
      ],
    ],
    [
      "realtime disabled",
      { station: found(station), definition: found(definition({ execution: "realtime" })) },
      noModes,
      [
        'the controller will fail this Agent with "realtime execution is disabled on this controller" (AgentDefinition writer)',
      ],
    ],
    ["interactive runs anywhere", { station: found(station), definition: found(definition()) }, noModes, []],
    [
      "batch enabled",
      {
        station: found(station),
        definition: found(
          definition({
            execution: "batch",
            resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "k" }] },
          }),
        ),
        secretKeys: found(new Set(["k"])),
      },
      allModes,
      [],
    ],
    [
      "Station lookup failed",
      { station: unknown("403 Forbidden: no") },
      allModes,
      ["could not check Station writer-station: 403 Forbidden: no"],
    ],
  ] as const)("%s", (_name, facts, modes, expected) => {
    expect(agentWarnings(agent(), NS, modes, facts)).toEqual(expected);
  });

  it("warns about spec.branch only where the installation narrows it, with the controller's words", () => {
    const a = minimalAgent();
    a.spec.branch = "feat/x";
    const delivering = definition({
      delivery: { pullRequest: { tokenSecret: "k" } },
      resources: { repos: [{ name: "app", url: "acme/app" }] },
    });
    const facts = {
      station: found(station),
      definition: found(delivering),
      secretKeys: found(new Set(["k"])),
    };
    expect(agentWarnings(a, NS, allModes, facts)).toEqual([]);
    expect(agentWarnings(a, NS, { ...allModes, deliveryBranchPrefix: "team/" }, facts)).toEqual([
      `the controller will fail this Agent with "spec.branch "feat/x" is outside the branch prefix "team/" that the installation's DELIVERY_BRANCH_PREFIX allows" (AgentDefinition writer)`,
    ]);
  });

  it("names each missing agent-secrets key, the Agent's and its definition's", () => {
    const a = agent();
    a.spec.files = [{ path: "a", url: "https://x.example/a", headers_secret: "files-auth" }];
    const def = definition({ resources: { repos: [{ name: "r", url: "o/r", token_secret: "gh-token" }] } });
    expect(
      agentWarnings(a, NS, allModes, {
        station: found(station),
        definition: found(def),
        secretKeys: found(new Set(["gh-token"])),
      }),
    ).toEqual([
      'spec.files[0].headers_secret: key "files-auth" is not in Secret agent-secrets in namespace ai-agents',
    ]);
    expect(
      agentWarnings(a, NS, allModes, {
        station: found(station),
        definition: found(def),
        secretKeys: found(new Set(["files-auth"])),
      }),
    ).toEqual([
      'AgentDefinition writer spec.resources.repos[0].token_secret: key "gh-token" is not in Secret agent-secrets in namespace ai-agents',
    ]);
  });

  it("says once that agent-secrets itself is missing, listing the keys", () => {
    const a = agent();
    a.spec.files = [
      { path: "a", url: "https://x.example/a", headers_secret: "files-auth" },
      { path: "b", url: "https://x.example/b", headers_secret: "files-auth" },
    ];
    expect(agentWarnings(a, NS, allModes, { station: missing, secretKeys: missing })).toContain(
      "Secret agent-secrets does not exist in namespace ai-agents; runs need its keys: files-auth",
    );
  });

  it("reports a Secret it could not read instead of pretending the keys are there", () => {
    const a = agent();
    a.spec.files = [{ path: "a", url: "https://x.example/a", headers_secret: "files-auth" }];
    expect(
      agentWarnings(a, NS, allModes, {
        station: missing,
        secretKeys: unknown("403 Forbidden: secrets is forbidden"),
      }),
    ).toContain(
      "could not read Secret agent-secrets to check the keys this object references: 403 Forbidden: secrets is forbidden",
    );
  });
});

describe("stationWarnings", () => {
  const st: Station = minimalStation();
  it.each([
    [
      missing,
      allModes,
      [
        'AgentDefinition writer does not exist in namespace ai-agents: Agents of this Station will fail with "AgentDefinition writer not found" until it is created',
      ],
    ],
    [
      found(definition({ execution: "batch" })),
      noModes,
      [
        'AgentDefinition writer runs as batch: Agents of this Station will fail with "batch execution is disabled on this controller"',
      ],
    ],
    [found(definition({ execution: "batch" })), allModes, []],
    [found(definition()), noModes, []],
  ] as const)("%j with %j", (def, modes, expected) => {
    expect(stationWarnings(st, NS, modes, { definition: def })).toEqual(expected);
  });
});

describe("stationWarnings: the Station template policy (docs/security.md#the-station-template-policy)", () => {
  const withTemplate = (spec: Record<string, unknown>): Station =>
    ({
      ...minimalStation(),
      spec: { ...minimalStation().spec, template: { spec: { containers: [{ name: "agent" }], ...spec } } },
    }) as Station;
  const allModes = { batchEnabled: true, realtimeEnabled: true };

  it("warns with the controller's own words about a template it will refuse", () => {
    expect(stationWarnings(withTemplate({ shareProcessNamespace: true }), NS, allModes, {})).toEqual([
      `Agents of this Station will fail with "invalid Station template: spec.template.spec.shareProcessNamespace is not allowed: the agent could read the other containers' environment (the courier's token)"`,
    ]);
  });

  it("warns that a Station container without runAsUser starts only from a non-root image", () => {
    const sidecar = withTemplate({
      containers: [
        { name: "agent" },
        { name: "proxy", image: "envoy" },
        { name: "ok", securityContext: { runAsUser: 1000 } },
      ],
    });
    expect(stationWarnings(sidecar, NS, allModes, {})).toEqual([
      "container proxy sets no securityContext.runAsUser: the controller runs Station containers as non-root, so it starts only if its image's user is a numeric non-root uid (else the pod fails with CreateContainerConfigError)",
    ]);
  });

  it.each([
    [
      "a secretKeyRef to another Secret (A1)",
      {
        containers: [
          {
            name: "agent",
            env: [{ name: "K", valueFrom: { secretKeyRef: { name: "agent-realtime", key: "api-token" } } }],
          },
        ],
      },
      'spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef: Secret "agent-realtime" is not allowed: Station containers read only Secret agent-secrets unless the installation lists another in RUN_POD_SECRETS',
    ],
    [
      "a hostPath behind a null first key (A2)",
      {
        containers: [{ name: "agent" }],
        volumes: [{ name: "host", emptyDir: null, hostPath: { path: "/" } }],
      },
      "hostPath volume host is not allowed",
    ],
    [
      "a field outside the allowlist (L1)",
      { containers: [{ name: "agent" }], priorityClassName: "system-node-critical" },
      "spec.template.spec.priorityClassName is not allowed: it is outside the Station template allowlist (docs/security.md#the-station-template-policy); an installation allows it with RUN_POD_FIELDS=priorityClassName",
    ],
  ])("warns about %s with the controller's words", (_, spec, problem) => {
    expect(stationWarnings(withTemplate(spec), NS, allModes, {})).toEqual([
      `Agents of this Station will fail with "invalid Station template: ${problem}"`,
    ]);
  });

  it("follows the installation's Secrets and fields", () => {
    const template = withTemplate({
      containers: [{ name: "agent", envFrom: [{ secretRef: { name: "proxy-auth" } }] }],
      priorityClassName: "batch-low",
    });
    expect(stationWarnings(template, NS, allModes, {})).toHaveLength(1);
    const widened = {
      ...allModes,
      runPodPolicy: {
        serviceAccounts: [],
        volumeKinds: [],
        secrets: ["proxy-auth"],
        fields: ["priorityClassName"],
      },
    };
    expect(stationWarnings(template, NS, widened, {})).toEqual([]);
  });

  it("says nothing of the template when the Station's definition never builds a Job from it (batch without fallback)", () => {
    const template = withTemplate({ containers: [{ name: "agent" }], nodeName: "n" });
    const batch = definition({ execution: "batch", batch: { onTimeout: "fail" } });
    const fallback = definition({ execution: "batch", batch: { onTimeout: "fallback" } });
    expect(stationWarnings(template, NS, allModes, { definition: found(batch) })).toEqual([]);
    expect(stationWarnings(template, NS, allModes, { definition: found(fallback) })).toHaveLength(1);
    expect(stationWarnings(template, NS, allModes, { definition: found(definition()) })).toHaveLength(1);
  });

  it("follows the installation's widening: a ServiceAccount it lists is no warning", () => {
    const template = withTemplate({ serviceAccountName: "runner" });
    expect(stationWarnings(template, NS, allModes, {})).toHaveLength(1);
    const widened = { ...allModes, runPodPolicy: { serviceAccounts: ["runner"], volumeKinds: [] } };
    expect(stationWarnings(template, NS, widened, {})).toEqual([]);
  });
});

describe("definitionWarnings", () => {
  it.each([
    [
      definition({ execution: "realtime" }),
      noModes,
      [
        'spec.execution: Agents using this AgentDefinition will fail with "realtime execution is disabled on this controller"',
      ],
    ],
    [definition({ execution: "realtime" }), allModes, []],
    [
      definition({ execution: "batch" }),
      { batchEnabled: false, realtimeEnabled: true },
      [
        'spec.execution: Agents using this AgentDefinition will fail with "batch execution is disabled on this controller"',
      ],
    ],
    [definition(), noModes, []],
  ] as const)("%#", (def, modes, expected) => {
    expect(definitionWarnings(def, NS, modes, {})).toEqual(expected);
  });

  it("names the missing sink and MCP header keys", () => {
    const def = definition({
      resources: {
        mcp_servers: [{ name: "m", transport: "http", url: "https://m.example", headers_secret: "mcp-auth" }],
      },
      output: { sinks: [{ type: "http", url: "https://h.example", headers_secret: "hook-auth" }] },
    });
    expect(definitionWarnings(def, NS, allModes, { secretKeys: found(new Set(["hook-auth"])) })).toEqual([
      'spec.resources.mcp_servers[0].headers_secret: key "mcp-auth" is not in Secret agent-secrets in namespace ai-agents',
    ]);
  });
});

describe("schemaWarnings", () => {
  it("turns ajv issues into warnings naming the field", () => {
    const bad = { ...minimalAgent(), spec: { stationRef: "Not_A_Name" } };
    const w = schemaWarnings("Agent", bad);
    expect(w).toHaveLength(1);
    expect(w[0]).toMatch(/^schema: spec\.stationRef /);
  });
  it("has nothing to say about a valid object", () => {
    expect(schemaWarnings("AgentDefinition", fullDefinition())).toEqual([]);
  });
});
