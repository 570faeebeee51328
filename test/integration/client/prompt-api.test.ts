/**
 * PromptApiClient (src/client/prompt-api.ts) against the controller's real prompt API, served
 * over HTTP as the controller serves it on 8082, reading Agents, Jobs and pods from the API server.
 * The session itself is a real one: the real node runs the init and the supervisor in realtime
 * mode with a fake claude (a gate holds the first turn so the queue can be filled deterministically).
 * Every documented refusal arrives as its typed error with the server's literal message, and a 503
 * is retried after the server's Retry-After.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Agent,
  AgentsClient,
  PromptApiClient,
  PromptApiError,
  PromptBadRequestError,
  PromptConflictError,
  PromptNotFoundError,
  PromptQueueFullError,
  PromptTooLargeError,
  PromptUnauthorizedError,
  PromptUnavailableError,
  phaseOf,
} from "../../../src/client/index.js";
import { eventually, kubeconfigPath } from "../../harness/context.js";
import {
  API_TOKEN,
  type ClientEnv,
  createDefinition,
  createKwokStation,
  createRealNodeStation,
  createUnschedulableStation,
  RUN_POD_SKIP,
  startClientEnv,
} from "./setup.js";

let env: ClientEnv;
let agents: AgentsClient;
let api: PromptApiClient;

beforeAll(async () => {
  env = await startClientEnv("client-prompt");
  await createDefinition(env, "rt-def", {
    execution: "realtime",
    prompt: "Start on {topic}.",
    permission_mode: "bypass",
  });
  await createDefinition(env, "plain-def");
  await createRealNodeStation(env, "rt", "rt-def", { answer: "turn done" });
  await createUnschedulableStation(env, "rt-nowhere", "rt-def");
  await createKwokStation(
    env,
    "one-at-a-time",
    "plain-def",
    { exitCode: 0, runTime: "30m" },
    { maxConcurrentRuns: 1 },
  );
  agents = await AgentsClient.connect({ kubeconfig: kubeconfigPath(), namespace: env.ns });
  api = new PromptApiClient({ baseUrl: env.apiUrl, token: API_TOKEN });
});

afterAll(async () => {
  await agents?.close();
  await env?.close();
});

/** The error a call ends with (the test fails if it succeeds). */
async function failure(call: Promise<unknown>): Promise<PromptApiError> {
  const outcome = await call.then(
    (value) => ({ value }),
    (err: unknown) => ({ err }),
  );
  if (!("err" in outcome)) throw new Error(`expected a refusal, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.err).toBeInstanceOf(PromptApiError);
  return outcome.err as PromptApiError;
}

async function phaseIs(name: string, phase: string): Promise<Agent> {
  return eventually(
    `Agent ${name} ${phase}`,
    async () => {
      const agent = await agents.get(name);
      return agent && phaseOf(agent) === phase ? agent : undefined;
    },
    120_000,
    250,
  );
}

describe("PromptApiClient against the controller's prompt API", () => {
  it("401 for a wrong token: PromptUnauthorizedError", async () => {
    const wrong = new PromptApiClient({ baseUrl: env.apiUrl, token: "not-the-token" });
    const err = await failure(wrong.prompt(env.ns, "anyone", "hi"));
    expect(err).toBeInstanceOf(PromptUnauthorizedError);
    expect(err).toMatchObject({ status: 401, serverMessage: "the bearer token is missing or wrong" });
  });

  it("404 for an Agent that does not exist and for another namespace: PromptNotFoundError", async () => {
    const missing = await failure(api.prompt(env.ns, "nobody", "hi"));
    expect(missing).toBeInstanceOf(PromptNotFoundError);
    expect(missing.serverMessage).toBe("Agent nobody not found");
    expect(missing.message).toBe(
      `POST /v1/namespaces/${env.ns}/agents/nobody/prompt: 404 Agent nobody not found`,
    );
    const elsewhere = await failure(api.close("somewhere-else", "nobody"));
    expect(elsewhere).toBeInstanceOf(PromptNotFoundError);
    expect(elsewhere.serverMessage).toBe(`this controller serves namespace ${env.ns}`);
  });

  it("400 for an empty prompt and 413 for a body over 200 KiB, from the controller", async () => {
    const empty = await failure(api.prompt(env.ns, "anyone", ""));
    expect(empty).toBeInstanceOf(PromptBadRequestError);
    expect(empty.serverMessage).toBe("the body is not JSON with a non-empty prompt string");
    const huge = await failure(api.prompt(env.ns, "anyone", "x".repeat(210 * 1024)));
    expect(huge).toBeInstanceOf(PromptTooLargeError);
    expect(huge.serverMessage).toBe("request body too large");
  });

  it("409 for a Pending Agent and for a Running one that is not a realtime run: PromptConflictError", async () => {
    await agents.create({ metadata: { name: "busy" }, spec: { stationRef: "one-at-a-time" } });
    await phaseIs("busy", "Running");
    await agents.create({ metadata: { name: "waiting" }, spec: { stationRef: "one-at-a-time" } });
    // Queued behind "busy", which never ends.
    await eventually("waiting queued", async () =>
      (await agents.get("waiting"))?.status?.conditions?.some(
        (c) => c.type === "Queued" && c.status === "True",
      ),
    );
    const pending = await failure(api.prompt(env.ns, "waiting", "hi"));
    expect(pending).toBeInstanceOf(PromptConflictError);
    expect(pending.serverMessage).toBe("Agent waiting is Pending, not a running session");
    const interactive = await failure(api.close(env.ns, "busy"));
    expect(interactive).toBeInstanceOf(PromptConflictError);
    expect(interactive.serverMessage).toBe("Agent busy is not a realtime run");
  });

  it("503 while the session does not serve: retried after Retry-After (2 s), then PromptUnavailableError", async () => {
    await agents.create({
      metadata: { name: "unplaced" },
      spec: { stationRef: "rt-nowhere", parameters: { topic: "x" } },
    });
    await phaseIs("unplaced", "Running");
    const waits: number[] = [];
    const patient = new PromptApiClient({
      baseUrl: env.apiUrl,
      token: API_TOKEN,
      maxRetries: 2,
      sleep: async (ms, signal) => {
        waits.push(ms);
        await sleep(ms, undefined, signal ? { signal } : undefined);
      },
    });
    const err = await failure(patient.prompt(env.ns, "unplaced", "hello?"));
    expect(err).toBeInstanceOf(PromptUnavailableError);
    expect(err).toMatchObject({
      status: 503,
      serverMessage: "the session is not serving yet",
      retryAfterMs: 2000,
      attempts: 3,
    });
    expect(waits).toEqual([2000, 2000]);
    const noRetry = new PromptApiClient({ baseUrl: env.apiUrl, token: API_TOKEN, maxRetries: 0 });
    const closeErr = await failure(noRetry.close(env.ns, "unplaced"));
    expect(closeErr).toMatchObject({ status: 503, attempts: 1, retryAfterMs: 2000 });
  });

  it.skipIf(RUN_POD_SKIP !== "")(
    "a real session: prompt (turn, queued, sessionId), 413 and 429 from the supervisor, close, 409 after it, Succeeded",
    async () => {
      const name = "sess";
      await agents.create({
        metadata: { name },
        spec: { stationRef: "rt", parameters: { topic: "[gate sess-first]" } },
      });
      await phaseIs(name, "Running");
      // Turn 1 (the definition's prompt) has started in the pod and waits at its gate.
      await eventually(
        "turn 1 running in the pod",
        () => env.journal.entries().some((e) => e.env.AGENT_NAME === name),
        120_000,
        250,
      );

      // Until the pod is Ready the API answers 503; the client waits the Retry-After and tries again.
      const waits: number[] = [];
      const patient = new PromptApiClient({
        baseUrl: env.apiUrl,
        token: API_TOKEN,
        maxRetries: 60,
        sleep: async (ms) => {
          waits.push(ms);
          await sleep(ms);
        },
      });
      const first = await patient.prompt(env.ns, name, "Add a test.");
      expect(waits.every((ms) => ms === 2000)).toBe(true);
      expect(first.turn).toBe(2);
      expect(first.queued).toBe(1);
      // A fresh Claude session knows its id from the start, and the controller records it.
      expect(first.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      expect((await agents.get(name))?.status?.sessionId).toBe(first.sessionId);

      const tooLarge = await failure(api.prompt(env.ns, name, "y".repeat(102_401)));
      expect(tooLarge).toBeInstanceOf(PromptTooLargeError);
      expect(tooLarge.serverMessage).toBe("prompt exceeds 102400 bytes");

      for (let i = 2; i <= 16; i++) {
        const reply = await api.prompt(env.ns, name, `Prompt ${i}.`);
        expect(reply).toEqual({ turn: i + 1, queued: i, sessionId: first.sessionId });
      }
      const full = await failure(api.prompt(env.ns, name, "One too many."));
      expect(full).toBeInstanceOf(PromptQueueFullError);
      expect(full).toMatchObject({ status: 429, serverMessage: "too many queued prompts" });

      expect(await api.close(env.ns, name)).toEqual({ queued: 16 });
      const again = await failure(api.close(env.ns, name));
      expect(again).toBeInstanceOf(PromptConflictError);
      expect(again.serverMessage).toBe("the session is ending");
      const late = await failure(api.prompt(env.ns, name, "Too late."));
      expect(late).toBeInstanceOf(PromptConflictError);
      expect(late.serverMessage).toBe("the session is ending");

      env.gates.open("sess-first");
      const done = await agents.waitForTerminal(name, { timeoutMs: 240_000 });
      expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0, sessionId: first.sessionId });
      // Turn 1 and the 16 accepted prompts ran, one CLI process each.
      expect(env.journal.entries().filter((e) => e.env.AGENT_NAME === name)).toHaveLength(17);
    },
    300_000,
  );
});
