/**
 * Which resources.secrets entry holds a vendor's key, and the Job builder's refusal of a run whose
 * definition names none while the model gateway is on (docs/gateway.md#provider-keys).
 */
import { describe, expect, it } from "vitest";
import { agent, definition, NS, station } from "../../../test/support/core-builders.js";
import { settings } from "../../../test/support/job-build.js";
import type { ControllerSettings } from "../input.js";
import type { AgentDefinitionSpec } from "../types.js";
import type { GatewayVendor } from "./gateway-credential.js";
import { buildJob } from "./job.js";
import { type SecretEntry, vendorKeyEntry, vendorKeyProblem } from "./vendor-key.js";

const on: ControllerSettings = {
  ...settings,
  gateway: { url: "http://agent-gateway:8080", credentialKey: Buffer.from("g".repeat(32)) },
};
const entry = (name: string): SecretEntry => ({ name, ref: `${name.toLowerCase()}-ref` });
const tail = "; the gateway would refuse every call of the run (docs/gateway.md#provider-keys)";

describe("vendorKeyEntry: the entry named for the vendor's first key variable that has one", () => {
  const rows: [string, GatewayVendor, SecretEntry[] | undefined, string | undefined][] = [
    [
      "anthropic by ANTHROPIC_API_KEY",
      "anthropic",
      [entry("GITHUB_TOKEN"), entry("ANTHROPIC_API_KEY")],
      "ANTHROPIC_API_KEY",
    ],
    [
      "openai: OPENAI_API_KEY before CODEX_API_KEY",
      "openai",
      [entry("CODEX_API_KEY"), entry("OPENAI_API_KEY")],
      "OPENAI_API_KEY",
    ],
    ["openai by CODEX_API_KEY alone", "openai", [entry("CODEX_API_KEY")], "CODEX_API_KEY"],
    [
      "gemini: GEMINI_API_KEY before GOOGLE_GENERATIVE_AI_API_KEY",
      "gemini",
      [entry("GOOGLE_GENERATIVE_AI_API_KEY"), entry("GEMINI_API_KEY")],
      "GEMINI_API_KEY",
    ],
    [
      "gemini by GOOGLE_GENERATIVE_AI_API_KEY alone",
      "gemini",
      [entry("GOOGLE_GENERATIVE_AI_API_KEY")],
      "GOOGLE_GENERATIVE_AI_API_KEY",
    ],
    [
      "GOOGLE_API_KEY is not a variable the gateway sends for gemini",
      "gemini",
      [entry("GOOGLE_API_KEY")],
      undefined,
    ],
    ["another vendor's key does not count", "anthropic", [entry("OPENAI_API_KEY")], undefined],
    ["no resources.secrets at all", "openai", undefined, undefined],
  ];
  it.each(rows)("%s", (_what, vendor, secrets, name) => {
    const spec = secrets ? { resources: { secrets } } : {};
    expect(vendorKeyEntry(spec, vendor)?.name).toBe(name);
    if (name) expect(vendorKeyEntry(spec, vendor)?.ref).toBe(`${name.toLowerCase()}-ref`);
  });
});

describe("vendorKeyProblem: a run whose model's vendor has no key in its definition", () => {
  const rows: [string, string, SecretEntry[], string | undefined][] = [
    [
      "claude without ANTHROPIC_API_KEY",
      "claude-sonnet-4-6",
      [entry("OPENAI_API_KEY")],
      `model gateway: AgentDefinition ${NS}/def has no resources.secrets entry named ANTHROPIC_API_KEY (the key for model "claude-sonnet-4-6", vendor anthropic)${tail}`,
    ],
    [
      "no model set runs claude",
      "",
      [],
      `model gateway: AgentDefinition ${NS}/def has no resources.secrets entry named ANTHROPIC_API_KEY (the key for the default model (none set), vendor anthropic)${tail}`,
    ],
    [
      "gemini with only GOOGLE_API_KEY",
      "gemini-2.5-pro",
      [entry("GOOGLE_API_KEY")],
      `model gateway: AgentDefinition ${NS}/def has no resources.secrets entry named GEMINI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY (the key for model "gemini-2.5-pro", vendor gemini)${tail}`,
    ],
    [
      "opencode's OpenAI provider with only the Anthropic key",
      "opencode/openai/gpt-5",
      [entry("ANTHROPIC_API_KEY")],
      `model gateway: AgentDefinition ${NS}/def has no resources.secrets entry named OPENAI_API_KEY or CODEX_API_KEY (the key for model "opencode/openai/gpt-5", vendor openai)${tail}`,
    ],
    ["codex with CODEX_API_KEY", "gpt-5-codex", [entry("CODEX_API_KEY")], undefined],
    ["bare opencode with the Anthropic key", "opencode", [entry("ANTHROPIC_API_KEY")], undefined],
    ["exec is not checked", "exec", [], undefined],
    ["an opencode provider the gateway does not serve is not checked", "opencode/xai/grok-4", [], undefined],
  ];
  it.each(rows)("%s", (_what, model, secrets, reason) => {
    expect(vendorKeyProblem(definition().spec({ resources: { secrets } }).build(), NS, model)).toBe(reason);
  });
});

describe("buildJob refuses such a run only with the model gateway on (docs/gateway.md#issued-by-the-job-builder)", () => {
  const build = (s: ControllerSettings, def: Partial<AgentDefinitionSpec>, model?: string) =>
    buildJob(
      agent("run-1")
        .spec(model ? { model } : {})
        .build(),
      station().build(),
      definition().spec(def).build(),
      s,
      "interactive",
    );
  const noGemini = { model: "gemini-2.5-pro", resources: { secrets: [entry("ANTHROPIC_API_KEY")] } };

  const rows: [
    string,
    ControllerSettings,
    Partial<AgentDefinitionSpec>,
    string | undefined,
    string | undefined,
  ][] = [
    [
      "gateway on: refused, naming the definition, the variables, the model and the vendor",
      on,
      noGemini,
      undefined,
      `model gateway: AgentDefinition ${NS}/def has no resources.secrets entry named GEMINI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY (the key for model "gemini-2.5-pro", vendor gemini)${tail}`,
    ],
    [
      "gateway on: the Agent's spec.model decides the vendor, not the definition's",
      on,
      { model: "claude-sonnet-4-6", resources: { secrets: [entry("ANTHROPIC_API_KEY")] } },
      "gpt-5-codex",
      `model gateway: AgentDefinition ${NS}/def has no resources.secrets entry named OPENAI_API_KEY or CODEX_API_KEY (the key for model "gpt-5-codex", vendor openai)${tail}`,
    ],
    [
      "gateway on: the vendor's key named, built",
      on,
      { ...noGemini, resources: { secrets: [entry("GEMINI_API_KEY")] } },
      undefined,
      undefined,
    ],
    [
      "gateway on: an exec run is not checked",
      on,
      { model: "exec", tool_config: { command: ["make"] } },
      undefined,
      undefined,
    ],
    ["gateway off: built as before", settings, noGemini, undefined, undefined],
  ];
  it.each(rows)("%s", (_what, s, def, model, reason) => {
    const r = build(s, def, model);
    expect(r.ok ? undefined : r.reason).toBe(reason);
  });
});
