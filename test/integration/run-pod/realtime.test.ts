/**
 * End to end, realtime sessions (docs/prompt-api.md, docs/supervisor.md#realtime-sessions, docs/decisions.md D-39 to D-46): the controller
 * (REALTIME_ENABLED) creates the Job, the real node runs the real init and the real supervisor in
 * session mode on the pod's own loopback IP, and every prompt goes through the controller's prompt
 * API served over HTTP (the server the controller runs on 8082, here on a free port) with the
 * api-token; the supervisor runs each as a turn of the fake CLI.
 *
 * Nothing here depends on speed: turns that must stay busy while prompts pile up wait on a gate
 * (`[gate <name>]` in their prompt, FakeCliScript.gates) that the test opens when it is done, and
 * the fake CLIs keep a transcript in their vendor's state directory, so a turn that does not
 * continue its session, or a resume that did not restore it, shows in the answers.
 *
 * One controller, one namespace, one prompt API for the whole file; the sessions run concurrently.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controllerPromptApi, startControllerPromptApi } from "../../../src/controller/prompt-api-wiring.js";
import type { Agent } from "../../../src/core/types.js";
import { AGENTS } from "../../../src/kube/resources.js";
import { type PromptApiServer, runToken } from "../../../src/prompt-api/index.js";
import { type CliName, parseInvocation } from "../../fakes/cli/fake-cli.js";
import { createFakeCliGates, type FakeCliGates, type FakeCliScript } from "../../fakes/cli/script.js";
import { eventually, podReachableHost } from "../../harness/context.js";
import {
  createAgent,
  createDefinition,
  createStation,
  finishedAgent,
  RUN_POD_SKIP,
  type RunPodEnv,
  runPod,
  startRunPodEnv,
} from "./setup.js";

/** A well-formed claude session id that no run ever saved. */
const MISSING_SESSION = "00000000-0000-4000-8000-000000000000";

const API_TOKEN = "rt-caller-token";
const SIGNING_KEY = "rt-signing-key";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const quiet = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

let env: RunPodEnv;
let api: PromptApiServer;
let gates: FakeCliGates;
let side: SideServer;

beforeAll(async () => {
  if (RUN_POD_SKIP !== "") return;
  env = await startRunPodEnv(
    "run-pod-rt",
    {},
    { REALTIME_ENABLED: "true", REALTIME_API_TOKEN: API_TOKEN, REALTIME_SIGNING_KEY: SIGNING_KEY },
  );
  api = await startControllerPromptApi({
    config: { namespace: env.ns, realtimeApiToken: API_TOKEN, realtimeSigningKey: SIGNING_KEY },
    client: env.client,
    port: 0,
    host: "127.0.0.1",
    logger: quiet,
  });
  gates = await createFakeCliGates(podReachableHost());
  side = await startSideServer();
}, 120_000);
afterAll(async () => {
  await api?.close(1000);
  await side?.close();
  await gates?.remove();
  await env?.close();
});

// ---------------------------------------------------------------------------------------------
// Helpers

interface Answer {
  status: number;
  body: Record<string, unknown>;
  retryAfter: string | null;
  wwwAuthenticate: string | null;
}

/** POSTs to the controller's prompt API; `body` is JSON-encoded unless it is `{ raw }`. */
async function post(
  name: string,
  route: string,
  body?: unknown,
  options: { token?: string | null; ns?: string; method?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  const token = options.token === undefined ? API_TOKEN : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const raw =
    body === undefined
      ? undefined
      : typeof body === "object" && body !== null && "raw" in body
        ? (body as { raw: string }).raw
        : JSON.stringify(body);
  const res = await fetch(
    `http://127.0.0.1:${api.port}/v1/namespaces/${options.ns ?? env.ns}/agents/${name}/${route}`,
    { method: options.method ?? "POST", headers, ...(raw === undefined ? {} : { body: raw }) },
  );
  const text = await res.text();
  return {
    status: res.status,
    body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>),
    retryAfter: res.headers.get("retry-after"),
    wwwAuthenticate: res.headers.get("www-authenticate"),
  };
}

