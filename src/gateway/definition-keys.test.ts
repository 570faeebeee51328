import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { vendorKeyProblem } from "../core/run-job/vendor-key.js";
import type { AgentDefinition, Station } from "../core/types.js";
import { KubeApiError } from "../kube/errors.js";
import {
  DEFINITION_CACHE_MS,
  DEFINITION_STALE_MS,
  definitionKeySource,
  isSecretKey,
} from "./definition-keys.js";
import type { ProviderKey } from "./ports.js";
import type { GatewayVendor } from "./vendors.js";

// agent-secrets as the kubelet mounts it whole: one file per key, and the volume's own `..data`.
const dir = mkdtempSync(join(tmpdir(), "agent-secrets-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(join(dir, "anthropic-key"), "sk-ant-real\n");
writeFileSync(join(dir, "openai-key"), "sk-openai-real");
writeFileSync(join(dir, "codex-key"), "sk-codex-real");
writeFileSync(join(dir, "empty-key"), "  \n");
mkdirSync(join(dir, "..data"));
writeFileSync(join(dir, "..data", "anthropic-key"), "sk-ant-real");

const RUN = { namespace: "ai-agents", name: "fix-readme", uid: "uid-1" };

function station(name: string, def: string): Station {
  return {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name, namespace: "ai-agents" },
    spec: { agentDefRef: def, template: {} },
  };
}

function definition(name: string, secrets: { name: string; ref: string }[]): AgentDefinition {
  return {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name, namespace: "ai-agents" },
    spec: { prompt: "p", resources: { secrets } },
  } as AgentDefinition;
}

const DEFINITIONS: Record<string, AgentDefinition> = {
  seed: definition("seed", [
    { name: "ANTHROPIC_API_KEY", ref: "anthropic-key" },
    { name: "OPENAI_API_KEY", ref: "openai-key" },
    { name: "GITHUB_TOKEN", ref: "github-token" },
  ]),
  codex: definition("codex", [{ name: "CODEX_API_KEY", ref: "codex-key" }]),
  "both-openai": definition("both-openai", [
    { name: "CODEX_API_KEY", ref: "codex-key" },
    { name: "OPENAI_API_KEY", ref: "openai-key" },
  ]),
  "no-keys": definition("no-keys", [{ name: "GITHUB_TOKEN", ref: "github-token" }]),
  absent: definition("absent", [{ name: "GEMINI_API_KEY", ref: "gemini-key" }]),
  empty: definition("empty", [{ name: "ANTHROPIC_API_KEY", ref: "empty-key" }]),
  traversal: definition("traversal", [{ name: "ANTHROPIC_API_KEY", ref: "../credential-key" }]),
  "volume-data": definition("volume-data", [{ name: "ANTHROPIC_API_KEY", ref: "..data" }]),
};

function source(o: { stationRef?: string; def?: string; now?: () => number } = {}) {
  const calls = { station: 0, definition: 0 };
  const answers: { station: Error | undefined; definition: Error | undefined } = {
    station: undefined,
    definition: undefined,
  };
  const keys = definitionKeySource({
    namespace: "ai-agents",
    secretsDir: dir,
    stationOf: async () => o.stationRef,
    getStation: async (ns, name) => {
      calls.station++;
      if (answers.station) throw answers.station;
      expect(ns).toBe("ai-agents");
      return name === "st" ? station("st", o.def ?? "seed") : undefined;
    },
    getDefinition: async (_ns, name) => {
      calls.definition++;
      if (answers.definition) throw answers.definition;
      return DEFINITIONS[name];
    },
    now: o.now,
  });
  return { keys, calls, answers };
}

