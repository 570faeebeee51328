import type { V1Container, V1Job } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { agent, definition, station } from "../../../test/support/core-builders.js";
import { podSpec, settings } from "../../../test/support/job-build.js";
import { verifyEgressCredential } from "../egress/credential.js";
import type { ControllerSettings } from "../input.js";
import type { AgentDefinitionSpec, AgentSpec, StationSpec } from "../types.js";
import { buildJob } from "./job.js";

const KEY = Buffer.from("g".repeat(32));
const GATEWAY = "http://agent-gateway.ai-agents.svc:8080";
const PROXY = "http://agent-gateway.ai-agents.svc:3128";
const gatewayOnly: ControllerSettings = { ...settings, gateway: { url: GATEWAY, credentialKey: KEY } };
const on: ControllerSettings = {
  ...settings,
  gateway: { url: GATEWAY, credentialKey: KEY, egressProxyUrl: PROXY },
};
const NAMES = ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "NO_PROXY", "no_proxy"];

const RECIPE: Partial<AgentDefinitionSpec> = {
  model: "claude-sonnet-4-6",
  resources: {
    secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }],
    repos: [{ name: "r", url: "https://github.com/o/r", token_secret: "GH_PAT" }],
    skills_source: "https://skills.example.net/base",
    mcp_servers: [
      { name: "docs", transport: "http", url: "https://mcp.example/sse" },
      { name: "local", transport: "stdio", command: "mcp-local" },
    ],
    env: [
      { name: "HTTPS_PROXY", value: "http://recipe-proxy:1" },
      { name: "no_proxy", value: "*" },
    ],
  },
  output: { sinks: [{ type: "http", url: "https://sink.example/hook" }] },
  delivery: { pullRequest: { tokenSecret: "delivery-token" } },
};

/** A Station template with its own init container and sidecar, each trying to set a proxy. */
const TEMPLATE = {
  spec: {
    initContainers: [{ name: "station-init", image: "busybox", env: [{ name: "HTTP_PROXY", value: "x" }] }],
    containers: [
      { name: "agent", image: "node:22", env: [{ name: "http_proxy", value: "http://station:1" }] },
      {
        name: "sidecar",
        image: "busybox",
        env: [
          { name: "NO_PROXY", value: "*" },
          { name: "KEEP", value: "k" },
        ],
      },
    ],
  },
};

function buildWith(
  s: ControllerSettings,
  opts: {
    def?: Partial<AgentDefinitionSpec>;
    agentSpec?: Partial<AgentSpec>;
    stationSpec?: Partial<StationSpec>;
    mode?: "interactive" | "realtime";
  } = {},
) {
  return buildJob(
    agent("run-1")
      .spec({ files: [{ path: "a.md", url: "http://files.example.com/a.md" }], ...opts.agentSpec })
      .build(),
    station()
      .spec({
        template: TEMPLATE,
        egress: { allowHosts: ["pypi.org", "*.pythonhosted.org"] },
        ...opts.stationSpec,
      })
      .build(),
    definition()
      .spec({ ...RECIPE, ...opts.def })
      .build(),
    s,
    opts.mode ?? "interactive",
  );
}

function built(s: ControllerSettings, opts: Parameters<typeof buildWith>[1] = {}): V1Job {
  const r = buildWith(s, opts);
  if (!r.ok) throw new Error(r.reason);
  return r.job;
}

const containers = (job: V1Job): V1Container[] => [
  ...(podSpec(job).initContainers ?? []),
  ...podSpec(job).containers,
];
const proxyEntries = (c: V1Container) => (c.env ?? []).filter((e) => NAMES.includes(e.name));

/** The role and destinations the container's HTTPS_PROXY credential carries, checked under KEY. */
function credentialOf(c: V1Container) {
  const url = new URL((c.env ?? []).find((e) => e.name === "HTTPS_PROXY")?.value ?? "");
  expect(`${url.protocol}//${url.host}`).toBe(PROXY);
  const check = verifyEgressCredential(KEY, decodeURIComponent(url.password));
  if (!check.ok) throw new Error(`credential of ${c.name}: ${check.reason}`);
  expect(url.username).toBe(check.claims.role);
  return check.claims;
}

