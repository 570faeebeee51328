import { describe, expect, it } from "vitest";
import {
  OPENCODE_OFFLINE_ENV,
  OPENCODE_PLUGIN_PACKAGE,
  opencodeBaseUrls,
  opencodeConfig,
  opencodeModel,
  opencodeSetup,
} from "./opencode.js";

const input = (env: Record<string, string>) => ({ env, home: "/agent", workspace: "/workspace" });
const DIR = "/agent/.config/opencode";

function fileOf(setup: ReturnType<typeof opencodeSetup>, name: string): string | undefined {
  return setup.files.find((f) => f.path === `${DIR}/${name}`)?.content;
}

describe("opencodeSetup", () => {
  it("writes the global config with the installation's Anthropic endpoint plus /v1 and the run's model", () => {
    const setup = opencodeSetup(
      input({
        ANTHROPIC_BASE_URL: "http://127.0.0.1:4000/",
        AGENT_MODEL: "opencode/anthropic/claude-sonnet-4-6",
        ANTHROPIC_API_KEY: "sk-ant-secret",
      }),
    );
    const config = JSON.parse(fileOf(setup, "opencode.json") ?? "null");
    expect(config).toEqual({
      $schema: "https://opencode.ai/config.json",
      autoupdate: false,
      share: "disabled",
      provider: {
        anthropic: {
          options: { baseURL: "http://127.0.0.1:4000/v1" },
          models: { "claude-sonnet-4-6": {} },
        },
      },
      agent: { title: { disable: true } },
    });
  });

  it("never writes a key into a file", () => {
    const setup = opencodeSetup(
      input({
        ANTHROPIC_API_KEY: "sk-ant-secret",
        OPENAI_API_KEY: "sk-oai-secret",
        GEMINI_API_KEY: "g-secret",
      }),
    );
    for (const file of setup.files) expect(file.content).not.toMatch(/secret/);
    for (const notice of setup.notices) expect(notice).not.toMatch(/secret/);
  });

  it("turns off everything opencode reaches out for on its own", () => {
    const { env } = opencodeSetup(input({}));
    expect(env).toMatchObject(OPENCODE_OFFLINE_ENV);
    expect(Object.keys(OPENCODE_OFFLINE_ENV).sort()).toEqual([
      "OPENCODE_DISABLE_AUTOUPDATE",
      "OPENCODE_DISABLE_DEFAULT_PLUGINS",
      "OPENCODE_DISABLE_LSP_DOWNLOAD",
      "OPENCODE_DISABLE_MODELS_FETCH",
      "OPENCODE_DISABLE_SHARE",
    ]);
  });

  it("pre-lists the plugin package in the config directory so opencode installs nothing from npm", () => {
    const setup = opencodeSetup(input({}));
    const pkg = JSON.parse(fileOf(setup, "package.json") ?? "null");
    const lock = JSON.parse(fileOf(setup, "package-lock.json") ?? "null");
    expect(Object.keys(pkg.dependencies)).toEqual([OPENCODE_PLUGIN_PACKAGE]);
    expect(Object.keys(lock.packages[""].dependencies)).toEqual([OPENCODE_PLUGIN_PACKAGE]);
    expect(fileOf(setup, "node_modules/.keep")).toBe("");
  });

  it("hands GEMINI_API_KEY over as GOOGLE_GENERATIVE_AI_API_KEY unless that one is set", () => {
    expect(opencodeSetup(input({ GEMINI_API_KEY: "g1" })).env.GOOGLE_GENERATIVE_AI_API_KEY).toBe("g1");
    expect(
      opencodeSetup(input({ GEMINI_API_KEY: "g1", GOOGLE_GENERATIVE_AI_API_KEY: "g2" })).env
        .GOOGLE_GENERATIVE_AI_API_KEY,
    ).toBeUndefined();
    expect(opencodeSetup(input({})).env.GOOGLE_GENERATIVE_AI_API_KEY).toBeUndefined();
  });

  it("names the endpoints in its notice, or says it uses the providers' own", () => {
    expect(opencodeSetup(input({ OPENAI_BASE_URL: "http://gw/v1" })).notices).toEqual([
      `opencode: wrote ${DIR}/opencode.json (endpoints: openai=http://gw/v1)`,
    ]);
    expect(opencodeSetup(input({})).notices[0]).toMatch(/the providers' own endpoints\)$/);
  });
});

describe("opencodeBaseUrls", () => {
  it.each([
    [
      { ANTHROPIC_BASE_URL: "https://gw.example.com/anthropic/" },
      { anthropic: "https://gw.example.com/anthropic/v1" },
    ],
    [{ OPENAI_BASE_URL: "http://127.0.0.1:9/v1//" }, { openai: "http://127.0.0.1:9/v1" }],
    [{ GOOGLE_GEMINI_BASE_URL: "http://127.0.0.1:9" }, { google: "http://127.0.0.1:9/v1beta" }],
    [{ GEMINI_BASE_URL: "http://127.0.0.1:8/" }, { google: "http://127.0.0.1:8/v1beta" }],
    [{ GOOGLE_GEMINI_BASE_URL: "http://a", GEMINI_BASE_URL: "http://b" }, { google: "http://a/v1beta" }],
    [{ ANTHROPIC_BASE_URL: "  ", OPENAI_BASE_URL: "" }, {}],
  ])("%j → %j", (env, urls) => {
    expect(opencodeBaseUrls(env)).toEqual(urls);
  });
});

describe("opencodeModel", () => {
  it.each([
    ["opencode/anthropic/claude-sonnet-4-6", { provider: "anthropic", model: "claude-sonnet-4-6" }],
    ["OpenCode/openai/gpt-5.1", { provider: "openai", model: "gpt-5.1" }],
    ["opencode/openrouter/meta/llama-4", { provider: "openrouter", model: "meta/llama-4" }],
    ["opencode", undefined],
    ["opencode/anthropic", undefined],
    ["opencode/anthropic/", undefined],
    ["", undefined],
  ])("%s", (model, expected) => {
    expect(opencodeModel({ AGENT_MODEL: model })).toEqual(expected);
  });

  it("declares a model of a provider without an endpoint setting on its own", () => {
    expect(opencodeConfig({ AGENT_MODEL: "opencode/openrouter/meta/llama-4" }).provider).toEqual({
      openrouter: { models: { "meta/llama-4": {} } },
    });
  });

  it("leaves provider out for bare opencode without endpoints", () => {
    expect(opencodeConfig({ AGENT_MODEL: "opencode" })).not.toHaveProperty("provider");
  });
});