describe("the key per definition, from agent-secrets (docs/gateway.md#provider-keys)", () => {
  it.each<[string, string | undefined, string, GatewayVendor, ProviderKey]>([
    ["the entry named for the vendor", "st", "seed", "anthropic", { key: "sk-ant-real" }],
    ["another vendor's entry of the same definition", "st", "seed", "openai", { key: "sk-openai-real" }],
    ["codex's own variable", "st", "codex", "openai", { key: "sk-codex-real" }],
    ["OPENAI_API_KEY before CODEX_API_KEY", "st", "both-openai", "openai", { key: "sk-openai-real" }],
    [
      "no entry for the vendor",
      "st",
      "seed",
      "gemini",
      {
        missing:
          "AgentDefinition ai-agents/seed has no resources.secrets entry named GEMINI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY",
      },
    ],
    [
      "no provider entry at all",
      "st",
      "no-keys",
      "anthropic",
      { missing: "AgentDefinition ai-agents/no-keys has no resources.secrets entry named ANTHROPIC_API_KEY" },
    ],
    [
      "an entry whose key agent-secrets lacks",
      "st",
      "absent",
      "gemini",
      {
        missing:
          "agent-secrets has no key gemini-key (AgentDefinition ai-agents/absent, resources.secrets entry GEMINI_API_KEY)",
      },
    ],
    [
      "an empty key",
      "st",
      "empty",
      "anthropic",
      {
        missing:
          "agent-secrets key empty-key is empty (AgentDefinition ai-agents/empty, resources.secrets entry ANTHROPIC_API_KEY)",
      },
    ],
    [
      "a ref that leaves the volume",
      "st",
      "traversal",
      "anthropic",
      {
        missing:
          'AgentDefinition ai-agents/traversal\'s resources.secrets entry ANTHROPIC_API_KEY names "../credential-key", which is not a Secret key',
      },
    ],
    [
      "a ref naming the volume's own ..data",
      "st",
      "volume-data",
      "anthropic",
      {
        missing:
          'AgentDefinition ai-agents/volume-data\'s resources.secrets entry ANTHROPIC_API_KEY names "..data", which is not a Secret key',
      },
    ],
    [
      "a Station that does not exist",
      "gone",
      "seed",
      "anthropic",
      { missing: "its Station ai-agents/gone does not exist" },
    ],
    [
      "a definition that does not exist",
      "st",
      "deleted-def",
      "anthropic",
      { missing: "the AgentDefinition ai-agents/deleted-def of Station st does not exist" },
    ],
    ["a run no longer active", undefined, "seed", "anthropic", { missing: "the Agent is no longer running" }],
  ])("%s", async (_case, stationRef, def, vendor, expected) => {
    expect(await source({ stationRef, def }).keys.keyFor(RUN, vendor)).toEqual(expected);
  });

  it.each<[string, GatewayVendor, string]>([
    ["no-keys", "anthropic", "claude-sonnet-4-6"],
    ["seed", "gemini", "gemini-2.5-pro"],
  ])(
    "a definition %s without a %s key: refused in the words the controller fails the run with, so it never starts",
    async (def, vendor, model) => {
      const found = await source({ stationRef: "st", def }).keys.keyFor(RUN, vendor);
      const why = "missing" in found ? found.missing : "";
      expect(why).toMatch(/has no resources\.secrets entry named/);
      expect(vendorKeyProblem(DEFINITIONS[def] as AgentDefinition, "ai-agents", model)).toContain(why);
    },
  );

  it("refuses a run of another namespace: the mounted agent-secrets is its own namespace's", async () => {
    const { keys, calls } = source({ stationRef: "st" });
    expect(await keys.keyFor({ ...RUN, namespace: "other" }, "anthropic")).toEqual({
      missing: "this gateway reads the agent-secrets of namespace ai-agents only",
    });
    expect(calls).toEqual({ station: 0, definition: 0 });
  });

  it("reuses the Station and definition for the cache time, then asks again", async () => {
    let now = 0;
    const { keys, calls } = source({ stationRef: "st", now: () => now });
    await keys.keyFor(RUN, "anthropic");
    now = DEFINITION_CACHE_MS - 1;
    await keys.keyFor(RUN, "openai");
    expect(calls).toEqual({ station: 1, definition: 1 });
    now = DEFINITION_CACHE_MS;
    await keys.keyFor(RUN, "anthropic");
    expect(calls).toEqual({ station: 2, definition: 2 });
  });

  it("lets a recent copy stand in while the API server cannot be asked, and throws saying so after that", async () => {
    let now = 0;
    const { keys, answers } = source({ stationRef: "st", now: () => now });
    expect(await keys.keyFor(RUN, "anthropic")).toEqual({ key: "sk-ant-real" });
    answers.station = new Error("connect ECONNREFUSED");
    now = DEFINITION_STALE_MS - 1;
    expect(await keys.keyFor(RUN, "anthropic")).toEqual({ key: "sk-ant-real" });
    now = DEFINITION_STALE_MS;
    await expect(keys.keyFor(RUN, "anthropic")).rejects.toThrow(
      "the Kubernetes API server cannot be reached",
    );

    const cold = source({ stationRef: "st" });
    cold.answers.definition = new KubeApiError(403, "Forbidden", "GET … 403");
    await expect(cold.keys.keyFor(RUN, "anthropic")).rejects.toThrow(
      "the Kubernetes API server answered 403 Forbidden to its read of the AgentDefinition ai-agents/seed",
    );
  });

  it.each([
    ["anthropic-key", true],
    ["ANTHROPIC_API_KEY", true],
    ["a.b-c_d", true],
    [".hidden", true],
    [".", false],
    ["..", false],
    ["..data", false],
    ["../x", false],
    ["a/b", false],
    ["", false],
    ["x".repeat(254), false],
  ])("isSecretKey(%j) = %s", (ref, ok) => {
    expect(isSecretKey(ref)).toBe(ok);
  });
});
