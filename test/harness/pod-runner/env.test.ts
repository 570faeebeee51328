import { describe, expect, it } from "vitest";
import { ContainerConfigError, type EnvSources, expandVars, resolveEnv } from "./env.js";
import type { ContainerSpec, PodJson } from "./types.js";

const pod: PodJson = {
  metadata: { name: "run-1", namespace: "team", uid: "uid-1", labels: { app: "x" } },
  spec: { nodeName: "runner-node-0", containers: [] },
};

const sources = (secrets: Record<string, Record<string, string>>): EnvSources => ({
  secret: async (name) => secrets[name],
  configMap: async () => undefined,
});

const container = (env: ContainerSpec["env"]): ContainerSpec => ({ name: "agent", env });
const addresses = { podIP: "127.5.0.2", hostIP: "127.0.0.1" };

describe("resolveEnv", () => {
  it("resolves value, secretKeyRef and fieldRef, and nothing else", async () => {
    const env = await resolveEnv(
      pod,
      container([
        { name: "PLAIN", value: "v" },
        { name: "EXPANDED", value: "$(PLAIN)-$$(PLAIN)-$(UNSET)" },
        { name: "TOKEN", valueFrom: { secretKeyRef: { name: "agent-secrets", key: "token" } } },
        { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
        { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
        { name: "APP", valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: "OPT", valueFrom: { secretKeyRef: { name: "agent-secrets", key: "nope", optional: true } } },
      ]),
      addresses,
      sources({ "agent-secrets": { token: "s3cret" } }),
    );
    expect(env).toEqual({
      PLAIN: "v",
      EXPANDED: "v-$(PLAIN)-$(UNSET)",
      TOKEN: "s3cret",
      POD_NAME: "run-1",
      POD_NAMESPACE: "team",
      POD_IP: "127.5.0.2",
      APP: "x",
    });
  });

  it.each([
    [{}, 'secret "agent-secrets" not found'],
    [{ "agent-secrets": {} }, "couldn't find key token in Secret team/agent-secrets"],
  ])("a missing secret or key fails with the kubelet's message (%j)", async (secrets, message) => {
    const spec = container([
      { name: "T", valueFrom: { secretKeyRef: { name: "agent-secrets", key: "token" } } },
    ]);
    const err = await resolveEnv(pod, spec, addresses, sources(secrets)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContainerConfigError);
    expect((err as Error).message).toBe(message);
  });

  it("applies envFrom first, env over it", async () => {
    const env = await resolveEnv(
      pod,
      {
        name: "c",
        envFrom: [{ secretRef: { name: "s" }, prefix: "P_" }],
        env: [{ name: "P_A", value: "mine" }],
      },
      addresses,
      sources({ s: { A: "from-secret", B: "b" } }),
    );
    expect(env).toEqual({ P_A: "mine", P_B: "b" });
  });
});

describe("expandVars", () => {
  it.each([
    ["$(A)", "1"],
    ["$$(A)", "$(A)"],
    ["$(B)", "$(B)"],
    ["a$b", "a$b"],
    ["$(A", "$(A"],
    ["x$", "x$"],
  ])("%s -> %s", (input, out) => {
    expect(expandVars(input, (n) => (n === "A" ? "1" : undefined))).toBe(out);
  });
});
