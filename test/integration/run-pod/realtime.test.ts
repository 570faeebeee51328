/**
 * End to end, a realtime session: the controller (REALTIME_ENABLED) creates the Job, the pod runner
 * runs the real init and the real supervisor in session mode on the pod's own loopback IP, and
 * prompts go through the controller's prompt API (the same Hono app the controller serves on 8082)
 * with the api-token; the supervisor runs each as a turn of the fake CLI.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENTS } from "../../../src/controller/kube/resources.js";
import { controllerPromptApi } from "../../../src/controller/prompt-api.js";
import type { Agent } from "../../../src/core/types.js";
import { eventually } from "../../harness/context.js";
import {
  createAgent,
  createDefinition,
  createStation,
  finishedAgent,
  RUN_POD_PROGRAMS_BUILT,
  type RunPodEnv,
  runPod,
  startRunPodEnv,
} from "./setup.js";

const API_TOKEN = "rt-caller-token";
const SIGNING_KEY = "rt-signing-key";

let env: RunPodEnv;
let app: ReturnType<typeof controllerPromptApi>;
beforeAll(async () => {
  if (!RUN_POD_PROGRAMS_BUILT) return;
  env = await startRunPodEnv(
    "run-pod-rt",
    {},
    { REALTIME_ENABLED: "true", REALTIME_API_TOKEN: API_TOKEN, REALTIME_SIGNING_KEY: SIGNING_KEY },
  );
  app = controllerPromptApi({
    config: { namespace: env.ns, realtimeApiToken: API_TOKEN, realtimeSigningKey: SIGNING_KEY },
    client: env.client,
  });
});
afterAll(async () => {
  await env?.close();
});

async function post(name: string, route: "prompt" | "close", body?: unknown) {
  const res = await app.request(`/v1/namespaces/${env.ns}/agents/${name}/${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${API_TOKEN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
    retryAfter: res.headers.get("retry-after"),
  };
}

const vendors = [
  { vendor: "claude", model: "claude-sonnet-4-5" },
  { vendor: "codex", model: "gpt-5-codex" },
];

describe.skipIf(!RUN_POD_PROGRAMS_BUILT)("a realtime session on the local plane", () => {
  it.concurrent.each(vendors)(
    "$vendor: prompts run as turns, sessionId is patched, close ends it Succeeded",
    async (v) => {
      const name = `rt-${v.vendor}`;
      await createDefinition(env, `def-${name}`, {
        model: v.model,
        execution: "realtime",
        permission_mode: "bypass",
        output: { sinks: [{ type: "http", url: env.listener.url }] },
      });
      await createStation(env, `stn-${name}`, `def-${name}`, {
        answer: "turn done",
        sessionId: `sess-${v.vendor}-9`,
      });
      await createAgent(env, name, `stn-${name}`);

      // Until its supervisor serves, the API says so with Retry-After: 2.
      const early = await eventually(
        `${name} Running`,
        async () => {
          const reply = await post(name, "prompt", { prompt: "too early?" });
          return reply.status === 503 || reply.status === 202 ? reply : undefined;
        },
        90_000,
        250,
      );
      if (early.status === 503) expect(early.retryAfter).toBe("2");
      await eventually(
        `${name}'s pod Ready`,
        async () => {
          const pod = await runPod(env, name);
          return pod?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
            ? true
            : undefined;
        },
        90_000,
        250,
      );

      const second = await eventually(
        `${name} accepts a prompt`,
        async () => {
          const reply = await post(name, "prompt", { prompt: "Add a test." });
          return reply.status === 202 ? reply : undefined;
        },
        30_000,
        500,
      );
      expect(second.body.turn).toBeGreaterThanOrEqual(2);
      // A reply carries the id once the supervisor knows it (Claude: at once; Codex: after turn 1).
      const sessionId = await eventually(
        `${name} status.sessionId patched`,
        async () => {
          const reply = await post(name, "prompt", { prompt: "And another." });
          if (reply.status !== 202) return undefined;
          const agent = await env.client.get<Agent>(AGENTS, env.ns, name);
          return reply.body.sessionId && agent?.status?.sessionId === reply.body.sessionId
            ? (reply.body.sessionId as string)
            : undefined;
        },
        30_000,
        1000,
      );
      expect(await post(name, "close")).toMatchObject({ status: 202 });
      expect(await post(name, "close")).toMatchObject({
        status: 409,
        body: { error: "the session is ending" },
      });

      const agent = await finishedAgent(env, name, 90_000);
      expect(agent.status?.phase).toBe("Succeeded");
      expect(agent.status?.sessionId).toBe(sessionId);
      const events = env.listener.eventsFor(name).filter((e) => e.kind === "lifecycle" && e.phase !== "init");
      const turnsEnded = events
        .filter((e) => e.phase === "turn" && e.status === "succeeded")
        .map((e) => e.turn);
      const turnsStarted = events
        .filter((e) => e.phase === "turn" && e.status === "started")
        .map((e) => e.turn);
      expect(turnsEnded).toEqual(turnsStarted);
      expect(turnsStarted.length).toBeGreaterThanOrEqual(3);
      expect(events[0]).toMatchObject({ phase: "agent", status: "started" });
      expect(events.at(-1)).toMatchObject({ phase: "agent", status: "succeeded", exitCode: 0 });
      // Each turn ran the fake CLI in the pod, continuing one session after the first.
      const runs = env.journal.entries().filter((e) => e.env.AGENT_NAME === name);
      expect(runs.length).toBe(turnsStarted.length);
      expect(runs.every((r) => r.env.AGENT_REALTIME_TOKEN_SHA256 === undefined)).toBe(true);
      expect(runs.at(-1)?.argv.join(" ")).toContain(sessionId);
    },
  );
});
