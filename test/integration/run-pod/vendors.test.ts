/**
 * End to end, per vendor: an Agent through the controller, the real init and supervisor on the
 * real node, and a scripted fake CLI: Pending → Running → Succeeded with status.output = the agent
 * container's log (the supervisor's stdout) and status.sessionId from it; the http sink receives the
 * run's events in order with its header; an agent exit 3 ends the Agent Failed with exitCode 3.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../../src/core/types.js";
import { AGENTS } from "../../../src/kube/resources.js";
import {
  createAgent,
  createDefinition,
  createStation,
  podLog,
  RUN_POD_SKIP,
  type RunPodEnv,
  SINK_HEADERS_KEY,
  SINK_TOKEN,
  startRunPodEnv,
  watchPhases,
} from "./setup.js";

let env: RunPodEnv;
beforeAll(async () => {
  if (RUN_POD_SKIP === "") env = await startRunPodEnv("run-pod-vendors");
});
afterAll(async () => {
  await env?.close();
});

const vendors = [
  { vendor: "claude", model: "claude-sonnet-4-5", sessionId: "sess-claude-1" },
  { vendor: "codex", model: "gpt-5-codex", sessionId: "sess-codex-1" },
  { vendor: "gemini", model: "gemini-2.5-pro", sessionId: "sess-gemini-1" },
  // opencode's lines carry its sessionID, which the controller reads (docs/decisions.md D-53).
  { vendor: "opencode", model: "opencode/big-pickle", sessionId: "ses_opencode1" },
];

describe.skipIf(RUN_POD_SKIP !== "")("a run pod per vendor", () => {
  it.concurrent.each(vendors)(
    "$vendor: Pending → Running → Succeeded with its output and session",
    async (v) => {
      const answer = `${v.vendor} says done`;
      await createDefinition(env, `def-${v.vendor}`, { model: v.model });
      await createStation(env, `stn-${v.vendor}`, `def-${v.vendor}`, {
        answer,
        sessionId: v.sessionId || "ignored",
        durationMs: 300,
      });
      const watch = await watchPhases(env, `run-${v.vendor}`);
      await createAgent(env, `run-${v.vendor}`, `stn-${v.vendor}`);
      const phases = await watch.terminal;
      expect(phases).toEqual(["Pending", "Running", "Succeeded"]);
      const agent = (await env.client.get<Agent>(AGENTS, env.ns, `run-${v.vendor}`)) as Agent;
      expect(agent.status?.exitCode).toBe(0);
      expect(agent.status?.sessionId ?? "").toBe(v.sessionId);
      expect(agent.status?.output).toBe(await podLog(env, agent, "agent"));
      expect(agent.status?.output).toContain(answer);
      const invocation = env.journal.entries().find((e) => e.env.AGENT_NAME === `run-${v.vendor}`);
      expect(invocation?.cli).toBe(v.vendor);
      expect(invocation?.argv.at(-1)).toBe(
        v.vendor === "gemini" ? "--prompt=Summarise tests." : "Summarise tests.",
      );
    },
  );

  it("delivers agent/started, the selected lines, file events and agent/succeeded to the http sink, in order, with its header", async () => {
    await createDefinition(env, "def-sink", {
      model: "claude-sonnet-4-5",
      output: {
        select: [{ event: "result" }],
        sinks: [{ type: "http", url: env.listener.url, headers_secret: SINK_HEADERS_KEY }],
        watch: [
          { path: "notes/out.md", event: "notes" },
          { path: "never-written.txt", event: "absent" },
        ],
      },
    });
    await createStation(env, "stn-sink", "def-sink", {
      answer: "sink answer",
      files: { "notes/out.md": "# written by the agent\n" },
    });
    const watch = await watchPhases(env, "run-sink");
    await createAgent(env, "run-sink", "stn-sink");
    const phases = await watch.terminal;
    expect(phases.at(-1)).toBe("Succeeded");
    const events = env.listener.eventsFor("run-sink");
    const agentEvents = events.filter(
      (e) => e.phase === "agent" || e.kind === "file" || e.type !== undefined,
    );
    expect(
      agentEvents.map((e) =>
        e.kind === "lifecycle"
          ? `${e.phase}/${e.status}`
          : e.kind === "file"
            ? `file:${e.event}`
            : `line:${e.type}`,
      ),
    ).toEqual(["agent/started", "line:result", "file:notes", "file:absent", "agent/succeeded"]);
    expect(agentEvents[2]).toMatchObject({
      kind: "file",
      event: "notes",
      path: "/workspace/notes/out.md",
      content: "# written by the agent\n",
    });
    expect(agentEvents[3]).toMatchObject({ kind: "file", event: "absent", reason: "missing" });
    expect(agentEvents[1]).toMatchObject({ type: "result", result: "sink answer" });
    const received = env.listener.received.filter((r) => r.envelope.source.agent === "run-sink");
    const unauthorised = received.filter((r) => r.headers.authorization !== SINK_TOKEN);
    expect(unauthorised.map((r) => [r.envelope.event, r.headers.authorization])).toEqual([]);
    // Init events come first, on the same stream.
    expect(events[0]).toMatchObject({ kind: "lifecycle", phase: "init", status: "started" });
  });

  it("an agent exiting 3 ends the Agent Failed with exitCode 3", async () => {
    await createDefinition(env, "def-exit3", { model: "claude-sonnet-4-5" });
    await createStation(env, "stn-exit3", "def-exit3", { answer: "bad", exitCode: 3, terminal: false });
    const watch = await watchPhases(env, "run-exit3");
    await createAgent(env, "run-exit3", "stn-exit3");
    const phases = await watch.terminal;
    expect(phases.at(-1)).toBe("Failed");
    const agent = (await env.client.get<Agent>(AGENTS, env.ns, "run-exit3")) as Agent;
    expect(agent.status?.exitCode).toBe(3);
  });
});