const prompt = (name: string, text: string) => post(name, "prompt", { prompt: text });
const close = (name: string) => post(name, "close");
const refused = (status: number, error: string) => ({ status, body: { error } });

/**
 * Sends `text` until the session accepts it. Before that, the only answers allowed are the ones a
 * session that is not serving yet gives: 409 while the Agent is Pending, 503 with Retry-After: 2
 * while its pod is not Ready. Returns the 202 and the 503s seen.
 */
async function untilAccepted(
  name: string,
  text: string,
): Promise<{ accepted: Answer; notServing: Answer[] }> {
  const notServing: Answer[] = [];
  const accepted = await eventually(
    `${name} accepts a prompt`,
    async () => {
      const reply = await prompt(name, text);
      if (reply.status === 202) return reply;
      if (reply.status === 503) notServing.push(reply);
      else expect(reply).toMatchObject(refused(409, `Agent ${name} is Pending, not a running session`));
      return undefined;
    },
    120_000,
    250,
  );
  for (const r of notServing) {
    expect(r.retryAfter).toBe("2");
    expect(r.body).toEqual({ error: "the session is not serving yet" });
  }
  return { accepted, notServing };
}

const vendorModel: Record<Exclude<CliName, "opencode">, string> = {
  claude: "claude-sonnet-4-5",
  codex: "gpt-5-codex",
  gemini: "gemini-2.5-pro",
};
type RtVendor = keyof typeof vendorModel;

/** A realtime definition, a Station whose fake CLI follows `script`, and the Agent. */
async function realtimeAgent(
  name: string,
  vendor: RtVendor,
  o: {
    script: FakeCliScript;
    prompt?: string;
    def?: Record<string, unknown>;
    agent?: Record<string, unknown>;
  },
): Promise<void> {
  await createDefinition(env, `def-${name}`, {
    model: vendorModel[vendor],
    execution: "realtime",
    permission_mode: "bypass",
    ...(o.prompt ? { prompt: o.prompt } : {}),
    output: { sinks: [{ type: "http", url: env.listener.url }] },
    ...o.def,
  });
  await createStation(env, `stn-${name}`, `def-${name}`, o.script);
  await createAgent(env, name, `stn-${name}`, o.agent);
}

const TRANSCRIPT_SCRIPT: FakeCliScript = { transcript: true, answer: "re: {prompt} (after: {transcript})" };
/** What a transcript-keeping fake answers to `prompts[i]`, having seen the ones before it. */
const transcriptAnswers = (prompts: string[], before: string[] = []) =>
  prompts.map((p, i) => `re: ${p} (after: ${[...before, ...prompts.slice(0, i)].join(" | ")})`);

/** The supervisor's lifecycle events for `name` (the init's are left out), in arrival order. */
function lifecycle(name: string): Record<string, unknown>[] {
  return env.listener.eventsFor(name).filter((e) => e.kind === "lifecycle" && e.phase !== "init");
}

/** The expected lifecycle of a session that ran `turns` turns, all succeeding, and ended with 0. */
function sessionLifecycle(turns: number): Record<string, unknown>[] {
  const events: Record<string, unknown>[] = [{ phase: "agent", status: "started" }];
  for (let turn = 1; turn <= turns; turn++) {
    events.push({ phase: "turn", status: "started", turn });
    events.push({ phase: "turn", status: "succeeded", turn, exitCode: 0 });
  }
  events.push({ phase: "agent", status: "succeeded", exitCode: 0 });
  return events;
}

/** The assistant's text in one of the vendor's tool-native lines, if it is one. */
function answerOf(vendor: RtVendor, e: Record<string, unknown>): string | undefined {
  if (vendor === "claude" && e.type === "assistant") {
    const content = (e.message as { content?: { text?: string }[] } | undefined)?.content;
    return content?.[0]?.text;
  }
  if (vendor === "codex" && e.type === "item.completed") return (e.item as { text?: string }).text;
  if (vendor === "gemini" && e.type === "message" && e.role === "assistant") return e.content as string;
  return undefined;
}