describe("egress proxy variables in the run pod (docs/gateway.md#egress)", () => {
  it.each([
    ["the gateway off", settings],
    ["the gateway on without its egress proxy", gatewayOnly],
  ])("with %s no container gets a proxy variable but the recipe's and the Station's own", (_what, s) => {
    const job = built(s);
    expect(proxyEntries(containers(job).find((c) => c.name === "sidecar") as V1Container)).toEqual([
      { name: "NO_PROXY", value: "*" },
    ]);
    expect(proxyEntries(containers(job).find((c) => c.name === "courier") as V1Container)).toEqual([]);
  });

  it("every container gets the six variables first, once, whatever the recipe or the Station set", () => {
    const job = built(on);
    const all = containers(job);
    expect(all.map((c) => c.name).sort()).toEqual(["agent", "courier", "init", "sidecar", "station-init"]);
    for (const c of all) {
      expect((c.env ?? []).slice(0, 6).map((e) => e.name)).toEqual(NAMES);
      expect(proxyEntries(c)).toHaveLength(6);
      const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
      expect(env.HTTPS_PROXY).toBe(env.http_proxy);
      expect(env.NO_PROXY).toBe("agent-gateway.ai-agents.svc,localhost,127.0.0.1");
      expect(env.no_proxy).toBe(env.NO_PROXY);
    }
    // The Station's other variables stay.
    expect(all.find((c) => c.name === "sidecar")?.env).toContainEqual({ name: "KEEP", value: "k" });
  });

  it("each container carries its own role's credential for this run, signed with the gateway key", () => {
    const job = built(on);
    const roles = Object.fromEntries(containers(job).map((c) => [c.name, credentialOf(c)]));
    expect(roles.init?.role).toBe("init");
    expect(roles.courier?.role).toBe("courier");
    for (const name of ["agent", "sidecar", "station-init"]) expect(roles[name]?.role).toBe("agent");
    expect(roles.agent).toMatchObject({ namespace: "ai-agents", name: "run-1", uid: "uid-run-1" });
  });

  it("the destinations follow the role: files and clones for the init, allowHosts and MCP servers for the agent, the forge for the courier", () => {
    const job = built(on);
    const of = (name: string) =>
      credentialOf(containers(job).find((c) => c.name === name) as V1Container).destinations;
    expect(of("init")).toEqual([
      "files.example.com:80",
      "github.com:443",
      "sink.example:443",
      "skills.example.net:443",
    ]);
    expect(of("agent")).toEqual([
      "*.pythonhosted.org:443",
      "mcp.example:443",
      "pypi.org:443",
      "registry.npmjs.org:443",
      "sink.example:443",
    ]);
    expect(of("courier")).toEqual(["api.github.com:443", "github.com:443", "sink.example:443"]);
  });

  it.each([
    [
      "an interactive run without a pin: the init restores, the agent does not save",
      "interactive",
      undefined,
      false,
    ],
    ["an interactive run with a pin: the supervisor saves there", "interactive", "p-1", true],
    [
      "a realtime session without a pin: it saves after each turn under its session id",
      "realtime",
      undefined,
      true,
    ],
  ] as const)("the conversation store, %s", (_what, mode, pin, agentSaves) => {
    const conversation = { source: "https://store.example/conv", ...(pin ? { pin } : {}) };
    const job = built(on, { def: { resources: { ...RECIPE.resources, conversation } }, mode });
    const of = (name: string) =>
      credentialOf(containers(job).find((c) => c.name === name) as V1Container).destinations;
    expect(of("init")).toContain("store.example:443");
    expect(of("agent").includes("store.example:443")).toBe(agentSaves);
  });

  it("the npm registry the recipe names is the agent's, instead of npm's own", () => {
    const job = built(on, {
      def: {
        resources: {
          ...RECIPE.resources,
          env: [{ name: "npm_config_registry", value: "https://npm.corp.example/" }],
        },
      },
    });
    const agentC = containers(job).find((c) => c.name === "agent") as V1Container;
    expect(credentialOf(agentC).destinations).toContain("npm.corp.example:443");
    expect(credentialOf(agentC).destinations).not.toContain("registry.npmjs.org:443");
  });

  it("an exec run installs no CLI: its agent has no registry", () => {
    const job = built(on, { def: { model: "exec", tool_config: { command: ["sh", "-c", "true"] } } });
    const agentC = containers(job).find((c) => c.name === "agent") as V1Container;
    expect(credentialOf(agentC).destinations).toEqual([
      "*.pythonhosted.org:443",
      "mcp.example:443",
      "pypi.org:443",
      "sink.example:443",
    ]);
  });

  it("an allowHosts entry that is not one fails the build, naming the field", () => {
    const r = buildWith(on, { stationSpec: { egress: { allowHosts: ["pypi.org", "*.0.0.1"] } } });
    expect(r).toEqual({
      ok: false,
      reason:
        'invalid Station egress: spec.egress.allowHosts[1] "*.0.0.1" is not a host or *.suffix with an optional :port',
    });
    // Without the egress proxy the field has no effect and refuses nothing.
    expect(buildWith(gatewayOnly, { stationSpec: { egress: { allowHosts: ["*.0.0.1"] } } }).ok).toBe(true);
  });

  it("a run whose credential would be too long fails with a reason naming spec.egress.allowHosts", () => {
    const long = (i: number) =>
      `${"a".repeat(60)}${String(i).padStart(3, "0")}.${"b".repeat(63)}.${"c".repeat(63)}.com`;
    const allowHosts = Array.from({ length: 64 }, (_, i) => long(i));
    const r = buildWith(on, { stationSpec: { egress: { allowHosts } } });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toMatch(/^egress credential of the agent too long: \d+ characters, at most 8192;/);
      expect(r.reason).toContain("spec.egress.allowHosts");
    }
  });
});
