import type { V1Container, V1EnvVar, V1Job } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { agent, definition, NS, station } from "../../../test/support/core-builders.js";
import { container, envOf, podSpec, settings } from "../../../test/support/job-build.js";
import type { ControllerSettings } from "../input.js";
import type { AgentDefinitionSpec, AgentSpec, StationSpec } from "../types.js";
import { GATEWAY_VENDORS, type GatewayVendor, verifyRunCredential } from "./gateway-credential.js";
import { CREDENTIAL_VARIABLES, gatewayVendorOf, PROVIDER_KEY_VARIABLES } from "./gateway-env.js";
import { buildJob } from "./job.js";

const KEY = Buffer.from("g".repeat(32));
const OTHER_KEY = Buffer.from("x".repeat(32));
const GATEWAY = "http://agent-gateway.ai-agents.svc:8080";
const on: ControllerSettings = { ...settings, gateway: { url: GATEWAY, credentialKey: KEY } };

/** A recipe with every provider key and every other kind of secret a pod may get. */
const RECIPE: Partial<AgentDefinitionSpec> = {
  resources: {
    secrets: [
      { name: "ANTHROPIC_API_KEY", ref: "anthropic-key" },
      { name: "OPENAI_API_KEY", ref: "openai-key" },
      { name: "GEMINI_API_KEY", ref: "gemini-key" },
      { name: "JIRA_TOKEN", ref: "jira-token" },
    ],
    repos: [{ name: "r", url: "https://github.com/o/r", token_secret: "GH_PAT" }],
    mcp_servers: [
      { name: "docs", transport: "http", url: "https://mcp.example/sse", headers_secret: "mcp-auth" },
    ],
  },
  output: { sinks: [{ type: "http", url: "https://sink.example/hook", headers_secret: "sink-auth" }] },
};

function buildWith(
  s: ControllerSettings,
  opts: {
    def?: Partial<AgentDefinitionSpec>;
    agentSpec?: Partial<AgentSpec>;
    stationSpec?: Partial<StationSpec>;
  } = {},
) {
  return buildJob(
    agent("run-1")
      .spec(opts.agentSpec ?? {})
      .build(),
    station()
      .spec(opts.stationSpec ?? {})
      .build(),
    definition()
      .spec({ ...RECIPE, ...opts.def })
      .build(),
    s,
    "interactive",
  );
}

function built(s: ControllerSettings, opts: Parameters<typeof buildWith>[1] = {}): V1Job {
  const r = buildWith(s, opts);
  if (!r.ok) throw new Error(r.reason);
  return r.job;
}

const allContainers = (job: V1Job): V1Container[] => [
  ...(podSpec(job).initContainers ?? []),
  ...podSpec(job).containers,
];

/** Every env entry of the pod that comes from a Secret, as `container/NAME=secret/key`. */
const secretEntries = (job: V1Job) =>
  allContainers(job).flatMap((c) =>
    (c.env ?? []).flatMap((e) => {
      const ref = e.valueFrom?.secretKeyRef;
      return ref ? [`${c.name}/${e.name}=${ref.name}/${ref.key}`] : [];
    }),
  );

describe("the model gateway off (docs/run-pod.md#injected-environment)", () => {
  it("the pod gets the recipe's provider keys and no gateway variable, as the seeds describe", () => {
    const job = built(settings, { def: { model: "claude-sonnet-4-6" } });
    expect(secretEntries(job)).toEqual(
      expect.arrayContaining([
        "agent/ANTHROPIC_API_KEY=agent-secrets/anthropic-key",
        "init/ANTHROPIC_API_KEY=agent-secrets/anthropic-key",
        "agent/OPENAI_API_KEY=agent-secrets/openai-key",
      ]),
    );
    expect(envOf(container(job, "agent")).ANTHROPIC_BASE_URL).toBeUndefined();
    expect(job.metadata?.annotations?.["agents.re-cinq.com/model-gateway"]).toBeUndefined();
  });
});