/** Per turn, in the order the sink received them, the answers between its started and ended events. */
function answersByTurn(name: string, vendor: RtVendor): string[][] {
  const byTurn: string[][] = [];
  let current: string[] | undefined;
  for (const e of env.listener.eventsFor(name)) {
    if (e.kind === "lifecycle" && e.phase === "turn") {
      if (e.status === "started") {
        current = [];
        byTurn.push(current);
      } else current = undefined;
      continue;
    }
    const text = answerOf(vendor, e);
    if (text !== undefined) {
      if (!current) throw new Error(`answer outside a turn for ${name}: ${JSON.stringify(e)}`);
      current.push(text);
    }
  }
  return byTurn;
}

/** The fake CLI's invocations for one Agent, in order, with what it read from each argv. */
function runsOf(name: string) {
  return env.journal
    .entries()
    .filter((e) => e.env.AGENT_NAME === name)
    .map((e) => ({ ...e, ...parseInvocation(e.cli, e.argv, "(none)") }));
}

async function agentStatus(name: string) {
  return (await env.client.get<Agent>(AGENTS, env.ns, name))?.status ?? {};
}

// ---------------------------------------------------------------------------------------------

describe.skipIf(RUN_POD_SKIP !== "")("realtime sessions on the local plane", () => {
  it.concurrent.each([
    // The queue is the supervisor's, the same for every vendor: one session fills it to the limit.
    { vendor: "claude" as const, scriptSession: undefined, fill: true },
    { vendor: "codex" as const, scriptSession: "0199a213-81c0-7800-8aa1-bbab2a035a53", fill: false },
    { vendor: "gemini" as const, scriptSession: "6a9d0e07-a34c-4645-bb32-009f63de3cd2", fill: false },
  ])(
    "$vendor: prompts run as turns in order, sessionId is patched, queued counts right (claude: to the 429), close drains and the Agent ends Succeeded",
    async ({ vendor, scriptSession, fill }) => {
      const name = `rt-${vendor}`;
      const initial = `Summarise tests. [gate ${name}-1]`;
      await realtimeAgent(name, vendor, {
        prompt: `Summarise {topic}. [gate ${name}-1]`,
        script: {
          ...TRANSCRIPT_SCRIPT,
          gates: gates.target,
          ...(scriptSession ? { sessionId: scriptSession } : {}),
        },
      });

      // Turn 1, the definition's prompt, is held at its gate; this prompt waits as turn 2.
      const second = `First question. [gate ${name}-2]`;
      const { accepted } = await untilAccepted(name, second);
      // Claude's id is chosen by the supervisor and known at once; Codex and Gemini learn it from
      // their first turn, which has not printed anything yet.
      const claudeId = vendor === "claude" ? (accepted.body.sessionId as string) : "";
      if (vendor === "claude") expect(claudeId).toMatch(UUID);
      expect(accepted.body).toEqual({ turn: 2, queued: 1, sessionId: claudeId });
      expect((await agentStatus(name)).sessionId ?? "").toBe(claudeId);

      // 16 prompts wait (turns 2–17); the running turn does not count; the 17th waiting one is refused.
      const waiting = [second];
      for (let turn = 3; fill && turn <= 17; turn++) {
        const text = `Question ${turn}.`;
        expect((await prompt(name, text)).body).toEqual({ turn, queued: turn - 1, sessionId: claudeId });
        waiting.push(text);
      }
      if (fill) {
        expect(await prompt(name, "One too many.")).toMatchObject(refused(429, "too many queued prompts"));
      }

      // Turn 1 ends; turn 2 starts and is held. A prompt now has a free place, and its reply
      // carries the id the first turn announced, which the controller records in status.sessionId.
      gates.open(`${name}-1`);
      await eventually(`${name}: turn 2 started`, () =>
        lifecycle(name).some((e) => e.phase === "turn" && e.status === "started" && e.turn === 2),
      );
      const sessionId = vendor === "claude" ? claudeId : (scriptSession as string);
      const last = "After turn 1.";
      // Turn 2 left the queue when it started: `queued` is what waits, this prompt included.
      const turns = waiting.length + 2;
      expect((await prompt(name, last)).body).toEqual({ turn: turns, queued: turns - 2, sessionId });
      waiting.push(last);
      expect((await agentStatus(name)).sessionId).toBe(sessionId);
      if (fill) {
        expect(await prompt(name, "Still too many.")).toMatchObject(refused(429, "too many queued prompts"));
      }

      // Close: nothing new is taken, a second close neither; what waits still runs.
      expect(await close(name)).toMatchObject({ status: 202, body: { queued: turns - 2 } });
      expect(await prompt(name, "After close.")).toMatchObject(refused(409, "the session is ending"));
      expect(await close(name)).toMatchObject(refused(409, "the session is ending"));
      gates.open(`${name}-2`);

      const agent = await finishedAgent(env, name, 120_000);
      expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0, sessionId });
      expect(await prompt(name, "Too late.")).toMatchObject(
        refused(409, `Agent ${name} is Succeeded, not a running session`),
      );

      // The sink got every turn's events, in order, each turn answering its own prompt with the
      // whole conversation before it.
      const prompts = [initial, ...waiting];
      expect(lifecycle(name)).toMatchObject(sessionLifecycle(turns));
      expect(answersByTurn(name, vendor)).toEqual(transcriptAnswers(prompts).map((a) => [a]));

      // One CLI process per turn: the first starts the session, every later one continues it.
      const runs = runsOf(name);
      expect(runs.map((r) => r.prompt)).toEqual(prompts);
      expect(runs.map((r) => r.resumedFrom)).toEqual([undefined, ...waiting.map(() => sessionId)]);
      if (vendor === "claude") {
        expect(runs[0]?.argv).toEqual(expect.arrayContaining(["--session-id", sessionId]));
        expect(runs[0]?.argv).not.toContain("--resume");
        expect(runs.slice(1).every((r) => !r.argv.includes("--session-id"))).toBe(true);
      }
      if (vendor === "codex") {
        expect(runs[0]?.argv.slice(0, 2)).toEqual(["exec", "--json"]);
        expect(runs[0]?.argv.slice(-2)).toEqual(["--", initial]);
        for (const r of runs.slice(1)) {
          expect(r.argv.slice(0, 3)).toEqual(["exec", "resume", sessionId]);
          // codex 0.169 takes `--` after `exec resume <id>` too: the prompt can never be an option.
          expect(r.argv.slice(-2)).toEqual(["--", r.prompt]);
        }
      }
      if (vendor === "gemini") {
        expect(runs[0]?.argv.some((a) => a.startsWith("--resume"))).toBe(false);
        expect(runs.slice(1).every((r) => r.argv.includes(`--resume=${sessionId}`))).toBe(true);
        expect(runs.slice(1).every((r) => r.argv.at(-1) === `--prompt=${r.prompt}`)).toBe(true);
      }
      // The CLI never sees the run token's hash.
      expect(runs.every((r) => r.env.AGENT_REALTIME_TOKEN_SHA256 === undefined)).toBe(true);
    },
    240_000,
  );

  it.concurrent("claude: 503 with Retry-After: 2 until the pod is Ready; the literal 400/401/404/413 answers; the pod checks the run token", async () => {
    const name = "rt-answers";
    await realtimeAgent(name, "claude", {
      prompt: `Summarise {topic}. [gate ${name}-1]`,
      script: { gates: gates.target },
      // The init downloads this before the supervisor may start; the side server holds it.
      agent: { files: [{ path: "brief.md", url: `${side.url}/held/brief.md` }] },
    });
    await eventually(`${name}'s init asks for its file`, () => side.held.length > 0, 120_000, 250);
    // The run's Job and pod exist, but the supervisor cannot be serving while the init waits.
    const early = await eventually(
      `${name} Running`,
      async () => {
        const reply = await prompt(name, "Too early.");
        if (reply.status === 409) {
          expect(reply.body).toEqual({ error: `Agent ${name} is Pending, not a running session` });
          return undefined;
        }
        return reply;
      },
      60_000,
      250,
    );
    expect(early).toMatchObject({ ...refused(503, "the session is not serving yet"), retryAfter: "2" });
    side.release();

    const { accepted } = await untilAccepted(name, "Second.");
    const sessionId = accepted.body.sessionId as string;
    expect(accepted.body).toEqual({ turn: 2, queued: 1, sessionId: expect.stringMatching(UUID) });

    // The controller's own answers.
    const unauthorized = {
      ...refused(401, "the bearer token is missing or wrong"),
      wwwAuthenticate: "Bearer",
    };
    expect(await post(name, "prompt", { prompt: "x" }, { token: null })).toMatchObject(unauthorized);
    expect(await post(name, "prompt", { prompt: "x" }, { token: "wrong" })).toMatchObject(unauthorized);
    const badBody = refused(400, "the body is not JSON with a non-empty prompt string");
    expect(await post(name, "prompt", { raw: "not json" })).toMatchObject(badBody);
    expect(await prompt(name, "")).toMatchObject(badBody);
    expect(await post(name, "prompt", { prompt: 5 })).toMatchObject(badBody);
    expect(await post(name, "prompt", { raw: `{"prompt":"${"x".repeat(200 * 1024)}"}` })).toMatchObject(
      refused(413, "request body too large"),
    );
    expect(await post(name, "prompt", { prompt: "x" }, { ns: "elsewhere" })).toMatchObject(
      refused(404, `this controller serves namespace ${env.ns}`),
    );
    expect(await prompt("rt-nobody", "x")).toMatchObject(refused(404, "Agent rt-nobody not found"));
    expect(await post(name, "status")).toMatchObject(refused(404, "not found"));
    expect(await post(name, "prompt", undefined, { method: "GET" })).toMatchObject(refused(404, "not found"));

    // The supervisor's answers, relayed unchanged: the prompt limit counts UTF-8 bytes.
    expect(await prompt(name, "x".repeat(102401))).toMatchObject(refused(413, "prompt exceeds 102400 bytes"));
    expect(await prompt(name, "é".repeat(51201))).toMatchObject(refused(413, "prompt exceeds 102400 bytes"));
    expect(await prompt(name, "a\u0000b")).toMatchObject(
      refused(400, "the prompt contains a NUL character, which cannot be passed as an argument"),
    );
    expect(await prompt(name, "lone \ud800 surrogate")).toMatchObject(
      refused(400, "the prompt is not valid UTF-16 (a lone surrogate)"),
    );
    const largest = "y".repeat(102400);
    expect((await prompt(name, largest)).body).toEqual({ turn: 3, queued: 2, sessionId });

    // The pod's endpoint itself: /healthz is open, the rest wants the run's own token.
    const pod = await runPod(env, name);
    const podUrl = `http://${pod?.status?.podIP}:8090`;
    const health = await fetch(`${podUrl}/healthz`);
    expect(health.status).toBe(200);
    const direct = async (path: string, token: string | undefined, body?: string) => {
      const res = await fetch(`${podUrl}${path}`, {
        method: "POST",
        headers: token ? { authorization: `Bearer ${token}` } : {},
        ...(body === undefined ? {} : { body }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const podUnauthorized = refused(401, "the bearer token is missing or wrong");
    expect(await direct("/v1/prompt", undefined, '{"prompt":"x"}')).toEqual(podUnauthorized);
    expect(await direct("/v1/prompt", API_TOKEN, '{"prompt":"x"}')).toEqual(podUnauthorized);
    expect(await direct("/v1/close", API_TOKEN)).toEqual(podUnauthorized);
    expect(await direct("/v1/other", API_TOKEN)).toEqual(refused(404, "not found"));
    const uid = (await env.client.get<Agent>(AGENTS, env.ns, name))?.metadata?.uid ?? "";
    expect(await direct("/v1/prompt", runToken(SIGNING_KEY, uid), "not json")).toEqual(
      refused(400, "the body is not JSON with a non-empty prompt string"),
    );
    // A controller whose signing-key differs signs with a token the pod refuses (docs/decisions.md D-40: rotating
    // the key breaks running sessions); the controller reports the pod's 401 as a bad answer.
    const rotated = controllerPromptApi({
      config: { namespace: env.ns, realtimeApiToken: API_TOKEN, realtimeSigningKey: "rotated-key" },
      client: env.client,
      logger: quiet,
    });
    const viaRotated = await rotated.request(`/v1/namespaces/${env.ns}/agents/${name}/prompt`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "x" }),
    });
    expect(viaRotated.status).toBe(502);
    expect(await viaRotated.json()).toEqual({
      error: "unexpected answer from the session's supervisor (401)",
    });

    expect(await close(name)).toMatchObject({ status: 202, body: { queued: 2 } });
    gates.open(`${name}-1`);
    const agent = await finishedAgent(env, name, 120_000);
    expect(agent.status).toMatchObject({ phase: "Succeeded", sessionId });
    expect(lifecycle(name)).toMatchObject(sessionLifecycle(3));
    // Only the accepted prompts ran, the largest one whole.
    const runs = runsOf(name);
    expect(runs.map((r) => r.prompt)).toEqual(["Summarise tests. [gate rt-answers-1]", "Second.", largest]);
  }, 240_000);

  it.concurrent.each([
    { vendor: "claude" as const, scriptSession: undefined },
    { vendor: "codex" as const, scriptSession: "0199a213-9f3e-7a21-b4c5-2d6e8f0a1b2c" },
    { vendor: "gemini" as const, scriptSession: "1f2e3d4c-5b6a-4789-8a9b-0c1d2e3f4a5b" },
  ])(
    "$vendor: a resumed session continues the saved conversation, without the definition's prompt",
    async ({ vendor, scriptSession }) => {
      const first = `rs-${vendor}-a`;
      const script = { ...TRANSCRIPT_SCRIPT, ...(scriptSession ? { sessionId: scriptSession } : {}) };
      const conversation = { resources: { conversation: { source: `${side.url}/conv` } } };
      await realtimeAgent(first, vendor, { script, def: conversation });
      await untilAccepted(first, "Remember the number 42.");
      expect(await close(first)).toMatchObject({ status: 202 });
      const done = await finishedAgent(env, first, 120_000);
      expect(done.status?.phase).toBe("Succeeded");
      const sessionId = done.status?.sessionId ?? "";
      expect(sessionId).toEqual(vendor === "claude" ? expect.stringMatching(UUID) : scriptSession);
      const savesBefore = side.saves(sessionId);
      expect(savesBefore).toBeGreaterThan(0);

      // Same definition, resuming: the init restores the archive, the supervisor sends no prompt of
      // its own, and the first prompt is turn 1 of a session that knows its id from the start.
      const second = `rs-${vendor}-b`;
      await createAgent(env, second, `stn-${first}`, { resumeSession: sessionId });
      // docs/decisions.md D-44: the resumed session keeps its id, recorded with Running before any prompt.
      const running = await eventually(
        `${second} Running`,
        async () => {
          const st = await agentStatus(second);
          return st.phase === "Running" ? st : undefined;
        },
        120_000,
        250,
      );
      expect(running.sessionId).toBe(sessionId);
      const { accepted } = await untilAccepted(second, "Which number?");
      expect(accepted.body).toEqual({ turn: 1, queued: 1, sessionId });
      expect((await agentStatus(second)).sessionId).toBe(sessionId);
      expect(await close(second)).toMatchObject({ status: 202, body: { queued: 0 } });
      const resumed = await finishedAgent(env, second, 120_000);
      expect(resumed.status).toMatchObject({ phase: "Succeeded", sessionId });
      expect(lifecycle(second)).toMatchObject(sessionLifecycle(1));

      // The restored transcript is what the CLI continued from.
      expect(answersByTurn(second, vendor)).toEqual(
        transcriptAnswers(["Which number?"], ["Summarise tests.", "Remember the number 42."]).map((a) => [a]),
      );
      const runs = runsOf(second);
      expect(runs.map((r) => [r.prompt, r.resumedFrom])).toEqual([["Which number?", sessionId]]);
      const argv = runs[0]?.argv ?? [];
      if (vendor === "claude") {
        expect(argv).toEqual(expect.arrayContaining(["--resume", sessionId]));
        expect(argv).not.toContain("--session-id");
        expect(argv).not.toContain("--fork-session");
      }
      if (vendor === "codex") {
        expect(argv.slice(0, 3)).toEqual(["exec", "resume", sessionId]);
        expect(argv.slice(-2)).toEqual(["--", "Which number?"]);
      }
      if (vendor === "gemini") expect(argv).toContain(`--resume=${sessionId}`);
      // The continued conversation is saved again under the same id.
      expect(side.saves(sessionId)).toBeGreaterThan(savesBefore);
      expect(gunzipSync(side.saved(sessionId) ?? Buffer.alloc(0)).toString("latin1")).toContain(
        '"Which number?"',
      );
    },
    240_000,
  );

  it.concurrent("a session that cannot be restored fails the init; opencode cannot run a realtime session", async () => {
    const name = "rs-missing";
    await realtimeAgent(name, "claude", {
      script: TRANSCRIPT_SCRIPT,
      def: { resources: { conversation: { source: `${side.url}/conv` } } },
      agent: { resumeSession: MISSING_SESSION },
    });
    await createDefinition(env, "def-rt-opencode", {
      model: "opencode/big-pickle",
      execution: "realtime",
    });
    await createStation(env, "stn-rt-opencode", "def-rt-opencode", {});
    await createAgent(env, "rt-opencode", "stn-rt-opencode");

    const failed = await finishedAgent(env, name, 120_000);
    expect(failed.status?.phase).toBe("Failed");
    // The init's own cause, whichever order its stdout and stderr reached the log in.
    expect(failed.status?.failureReason).toBe(
      `init failed: [init] conversation: cannot restore session ${MISSING_SESSION}: no saved conversation (HTTP 404)`,
    );
    expect(env.listener.eventsFor(name)).toContainEqual(
      expect.objectContaining({
        kind: "lifecycle",
        phase: "init",
        status: "failed",
        tool: "conversation",
        reason: "restore",
      }),
    );
    expect(runsOf(name)).toEqual([]);

    const opencode = await finishedAgent(env, "rt-opencode", 60_000);
    expect(opencode.status).toMatchObject({
      phase: "Failed",
      failureReason: "opencode cannot run a realtime session",
    });
  }, 240_000);
});

