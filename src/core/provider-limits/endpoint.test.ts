/** Which provider endpoint and key a run uses (endpoint.ts), one case per row. */
import { describe, expect, it } from "vitest";
import { agent, definition, input, station } from "../../../test/support/core-builders.js";
import { describeEndpoint, providerOfModel } from "./endpoint.js";
import { providerEndpointOf } from "./run-endpoint.js";

// The installation lets Station env read the `gw` Secret (RUN_POD_SECRETS; the Station template policy).
const settings = {
  ...input().settings,
  runPodPolicy: { serviceAccounts: [], volumeKinds: [], secrets: ["gw"] },
};
const withEnv = (env: unknown[]) =>
  station()
    .spec({ template: { spec: { containers: [{ name: "agent", image: "x", env }] } } })
    .build();
const secrets = (entries: { name: string; ref: string }[]) => ({ resources: { secrets: entries } });

describe("providerEndpointOf", () => {
  it.each<{
    name: string;
    model?: string;
    def?: Record<string, unknown>;
    env?: unknown[] | "no agent container";
    baseUrls?: Record<string, string>;
    id: string | undefined;
  }>([
    {
      name: "claude with the recipe's key and no base URL: Anthropic's own endpoint",
      model: "claude-sonnet-4-6",
      def: secrets([{ name: "ANTHROPIC_API_KEY", ref: "team-a" }]),
      id: "anthropic https://api.anthropic.com secret agent-secrets/team-a",
    },
    {
      name: "another key is another limit",
      model: "claude-sonnet-4-6",
      def: secrets([{ name: "ANTHROPIC_API_KEY", ref: "team-b" }]),
      id: "anthropic https://api.anthropic.com secret agent-secrets/team-b",
    },
    {
      name: "the installation's base URL (AGENT_ANTHROPIC_BASE_URL) is the endpoint",
      model: "claude-sonnet-4-6",
      def: secrets([{ name: "ANTHROPIC_API_KEY", ref: "team-a" }]),
      baseUrls: { anthropic: "http://127.0.0.1:9000" },
      id: "anthropic http://127.0.0.1:9000 secret agent-secrets/team-a",
    },
    {
      name: "the Station's env wins over the installation's base URL; its Secret reference is the key",
      model: "claude-sonnet-4-6",
      env: [
        { name: "ANTHROPIC_BASE_URL", value: "https://gateway.example/" },
        { name: "ANTHROPIC_API_KEY", valueFrom: { secretKeyRef: { name: "gw", key: "token" } } },
      ],
      baseUrls: { anthropic: "http://127.0.0.1:9000" },
      id: "anthropic https://gateway.example secret gw/token",
    },
    {
      name: "the recipe's env wins over the Station's (the Job builder's order)",
      model: "claude-sonnet-4-6",
      def: { resources: { env: [{ name: "ANTHROPIC_BASE_URL", value: "https://recipe.example" }] } },
      env: [{ name: "ANTHROPIC_BASE_URL", value: "https://station.example" }],
      id: "anthropic https://recipe.example no key",
    },
    {
      name: "a literal key is named by a digest, never shown",
      model: "claude-sonnet-4-6",
      env: [{ name: "ANTHROPIC_API_KEY", value: "sk-ant-secret" }],
      id: "anthropic https://api.anthropic.com value sha256:3fee3f0a4fb7",
    },
    {
      name: "codex: OpenAI, CODEX_API_KEY before OPENAI_API_KEY",
      model: "gpt-5-codex",
      def: secrets([
        { name: "OPENAI_API_KEY", ref: "o" },
        { name: "CODEX_API_KEY", ref: "c" },
      ]),
      id: "openai https://api.openai.com/v1 secret agent-secrets/c",
    },
    {
      name: "gemini: GOOGLE_GEMINI_BASE_URL",
      model: "gemini-2.5-pro",
      def: secrets([{ name: "GEMINI_API_KEY", ref: "g" }]),
      env: [{ name: "GOOGLE_GEMINI_BASE_URL", value: "http://127.0.0.1:9100" }],
      id: "gemini http://127.0.0.1:9100 secret agent-secrets/g",
    },
    {
      name: "opencode names its provider in the model id",
      model: "opencode/openai/gpt-5",
      def: secrets([{ name: "OPENAI_API_KEY", ref: "o" }]),
      id: "openai https://api.openai.com/v1 secret agent-secrets/o",
    },
    {
      name: "a batch run: the batch API with the key its submit reads",
      model: "claude-sonnet-4-6",
      def: { execution: "batch", ...secrets([{ name: "ANTHROPIC_API_KEY", ref: "team-a" }]) },
      id: "anthropic batch API secret agent-secrets/team-a",
    },
    {
      name: "exec: no provider the controller can tell; the Station's own",
      model: "exec",
      def: { tool_config: { command: ["true"] } },
      id: "unknown Station st no key",
    },
    {
      name: "a run that cannot be built has none (it fails for that)",
      model: "claude-sonnet-4-6",
      env: "no agent container",
      id: undefined,
    },
  ])("$name", ({ model, def, env, baseUrls, id }) => {
    const e = providerEndpointOf(
      agent().spec({ model }).build(),
      env === "no agent container"
        ? station()
            .spec({ template: { spec: { containers: [{ name: "main", image: "x" }] } } })
            .build()
        : env
          ? withEnv(env)
          : station().build(),
      definition()
        .spec(def ?? {})
        .build(),
      { ...settings, ...(baseUrls ? { agentBaseUrls: baseUrls } : {}) },
    );
    expect(e?.id).toBe(id);
    if (e) expect(e.id).not.toContain("sk-ant-secret");
  });

  it.each([
    [
      "claude-sonnet-4-6",
      "ANTHROPIC_API_KEY",
      "anthropic http://agent-gateway:8080 secret agent-secrets/team-a",
    ],
    ["gpt-5-codex", "OPENAI_API_KEY", "openai http://agent-gateway:8080 secret agent-secrets/team-a"],
    ["gemini-2.5-pro", "GEMINI_API_KEY", "gemini http://agent-gateway:8080 secret agent-secrets/team-a"],
    // The entry the gateway sends for OpenAI when OPENAI_API_KEY is absent (docs/gateway.md#provider-keys).
    ["gpt-5-codex", "CODEX_API_KEY", "openai http://agent-gateway:8080 secret agent-secrets/team-a"],
    [
      "gemini-2.5-pro",
      "GOOGLE_GENERATIVE_AI_API_KEY",
      "gemini http://agent-gateway:8080 secret agent-secrets/team-a",
    ],
    // No key for its vendor: the Job builder refuses the run, so it spends no limit.
    ["claude-sonnet-4-6", "OPENAI_API_KEY", undefined],
  ])(
    "with the model gateway on, a %s run with the recipe's %s spends the limits of that key at the gateway, not of its per-run credential",
    (model, entry, id) => {
      const gatewayOn = {
        ...settings,
        gateway: { url: "http://agent-gateway:8080", credentialKey: Buffer.from("g".repeat(32)) },
      };
      const ids = ["run-1", "run-2"].map(
        (name) =>
          providerEndpointOf(
            agent(name).spec({ model }).build(),
            station().build(),
            definition()
              .spec(secrets([{ name: entry, ref: "team-a" }]))
              .build(),
            gatewayOn,
          )?.id,
      );
      expect(ids).toEqual([id, id]);
    },
  );

  it("describes an endpoint for a message", () => {
    const e = providerEndpointOf(
      agent().spec({ model: "claude-sonnet-4-6" }).build(),
      station().build(),
      definition()
        .spec(secrets([{ name: "ANTHROPIC_API_KEY", ref: "k" }]))
        .build(),
      settings,
    );
    expect(e && describeEndpoint(e)).toBe(
      "anthropic at https://api.anthropic.com (key secret agent-secrets/k)",
    );
  });

  it.each([
    ["claude-opus-5-5", "anthropic"],
    ["", "anthropic"],
    ["gpt-5", "openai"],
    ["gemini-2.5-flash", "gemini"],
    ["opencode", "anthropic"],
    ["opencode/google/gemini-2.5-pro", "gemini"],
    ["exec", undefined],
  ])("the provider of model %j is %s", (model, provider) => {
    expect(providerOfModel(model)).toBe(provider);
  });
});