describe("the model gateway on: each CLI is pointed at it with its run's credential (docs/gateway.md#run-credentials)", () => {
  const rows: [string, Partial<AgentDefinitionSpec>, Partial<AgentSpec>, GatewayVendor | undefined][] = [
    ["claude", { model: "claude-sonnet-4-6" }, {}, "anthropic"],
    ["claude, the CLI's default model", {}, {}, "anthropic"],
    ["codex", { model: "gpt-5-codex" }, {}, "openai"],
    ["gemini", { model: "gemini-2.5-pro" }, {}, "gemini"],
    ["opencode with an Anthropic model", { model: "opencode/anthropic/claude-sonnet-4-6" }, {}, "anthropic"],
    ["opencode with an OpenAI model", { model: "opencode/openai/gpt-5" }, {}, "openai"],
    ["opencode with a Google model", { model: "opencode/google/gemini-2.5-pro" }, {}, "gemini"],
    ["bare opencode (it picks the Anthropic key it finds)", { model: "opencode" }, {}, "anthropic"],
    ["opencode naming a provider only", { model: "opencode/openai" }, {}, "openai"],
    [
      "opencode with a provider the gateway does not serve",
      { model: "opencode/openrouter/x" },
      {},
      undefined,
    ],
    [
      "spec.model overrides the definition's",
      { model: "claude-sonnet-4-6" },
      { model: "gemini-2.5-pro" },
      "gemini",
    ],
  ];
  it.each(rows)("%s", (_what, def, agentSpec, vendor) => {
    const job = built(on, { def, agentSpec });
    const env = envOf(container(job, "agent"));
    expect(env.ANTHROPIC_BASE_URL).toBe(GATEWAY);
    expect(env.OPENAI_BASE_URL).toBe(`${GATEWAY}/v1`);
    expect(env.GOOGLE_GEMINI_BASE_URL).toBe(GATEWAY);
    expect(env.GEMINI_BASE_URL).toBe(GATEWAY);
    expect(env.GOOGLE_GENAI_USE_VERTEXAI).toBe("false");
    const carried = vendor ? CREDENTIAL_VARIABLES[vendor] : [];
    for (const name of PROVIDER_KEY_VARIABLES) {
      if (!carried.includes(name)) expect(env[name], name).toBeUndefined();
    }
    for (const name of carried) {
      const credential = env[name];
      expect(typeof credential, name).toBe("string");
      expect(verifyRunCredential(KEY, credential as string)).toEqual({
        ok: true,
        claims: { namespace: NS, name: "run-1", uid: "uid-run-1", vendor },
      });
      expect(verifyRunCredential(OTHER_KEY, credential as string).ok).toBe(false);
    }
    expect(gatewayVendorOf(agentSpec.model ?? def.model ?? "")).toBe(vendor);
    // The Job says whose meter prices the run (docs/gateway.md#metering): the credential's vendor.
    expect(job.metadata?.annotations?.["agents.re-cinq.com/model-gateway"]).toBe(vendor);
    // The credential allows its vendor only: it names no other.
    for (const other of GATEWAY_VENDORS.filter((v) => v !== vendor)) {
      for (const name of carried) {
        const check = verifyRunCredential(KEY, env[name] as string);
        expect(check.ok && check.claims.vendor).not.toBe(other);
      }
    }
  });

  it("an exec run gets neither base URLs nor a credential", () => {
    const job = built(on, { def: { model: "exec", tool_config: { command: ["make"] } } });
    const env = envOf(container(job, "agent"));
    for (const name of [
      "ANTHROPIC_BASE_URL",
      "OPENAI_BASE_URL",
      "GOOGLE_GEMINI_BASE_URL",
      ...PROVIDER_KEY_VARIABLES,
    ]) {
      expect(env[name], name).toBeUndefined();
    }
  });

  it.each(["claude-sonnet-4-6", "gpt-5-codex", "gemini-2.5-pro", "opencode/openai/gpt-5", "exec"])(
    "no container of a %s run gets a provider key; the other secrets are unchanged",
    (model) => {
      const job = built(on, {
        def: {
          model,
          tool_config: { command: ["make"] },
          delivery: { pullRequest: { tokenSecret: "deliver-token" } },
        },
      });
      const entries = secretEntries(job);
      const keys = ["anthropic-key", "openai-key", "gemini-key"];
      expect(entries.filter((e) => keys.some((k) => e.endsWith(`/${k}`)))).toEqual([]);
      expect(entries.filter((e) => PROVIDER_KEY_VARIABLES.has(e.split("/")[1]?.split("=")[0] ?? ""))).toEqual(
        [],
      );
      expect(entries).toEqual(
        expect.arrayContaining([
          "init/JIRA_TOKEN=agent-secrets/jira-token",
          "agent/JIRA_TOKEN=agent-secrets/jira-token",
          "init/GH_PAT=agent-secrets/GH_PAT",
          "init/sink-auth=agent-secrets/sink-auth",
          "agent/MCP_AUTH=agent-secrets/mcp-auth",
          "courier/DELIVERY_TOKEN=agent-secrets/deliver-token",
        ]),
      );
      // The same build with the gateway off differs only in the gateway's names and the keys.
      const off = secretEntries(
        built(settings, {
          def: {
            model,
            tool_config: { command: ["make"] },
            delivery: { pullRequest: { tokenSecret: "deliver-token" } },
          },
        }),
      );
      expect(off.filter((e) => !keys.some((k) => e.endsWith(`/${k}`)))).toEqual(entries);
    },
  );
});

