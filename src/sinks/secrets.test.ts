import { describe, expect, it } from "vitest";
import { agentSecretsReader } from "./secrets.js";

describe("agentSecretsReader", () => {
  it("reads and base64-decodes one key of agent-secrets in the given namespace", async () => {
    const asked: string[] = [];
    const read = agentSecretsReader(async (ns, name) => {
      asked.push(`${ns}/${name}`);
      return { data: { "sink-auth": Buffer.from("Authorization: Bearer t\n").toString("base64") } };
    });
    expect(await read("ai-agents", "sink-auth")).toBe("Authorization: Bearer t\n");
    expect(await read("ai-agents", "other")).toBeUndefined();
    expect(asked).toEqual(["ai-agents/agent-secrets", "ai-agents/agent-secrets"]);
  });

  it("returns undefined when the Secret is absent and lets errors through", async () => {
    expect(await agentSecretsReader(async () => undefined)("ns", "k")).toBeUndefined();
    await expect(
      agentSecretsReader(async () => {
        throw new Error("403 forbidden");
      })("ns", "k"),
    ).rejects.toThrow("403 forbidden");
  });
});
