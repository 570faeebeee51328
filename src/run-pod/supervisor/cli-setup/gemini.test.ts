import { describe, expect, it } from "vitest";
import {
  disallowedTools,
  GEMINI_MAX_ATTEMPTS,
  GEMINI_POLICY_FILE,
  geminiBaseUrl,
  geminiPolicyToml,
  geminiSetup,
} from "./gemini.js";

const input = (env: Record<string, string>) => ({ env, home: "/agent", workspace: "/workspace" });

function settingsOf(setup: ReturnType<typeof geminiSetup>): Record<string, unknown> {
  const file = setup.files.find((f) => f.path === "/agent/.gemini/settings.json");
  return JSON.parse(file?.content ?? "null");
}

function policyOf(setup: ReturnType<typeof geminiSetup>): string {
  return setup.files.find((f) => f.path === `/agent/.gemini/policies/${GEMINI_POLICY_FILE}`)?.content ?? "";
}

/** The `[[rule]]` tables of a policy file as key → raw value maps. */
function rules(toml: string): Record<string, string>[] {
  return toml
    .split("[[rule]]")
    .slice(1)
    .map((block) =>
      Object.fromEntries(
        block
          .split("\n")
          .filter((l) => l.includes(" = "))
          .map((l) => {
            const [key, ...rest] = l.split(" = ");
            return [key ?? "", rest.join(" = ")];
          }),
      ),
    );
}

describe("geminiSetup", () => {
  it("writes settings selecting API-key auth, usage statistics, telemetry and updates off, bounded attempts", () => {
    const setup = geminiSetup(input({ GEMINI_API_KEY: "k" }));
    expect(setup.files.map((f) => f.path)).toEqual([
      "/agent/.gemini/settings.json",
      `/agent/.gemini/policies/${GEMINI_POLICY_FILE}`,
    ]);
    expect(settingsOf(setup)).toEqual({
      security: { auth: { selectedType: "gemini-api-key" } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: {
        enableAutoUpdate: false,
        enableAutoUpdateNotification: false,
        maxAttempts: GEMINI_MAX_ATTEMPTS,
      },
    });
  });

  it("trusts the workspace through the environment, for every turn", () => {
    expect(geminiSetup(input({ GEMINI_API_KEY: "k" })).env).toEqual({ GEMINI_CLI_TRUST_WORKSPACE: "true" });
    // A run's own GEMINI_CLI_TRUST_WORKSPACE=false would make every headless run exit 55.
    expect(
      geminiSetup(input({ GEMINI_API_KEY: "k", GEMINI_CLI_TRUST_WORKSPACE: "false" })).env
        .GEMINI_CLI_TRUST_WORKSPACE,
    ).toBe("true");
  });

  it("selects Vertex AI when the run asks for it", () => {
    const setup = geminiSetup(input({ GOOGLE_GENAI_USE_VERTEXAI: "True", GOOGLE_API_KEY: "k" }));
    expect(settingsOf(setup).security).toEqual({ auth: { selectedType: "vertex-ai" } });
    expect(setup.env.GEMINI_API_KEY).toBeUndefined();
  });

  it("points the CLI at the installation's endpoint: GOOGLE_GEMINI_BASE_URL, else GEMINI_BASE_URL", () => {
    expect(geminiSetup(input({ GEMINI_BASE_URL: "http://127.0.0.1:9000/" })).env.GOOGLE_GEMINI_BASE_URL).toBe(
      "http://127.0.0.1:9000",
    );
    expect(
      geminiBaseUrl({
        GOOGLE_GEMINI_BASE_URL: "https://proxy.example/gemini",
        GEMINI_BASE_URL: "https://other",
      }),
    ).toBe("https://proxy.example/gemini");
    const none = geminiSetup(input({ GEMINI_API_KEY: "k" }));
    expect("GOOGLE_GEMINI_BASE_URL" in none.env).toBe(false);
    expect(geminiBaseUrl({ GEMINI_BASE_URL: "  " })).toBeUndefined();
  });

  it("takes GEMINI_API_KEY from GOOGLE_API_KEY, and says so; says when there is no key at all", () => {
    const fromGoogle = geminiSetup(input({ GOOGLE_API_KEY: "g-key" }));
    expect(fromGoogle.env.GEMINI_API_KEY).toBe("g-key");
    expect(fromGoogle.notices).toContain("gemini: GEMINI_API_KEY taken from GOOGLE_API_KEY");
    expect(fromGoogle.notices.join("\n")).not.toContain("g-key");
    const none = geminiSetup(input({}));
    expect(none.notices).toContain(
      "gemini: GEMINI_API_KEY is not set; the CLI will exit 41 before any model call",
    );
  });

  it("removes GEMINI_CLI_HOME, so settings and the conversation stay under $HOME/.gemini", () => {
    const setup = geminiSetup(input({ GEMINI_API_KEY: "k", GEMINI_CLI_HOME: "/elsewhere" }));
    expect("GEMINI_CLI_HOME" in setup.env && setup.env.GEMINI_CLI_HOME === undefined).toBe(true);
  });

  it("denies the definition's disallowed tools through the policy engine", () => {
    const setup = geminiSetup(
      input({
        GEMINI_API_KEY: "k",
        AGENT_DISALLOWED_TOOLS: JSON.stringify(["write_file", "run_shell_command(rm -rf)"]),
      }),
    );
    expect(rules(policyOf(setup))).toEqual([
      { toolName: '"write_file"', decision: '"deny"', priority: "999" },
      { toolName: '"run_shell_command"', commandPrefix: '"rm -rf"', decision: '"deny"', priority: "999" },
    ]);
    expect(setup.notices).toContain("gemini: denied tools: write_file, run_shell_command(rm -rf)");
  });

  it("always writes the policy file, empty of rules when nothing is disallowed (a restored one is replaced)", () => {
    const policy = policyOf(geminiSetup(input({ GEMINI_API_KEY: "k" })));
    expect(policy.startsWith("# Written by the run pod's supervisor")).toBe(true);
    expect(rules(policy)).toEqual([]);
  });
});

describe("disallowedTools", () => {
  it("reads AGENT_DISALLOWED_TOOLS, else the realtime recipe's list; drops blanks and non-strings", () => {
    expect(disallowedTools({ AGENT_DISALLOWED_TOOLS: JSON.stringify(["a", " ", 3, " b "]) })).toEqual([
      "a",
      "b",
    ]);
    expect(
      disallowedTools({ AGENT_RECIPE: JSON.stringify({ model: "gemini-2.5-pro", disallowed_tools: ["c"] }) }),
    ).toEqual(["c"]);
    expect(disallowedTools({ AGENT_DISALLOWED_TOOLS: "not json" })).toEqual([]);
    expect(disallowedTools({})).toEqual([]);
  });
});

describe("geminiPolicyToml", () => {
  it("escapes names so a tool name cannot add keys or rules", () => {
    const toml = geminiPolicyToml(['x"\ndecision = "allow', "run_shell_command(a\\b)"]);
    const parsed = rules(toml);
    expect(parsed.length).toBe(2);
    expect(parsed[0]).toEqual({
      toolName: '"x\\"\\ndecision = \\"allow"',
      decision: '"deny"',
      priority: "999",
    });
    expect(parsed[1]?.commandPrefix).toBe('"a\\\\b"');
  });

  it("treats an empty shell prefix as the whole shell tool", () => {
    expect(rules(geminiPolicyToml(["run_shell_command()"]))).toEqual([
      { toolName: '"run_shell_command"', decision: '"deny"', priority: "999" },
    ]);
  });
});