describe("the model gateway on: nothing else can point a CLI past it (docs/gateway.md#run-credentials)", () => {
  const evil = (name: string) => ({ name, value: "http://evil.example" });
  const names = ["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL"];
  const stationWith = (env: V1EnvVar[]) => ({
    template: { spec: { containers: [{ name: "agent", image: "node:22", env }] } },
  });
  it.each([
    ["the recipe's resources.env", { def: { resources: { ...RECIPE.resources, env: names.map(evil) } } }],
    ["the Station's agent env", { stationSpec: stationWith(names.map(evil)) }],
    [
      "the Station's env with a literal key and Vertex AI",
      {
        stationSpec: stationWith([
          ...names.map(evil),
          { name: "ANTHROPIC_API_KEY", value: "sk-ant-station" },
          { name: "GOOGLE_GENAI_USE_VERTEXAI", value: "true" },
        ]),
      },
    ],
  ])("%s", (_what, opts) => {
    for (const s of [
      on,
      { ...on, agentBaseUrls: { anthropic: "http://installation", openai: "http://i/v1" } },
    ]) {
      const raw = container(built(s, opts), "agent").env ?? [];
      const env = envOf(container(built(s, opts), "agent"));
      expect(env.ANTHROPIC_BASE_URL).toBe(GATEWAY);
      expect(env.OPENAI_BASE_URL).toBe(`${GATEWAY}/v1`);
      expect(env.GOOGLE_GEMINI_BASE_URL).toBe(GATEWAY);
      expect(env.GEMINI_BASE_URL).toBe(GATEWAY);
      expect(env.GOOGLE_GENAI_USE_VERTEXAI).toBe("false");
      expect(verifyRunCredential(KEY, env.ANTHROPIC_API_KEY as string).ok).toBe(true);
      // One entry per name: the container's env is never ambiguous.
      for (const name of [...names, "ANTHROPIC_API_KEY"]) {
        expect(
          raw.filter((e) => e.name === name),
          name,
        ).toHaveLength(1);
      }
    }
  });
});

