import { describe, expect, it } from "vitest";
import type { Agent } from "../../generated/crds/agent.js";
import type { AgentsClient } from "../client/agents.js";
import { followAgent } from "./follow.js";
import type { CliIo } from "./io.js";

/** An AgentsClient whose `get` answers from `reads` in turn (the last one repeats). */
function agentsReading(reads: (Agent | undefined)[]): AgentsClient {
  let i = 0;
  return {
    namespace: "team-a",
    get: async () => reads[Math.min(i++, reads.length - 1)],
    runPods: async () => [],
    podLog: async () => undefined,
  } as unknown as AgentsClient;
}

function io(): CliIo & { out: string; err: string } {
  const o = {
    out: "",
    err: "",
    stdout: (t: string) => {
      o.out += t;
    },
    stderr: (t: string) => {
      o.err += t;
    },
    env: {},
    readStdin: async () => "",
    now: () => 0,
    sleep: async () => {},
    connect: async () => {
      throw new Error("not used");
    },
  };
  return o;
}

const running: Agent = {
  apiVersion: "agents.re-cinq.com/v1beta1",
  kind: "Agent",
  metadata: { name: "fix-1", namespace: "team-a" },
  spec: { stationRef: "s" },
  status: { phase: "Running" },
};

describe("followAgent", () => {
  it("an Agent that does not exist is kubectl's NotFound, not a deletion", async () => {
    await expect(followAgent(agentsReading([undefined]), "nope", io(), { raw: false })).rejects.toThrow(
      'Error from server (NotFound): agents.agents.re-cinq.com "nope" not found in namespace team-a',
    );
  });

  it("an Agent that disappears while followed was deleted", async () => {
    const out = io();
    await expect(
      followAgent(agentsReading([running, undefined]), "fix-1", out, { raw: false }),
    ).rejects.toThrow("Agent fix-1 was deleted while Agent fix-1: Running");
    expect(out.err).toBe("Agent fix-1: Running\n");
  });

  it("a terminal Agent: its output printed once, rendered", async () => {
    const done: Agent = { ...running, status: { phase: "Succeeded", exitCode: 0, output: "plain line\n" } };
    const out = io();
    expect(await followAgent(agentsReading([running, done]), "fix-1", out, { raw: false })).toBe(done);
    expect(out.out).toBe("plain line\n");
    expect(out.err).toBe("Agent fix-1: Running\nAgent fix-1: Succeeded\n");
  });
});
