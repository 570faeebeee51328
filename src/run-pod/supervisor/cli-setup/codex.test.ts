import { describe, expect, it } from "vitest";
import {
  CODEX_PROVIDER_ID,
  codexConfigToml,
  codexSetup,
  OPENAI_DEFAULT_BASE_URL,
  tomlString,
} from "./codex.js";

const input = (env: Record<string, string>) => ({ env, home: "/agent", workspace: "/workspace" });

/** `key = value` lines of one TOML table (the part before the first table header for ""). */
function table(toml: string, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  let current = "";
  for (const line of toml.split("\n")) {
    const header = /^\[(.+)\]$/.exec(line);
    if (header) current = header[1] ?? "";
    else if (current === name && /^[a-z_]+ = /.test(line)) {
      const [key, ...rest] = line.split(" = ");
      out[key ?? ""] = rest.join(" = ");
    }
  }
  return out;
}

describe("codexSetup", () => {
  it("writes $HOME/.codex/config.toml selecting its own provider at OPENAI_BASE_URL", () => {
    const setup = codexSetup(input({ OPENAI_BASE_URL: "http://127.0.0.1:4000/v1/", CODEX_API_KEY: "sk-x" }));
    expect(setup.files.map((f) => f.path)).toEqual(["/agent/.codex/config.toml"]);
    const toml = setup.files[0]?.content ?? "";
    expect(table(toml, "")).toMatchObject({
      model_provider: `"${CODEX_PROVIDER_ID}"`,
      check_for_update_on_startup: "false",
    });
    expect(table(toml, `model_providers.${CODEX_PROVIDER_ID}`)).toMatchObject({
      base_url: '"http://127.0.0.1:4000/v1"',
      env_key: '"CODEX_API_KEY"',
      wire_api: '"responses"',
      request_max_retries: "2",
      stream_max_retries: "2",
      // At least the 10 minutes every hop keeps a silent stream open (docs/gateway.md#timeouts).
      stream_idle_timeout_ms: "600000",
    });
    expect(table(toml, "analytics")).toEqual({ enabled: "false" });
    expect(table(toml, "features")).toEqual({ plugins: "false", unbounded_connection_retries: "false" });
  });

  it("never logs a credential the base URL carries", () => {
    const setup = codexSetup(input({ OPENAI_BASE_URL: "https://user:pa55@gw.example/v1" }));
    expect(setup.notices).toContain("codex: model provider openai-run at https://***@gw.example/v1");
    expect(setup.notices.join("\n")).not.toContain("pa55");
  });

  it("uses OpenAI's endpoint when the run names none", () => {
    const toml = codexSetup(input({ OPENAI_BASE_URL: "  " })).files[0]?.content ?? "";
    expect(table(toml, `model_providers.${CODEX_PROVIDER_ID}`).base_url).toBe(`"${OPENAI_DEFAULT_BASE_URL}"`);
  });

  it("never writes the key into a file, and maps OPENAI_API_KEY to CODEX_API_KEY when only it is set", () => {
    const setup = codexSetup(input({ OPENAI_API_KEY: "sk-secret-openai" }));
    expect(setup.env).toEqual({ CODEX_API_KEY: "sk-secret-openai" });
    expect(setup.files[0]?.content).not.toContain("sk-secret");
    expect(setup.notices.join("\n")).not.toContain("sk-secret");
  });

  it("keeps CODEX_API_KEY when both are set", () => {
    expect(codexSetup(input({ OPENAI_API_KEY: "sk-a", CODEX_API_KEY: "sk-b" })).env).toEqual({});
  });

  it("drops CODEX_HOME so codex reads this config and keeps its state under $HOME/.codex", () => {
    const setup = codexSetup(input({ CODEX_HOME: "/elsewhere" }));
    expect(setup.env).toEqual({ CODEX_HOME: undefined });
    expect(setup.notices.join("\n")).toContain("/elsewhere");
  });

  it("cannot be made to inject configuration through the base URL", () => {
    const hostile = 'http://h/v1"\nmodel_provider = "evil"\n[features]\nplugins = true\n#';
    const toml = codexConfigToml(hostile);
    expect(toml.split("\n").filter((l) => l.startsWith("model_provider ="))).toHaveLength(1);
    expect(toml.split("\n").filter((l) => l.startsWith("plugins ="))).toEqual(["plugins = false"]);
    expect(table(toml, `model_providers.${CODEX_PROVIDER_ID}`).base_url).toBe(tomlString(hostile));
  });
});

describe("tomlString", () => {
  it.each([
    ["plain", '"plain"'],
    ['a"b', '"a\\"b"'],
    ["a\\b", '"a\\\\b"'],
    ["a\nb\r\tc", '"a\\nb\\r\\tc"'],
    ["\u0000\u001f\u007f", '"\\u0000\\u001f\\u007f"'],
    ["é 🙂", '"é 🙂"'],
  ])("%j → %s", (value, expected) => {
    expect(tomlString(value)).toBe(expected);
  });
});