describe("the model gateway on: a pod that would hold a provider key is refused (docs/gateway.md#run-credentials)", () => {
  const withSidecar = (c: Partial<V1Container>) => ({
    template: {
      spec: {
        containers: [
          { name: "agent", image: "node:22" },
          { name: "sidecar", image: "proxy", ...c },
        ],
      },
    },
  });
  const key = (name: string, secret: string, k: string): V1EnvVar => ({
    name,
    valueFrom: { secretKeyRef: { name: secret, key: k } },
  });
  const permissive: ControllerSettings = {
    ...on,
    runPodPolicy: { serviceAccounts: [], volumeKinds: ["secret", "projected"], secrets: ["vendor-keys"] },
  };
  const refused = (where: string) =>
    `provider key in the run pod: ${where}; with the model gateway on, no run pod may hold a provider key (the gateway adds it; docs/gateway.md#run-credentials)`;
  it.each([
    [
      "a sidecar's provider-key variable from another Secret",
      { stationSpec: withSidecar({ env: [key("OPENAI_API_KEY", "vendor-keys", "openai")] }) },
      'container "sidecar" variable OPENAI_API_KEY (Secret vendor-keys, key openai)',
    ],
    [
      "a sidecar's variable of another name from the key the recipe names",
      { stationSpec: withSidecar({ env: [key("UPSTREAM", "agent-secrets", "anthropic-key")] }) },
      'container "sidecar" variable UPSTREAM (Secret agent-secrets, key anthropic-key)',
    ],
    [
      "a Station init container's envFrom of agent-secrets",
      {
        stationSpec: {
          template: {
            spec: {
              containers: [{ name: "agent", image: "node:22" }],
              initContainers: [
                { name: "prep", image: "busybox", envFrom: [{ secretRef: { name: "agent-secrets" } }] },
              ],
            },
          },
        },
      },
      'container "prep" envFrom Secret agent-secrets (every key, the provider keys among them)',
    ],
    [
      "the agent container's envFrom of agent-secrets",
      {
        stationSpec: {
          template: {
            spec: {
              containers: [
                { name: "agent", image: "node:22", envFrom: [{ secretRef: { name: "agent-secrets" } }] },
              ],
            },
          },
        },
      },
      'container "agent" envFrom Secret agent-secrets (every key, the provider keys among them)',
    ],
    [
      "agent-secrets mounted as a volume",
      {
        stationSpec: {
          template: {
            spec: {
              containers: [{ name: "agent", image: "node:22" }],
              volumes: [{ name: "keys", secret: { secretName: "agent-secrets" } }],
            },
          },
        },
      },
      'volume "keys" (Secret agent-secrets, every key)',
    ],
    [
      "the recipe's own entry of another name for a provider key",
      {
        def: {
          resources: {
            secrets: [
              { name: "MY_KEY", ref: "anthropic-key" },
              { name: "ANTHROPIC_API_KEY", ref: "anthropic-key" },
            ],
          },
        },
      },
      'container "init" variable MY_KEY (Secret agent-secrets, key anthropic-key)',
    ],
    [
      "a sink's header block stored under a provider key's name",
      { def: { output: { sinks: [{ type: "http", url: "https://s/", headers_secret: "OPENAI_API_KEY" }] } } },
      'container "init" variable OPENAI_API_KEY (Secret agent-secrets, key OPENAI_API_KEY)',
    ],
  ] as const)("%s", (_what, opts, where) => {
    expect(buildWith(permissive, opts as Parameters<typeof buildWith>[1])).toEqual({
      ok: false,
      reason: refused(where),
    });
    // The same pod with the gateway off is built, as today.
    expect(buildWith({ ...permissive, gateway: undefined }, opts as Parameters<typeof buildWith>[1]).ok).toBe(
      true,
    );
  });

  it("a volume with only other keys of agent-secrets, and the Station's own provider variable the credential replaces, are built", () => {
    const r = buildWith(permissive, {
      stationSpec: {
        template: {
          spec: {
            containers: [
              {
                name: "agent",
                image: "node:22",
                env: [key("ANTHROPIC_API_KEY", "agent-secrets", "anthropic-key")],
              },
            ],
            volumes: [
              {
                name: "ca",
                secret: { secretName: "agent-secrets", items: [{ key: "ca.crt", path: "ca.crt" }] },
              },
            ],
          },
        },
      },
    });
    expect(r.ok).toBe(true);
    if (r.ok) expect(secretEntries(r.job).filter((e) => e.includes("anthropic-key"))).toEqual([]);
  });

  it("an Agent whose uid is not a run's gets no credential and is refused", () => {
    const a = agent("run-1").build();
    a.metadata.uid = "";
    expect(buildJob(a, station().build(), definition().spec(RECIPE).build(), on, "interactive")).toEqual({
      ok: false,
      reason: "cannot issue the model gateway's run credential: the Agent's uid is not valid",
    });
  });
});