// ---------------------------------------------------------------------------------------------
// A local server standing in for the conversation store (`/conv/<id>`: POST saves, GET restores)
// and for a file download the test holds (`/held/…`: answered only after `release()`).

interface SideServer {
  url: string;
  /** Held downloads waiting for release(). */
  held: unknown[];
  release(): void;
  saves(id: string): number;
  saved(id: string): Buffer | undefined;
  close(): Promise<void>;
}

async function startSideServer(): Promise<SideServer> {
  const store = new Map<string, Buffer>();
  const saveCount = new Map<string, number>();
  const held: (() => void)[] = [];
  let released = false;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0] ?? "";
      if (path.startsWith("/held/")) {
        const answer = () => res.writeHead(200, { "content-type": "text/plain" }).end("the brief\n");
        if (released) answer();
        else held.push(answer);
        return;
      }
      if (path.startsWith("/conv/")) {
        const id = decodeURIComponent(path.slice("/conv/".length));
        if (req.method === "POST") {
          store.set(id, Buffer.concat(chunks));
          saveCount.set(id, (saveCount.get(id) ?? 0) + 1);
          res.writeHead(201).end();
          return;
        }
        const archive = store.get(id);
        if (req.method === "GET" && archive) {
          res.writeHead(200, { "content-type": "application/gzip" }).end(archive);
          return;
        }
      }
      res.writeHead(404).end("not found\n");
    });
  });
  await new Promise<void>((r) => server.listen(0, podReachableHost(), () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${podReachableHost()}:${port}`,
    held,
    release: () => {
      released = true;
      for (const answer of held.splice(0)) answer();
    },
    saves: (id) => saveCount.get(id) ?? 0,
    saved: (id) => store.get(id),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
