/**
 * The prompt API through Hono's app.request (no socket): one row per status code and message of
 * docs/prompt-api.md#status-codes (the specification's wording), each message pinned literally.
 */
import { describe, expect, it } from "vitest";
import {
  API_TOKEN,
  memoryLogger,
  NS,
  RUN_TOKEN,
  runningAgent,
  SIGNING_KEY,
} from "../../test/support/prompt-api.js";
import { KubeApiError } from "../kube/errors.js";
import { createPromptApi, type PromptApiDeps } from "./app.js";
import type { ForwardRequest, ForwardResponse } from "./forward.js";
import type { PromptApiAgent, RunPodState } from "./session.js";

const AUTH = { authorization: `Bearer ${API_TOKEN}` };
const SERVING: RunPodState = { kind: "serving", baseUrl: "http://10.1.2.3:8090" };
const PROMPT_PATH = `/v1/namespaces/${NS}/agents/a/prompt`;
const CLOSE_PATH = `/v1/namespaces/${NS}/agents/a/close`;

type Supervisor = (req: ForwardRequest) => ForwardResponse | Promise<ForwardResponse>;
const answer =
  (status: number, body: unknown): Supervisor =>
  () => ({ status, body: typeof body === "string" ? body : JSON.stringify(body) });
const ACCEPT_PROMPT = answer(202, { turn: 2, queued: 1, sessionId: "" });
const ACCEPT_CLOSE = answer(202, { queued: 3 });

interface Setup {
  agents?: PromptApiAgent[];
  pod?: RunPodState | (() => Promise<RunPodState>);
  supervisor?: Supervisor;
  patchSessionId?: PromptApiDeps["patchSessionId"];
  /** getAgent rejects with this (the API server failed the read). */
  agentLookupError?: Error;
}

function harness(setup: Setup = {}) {
  const forwarded: ForwardRequest[] = [];
  const patches: Array<{ name: string | undefined; sessionId: string }> = [];
  const logger = memoryLogger();
  const agents = new Map((setup.agents ?? [runningAgent("a")]).map((a) => [a.metadata.name, a]));
  const app = createPromptApi({
    namespace: NS,
    apiToken: API_TOKEN,
    signingKey: SIGNING_KEY,
    getAgent: (ns, name) => {
      if (setup.agentLookupError) return Promise.reject(setup.agentLookupError);
      return ns === NS ? agents.get(name) : undefined;
    },
    resolveRunPod: () => (typeof setup.pod === "function" ? setup.pod() : (setup.pod ?? SERVING)),
    patchSessionId:
      setup.patchSessionId ??
      (async (agent, sessionId) => {
        patches.push({ name: agent.metadata.name, sessionId });
        const name = agent.metadata.name ?? "";
        agents.set(name, { ...agent, status: { ...agent.status, sessionId } });
      }),
    forward: async (req) => {
      forwarded.push(req);
      return (setup.supervisor ?? ACCEPT_PROMPT)(req);
    },
    logger,
  });
  return { app, forwarded, patches, logger, agents };
}

interface Row {
  name: string;
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  setup?: Setup;
  status: number;
  response: unknown;
  retryAfter?: string;
  forwarded?: boolean;
}

const prompt = (text: string) => JSON.stringify({ prompt: text });

const rows: Row[] = [
  // 202
  {
    name: "202 prompt queued",
    body: prompt("hi"),
    status: 202,
    response: { turn: 2, queued: 1, sessionId: "" },
    forwarded: true,
  },
  {
    name: "202 close",
    path: CLOSE_PATH,
    setup: { supervisor: ACCEPT_CLOSE },
    status: 202,
    response: { queued: 3 },
    forwarded: true,
  },
  // 400
  {
    name: "400 body not JSON",
    body: "prompt=hi",
    status: 400,
    response: { error: "the body is not JSON with a non-empty prompt string" },
  },
  {
    name: "400 empty body",
    status: 400,
    response: { error: "the body is not JSON with a non-empty prompt string" },
  },
  {
    name: "400 empty prompt",
    body: prompt(""),
    status: 400,
    response: { error: "the body is not JSON with a non-empty prompt string" },
  },
  {
    name: "400 prompt not a string",
    body: '{"prompt":42}',
    status: 400,
    response: { error: "the body is not JSON with a non-empty prompt string" },
  },
  {
    name: "400 no prompt field",
    body: '{"text":"hi"}',
    status: 400,
    response: { error: "the body is not JSON with a non-empty prompt string" },
  },
  {
    name: "400 JSON array",
    body: '["hi"]',
    status: 400,
    response: { error: "the body is not JSON with a non-empty prompt string" },
  },
  {
    name: "400 from the supervisor passes through",
    body: prompt("hi"),
    setup: { supervisor: answer(400, { error: "bad prompt" }) },
    status: 400,
    response: { error: "bad prompt" },
    forwarded: true,
  },
  // 401
  {
    name: "401 no Authorization",
    headers: {},
    body: prompt("hi"),
    status: 401,
    response: { error: "the bearer token is missing or wrong" },
  },
  {
    name: "401 wrong token",
    headers: { authorization: "Bearer nope" },
    body: prompt("hi"),
    status: 401,
    response: { error: "the bearer token is missing or wrong" },
  },
  {
    name: "401 wrong scheme",
    headers: { authorization: `Basic ${API_TOKEN}` },
    body: prompt("hi"),
    status: 401,
    response: { error: "the bearer token is missing or wrong" },
  },
  {
    name: "401 the run token is not the api token",
    headers: { authorization: `Bearer ${RUN_TOKEN}` },
    body: prompt("hi"),
    status: 401,
    response: { error: "the bearer token is missing or wrong" },
  },
  {
    name: "401 on close",
    path: CLOSE_PATH,
    headers: {},
    status: 401,
    response: { error: "the bearer token is missing or wrong" },
  },
  // 404
  {
    name: "404 other namespace",
    path: "/v1/namespaces/default/agents/a/prompt",
    body: prompt("hi"),
    status: 404,
    response: { error: "this controller serves namespace ai-agents" },
  },
  {
    name: "404 other namespace on close",
    path: "/v1/namespaces/kube-system/agents/a/close",
    status: 404,
    response: { error: "this controller serves namespace ai-agents" },
  },
  {
    name: "404 Agent missing",
    path: `/v1/namespaces/${NS}/agents/ghost/prompt`,
    body: prompt("hi"),
    status: 404,
    response: { error: "Agent ghost not found" },
  },
  {
    name: "404 Agent missing on close",
    path: `/v1/namespaces/${NS}/agents/ghost/close`,
    status: 404,
    response: { error: "Agent ghost not found" },
  },
  { name: "404 GET on prompt", method: "GET", status: 404, response: { error: "not found" } },
  {
    name: "404 PUT on close",
    method: "PUT",
    path: CLOSE_PATH,
    status: 404,
    response: { error: "not found" },
  },
  {
    name: "404 DELETE",
    method: "DELETE",
    path: `/v1/namespaces/${NS}/agents/a`,
    status: 404,
    response: { error: "not found" },
  },
  {
    name: "404 unknown action",
    path: `/v1/namespaces/${NS}/agents/a/resume`,
    status: 404,
    response: { error: "not found" },
  },
  {
    name: "404 trailing slash",
    path: `${PROMPT_PATH}/`,
    body: prompt("hi"),
    status: 404,
    response: { error: "not found" },
  },
  { name: "404 root", method: "GET", path: "/", status: 404, response: { error: "not found" } },
  {
    name: "404 pod route on the controller",
    path: "/v1/prompt",
    body: prompt("hi"),
    status: 404,
    response: { error: "not found" },
  },
  {
    name: "404 unknown path without a token",
    path: "/v1/nothing",
    headers: {},
    status: 404,
    response: { error: "not found" },
  },
  // 409
  {
    name: "409 Pending",
    body: prompt("hi"),
    setup: { agents: [runningAgent("a", { phase: "Pending", jobName: "" })] },
    status: 409,
    response: { error: "Agent a is Pending, not a running session" },
  },
  {
    name: "409 no status yet",
    body: prompt("hi"),
    setup: { agents: [{ metadata: { name: "a", uid: "u" } }] },
    status: 409,
    response: { error: "Agent a is Pending, not a running session" },
  },
  {
    name: "409 Running without a Job",
    body: prompt("hi"),
    setup: { agents: [runningAgent("a", { jobName: "" })] },
    status: 409,
    response: { error: "Agent a is Running, not a running session" },
  },
  {
    name: "409 Succeeded",
    body: prompt("hi"),
    setup: { agents: [runningAgent("a", { phase: "Succeeded" })] },
    status: 409,
    response: { error: "Agent a is Succeeded, not a running session" },
  },
  {
    name: "409 Failed on close",
    path: CLOSE_PATH,
    setup: { agents: [runningAgent("a", { phase: "Failed" })] },
    status: 409,
    response: { error: "Agent a is Failed, not a running session" },
  },
  {
    name: "409 not realtime",
    body: prompt("hi"),
    setup: { pod: { kind: "not-realtime" } },
    status: 409,
    response: { error: "Agent a is not a realtime run" },
  },
  {
    name: "409 batch run",
    body: prompt("hi"),
    setup: { agents: [runningAgent("a", { jobName: "", batchId: "msgbatch_1" })] },
    status: 409,
    response: { error: "Agent a is not a realtime run" },
  },
  {
    name: "409 not realtime on close",
    path: CLOSE_PATH,
    setup: { pod: { kind: "not-realtime" } },
    status: 409,
    response: { error: "Agent a is not a realtime run" },
  },
  {
    name: "409 session ending (prompt)",
    body: prompt("hi"),
    setup: { supervisor: answer(409, { error: "the session is ending" }) },
    status: 409,
    response: { error: "the session is ending" },
    forwarded: true,
  },
  {
    name: "409 session ending (second close)",
    path: CLOSE_PATH,
    setup: { supervisor: answer(409, { error: "the session is ending" }) },
    status: 409,
    response: { error: "the session is ending" },
    forwarded: true,
  },
  // 413
  {
    name: "413 body over 200 KiB",
    body: prompt("x".repeat(204800)),
    status: 413,
    response: { error: "request body too large" },
  },
  {
    name: "413 close with a body over 200 KiB",
    path: CLOSE_PATH,
    body: "x".repeat(204801),
    status: 413,
    response: { error: "request body too large" },
  },
  {
    name: "413 prompt over 102400 bytes (supervisor)",
    body: prompt("x".repeat(102401)),
    setup: { supervisor: answer(413, { error: "prompt exceeds 102400 bytes" }) },
    status: 413,
    response: { error: "prompt exceeds 102400 bytes" },
    forwarded: true,
  },
  // 429
  {
    name: "429 queue full (supervisor)",
    body: prompt("hi"),
    setup: { supervisor: answer(429, { error: "too many queued prompts" }) },
    status: 429,
    response: { error: "too many queued prompts" },
    forwarded: true,
  },
  // 502
  {
    name: "502 supervisor 500",
    body: prompt("hi"),
    setup: { supervisor: answer(500, { error: "boom" }) },
    status: 502,
    response: { error: "unexpected answer from the session's supervisor (500)" },
    forwarded: true,
  },
  {
    name: "502 supervisor refuses the run token",
    body: prompt("hi"),
    setup: { supervisor: answer(401, { error: "no" }) },
    status: 502,
    response: { error: "unexpected answer from the session's supervisor (401)" },
    forwarded: true,
  },
  {
    name: "502 supervisor 202 with malformed JSON",
    body: prompt("hi"),
    setup: { supervisor: answer(202, "{turn:1") },
    status: 502,
    response: { error: "unexpected answer from the session's supervisor (202)" },
    forwarded: true,
  },
  {
    name: "502 close answered with a prompt shape missing queued",
    path: CLOSE_PATH,
    setup: { supervisor: answer(202, { turn: 1 }) },
    status: 502,
    response: { error: "unexpected answer from the session's supervisor (202)" },
    forwarded: true,
  },
  // 503
  {
    name: "503 pod not serving",
    body: prompt("hi"),
    setup: { pod: { kind: "not-serving" } },
    status: 503,
    response: { error: "the session is not serving yet" },
    retryAfter: "2",
  },
  {
    name: "503 pod not serving on close",
    path: CLOSE_PATH,
    setup: { pod: { kind: "not-serving" } },
    status: 503,
    response: { error: "the session is not serving yet" },
    retryAfter: "2",
  },
  {
    // The API server failing the Agent read is a 503 to retry (the seed's message), not a 500.
    name: "503 Agent lookup failed",
    body: prompt("hi"),
    setup: {
      agentLookupError: new KubeApiError(
        503,
        "ServiceUnavailable",
        "GET agents/a: 503 etcdserver: leader changed",
      ),
    },
    status: 503,
    response: { error: "the session is not serving yet" },
    retryAfter: "2",
  },
  {
    name: "503 Agent lookup timed out",
    body: prompt("hi"),
    setup: { agentLookupError: Object.assign(new Error("timed out"), { name: "TimeoutError" }) },
    status: 503,
    response: { error: "the session is not serving yet" },
    retryAfter: "2",
  },
  {
    // RBAC refusing the controller will not change on a retry: not a 503 with Retry-After.
    name: "500 Agent lookup forbidden",
    body: prompt("hi"),
    setup: {
      agentLookupError: new KubeApiError(403, "Forbidden", 'agents.agents.re-cinq.com "a" is forbidden'),
    },
    status: 500,
    response: { error: "internal error" },
  },
  {
    name: "500 run pod lookup forbidden",
    body: prompt("hi"),
    setup: { pod: () => Promise.reject(new KubeApiError(403, "Forbidden", "pods is forbidden")) },
    status: 500,
    response: { error: "internal error" },
  },
  {
    name: "503 run pod lookup failed",
    body: prompt("hi"),
    setup: { pod: () => Promise.reject(new Error("api down")) },
    status: 503,
    response: { error: "the session is not serving yet" },
    retryAfter: "2",
  },
  {
    name: "503 supervisor says not serving",
    body: prompt("hi"),
    setup: { supervisor: answer(503, { error: "starting" }) },
    status: 503,
    response: { error: "the session is not serving yet" },
    retryAfter: "2",
    forwarded: true,
  },
  {
    name: "503 pod unreachable",
    body: prompt("hi"),
    setup: {
      supervisor: () => {
        throw Object.assign(new Error("connect ECONNREFUSED 10.1.2.3:8090"), { code: "ECONNREFUSED" });
      },
    },
    status: 503,
    response: { error: "the session's pod cannot be reached" },
    retryAfter: "2",
    forwarded: true,
  },
];

describe("prompt API status codes and messages (docs/prompt-api.md#status-codes)", () => {
  it.each(rows)("$name", async (row) => {
    const h = harness(row.setup);
    const res = await h.app.request(row.path ?? PROMPT_PATH, {
      method: row.method ?? "POST",
      headers: { "content-type": "application/json", ...(row.headers ?? AUTH) },
      ...(row.body !== undefined && row.method !== "GET" ? { body: row.body } : {}),
    });
    expect(res.status).toBe(row.status);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual(row.response);
    expect(res.headers.get("retry-after")).toBe(row.retryAfter ?? null);
    expect(h.forwarded.length).toBe(row.forwarded ? 1 : 0);
  });

  it("a 401 names the scheme it wants", async () => {
    const res = await harness().app.request(PROMPT_PATH, { method: "POST", body: prompt("hi") });
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });
});

describe("forwarding to the run pod", () => {
  it("signs with the run's own token, never the caller's, and sends only the prompt", async () => {
    const h = harness();
    const res = await h.app.request(PROMPT_PATH, {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({ prompt: "fix the build ü", extra: "dropped" }),
    });
    expect(res.status).toBe(202);
    expect(h.forwarded).toHaveLength(1);
    const f = h.forwarded[0];
    expect(f?.url).toBe("http://10.1.2.3:8090/v1/prompt");
    expect(f?.headers.authorization).toBe(`Bearer ${RUN_TOKEN}`);
    expect(JSON.stringify(f?.headers)).not.toContain(API_TOKEN);
    expect(JSON.parse(f?.body ?? "")).toEqual({ prompt: "fix the build ü" });
    expect(f?.timeoutMs).toBe(10_000);
  });

  it("forwards a close to /v1/close with no body", async () => {
    const h = harness({ supervisor: ACCEPT_CLOSE });
    await h.app.request(CLOSE_PATH, { method: "POST", headers: AUTH });
    expect(h.forwarded[0]?.url).toBe("http://10.1.2.3:8090/v1/close");
    expect(h.forwarded[0]?.headers.authorization).toBe(`Bearer ${RUN_TOKEN}`);
    expect(h.forwarded[0]?.body).toBe("");
  });

  it("logs why the pod could not be reached", async () => {
    const h = harness({
      supervisor: () => {
        throw new Error("connect ETIMEDOUT");
      },
    });
    await h.app.request(PROMPT_PATH, { method: "POST", headers: AUTH, body: prompt("hi") });
    expect(
      h.logger.lines.some((l) => l.level === "warn" && String(l.fields?.error).includes("ETIMEDOUT")),
    ).toBe(true);
  });
});

describe("request body limit: 200 KiB", () => {
  // {"prompt":"xxx…"} padded to an exact total size.
  const bodyOfSize = (size: number) => `{"prompt":"${"x".repeat(size - 13)}"}`;

  it.each([
    [204800, true],
    [204801, false],
  ])("a %i-byte body is accepted by the controller: %s", async (size, accepted) => {
    const body = bodyOfSize(size);
    expect(Buffer.byteLength(body)).toBe(size);
    const h = harness({ supervisor: answer(413, { error: "prompt exceeds 102400 bytes" }) });
    const res = await h.app.request(PROMPT_PATH, { method: "POST", headers: AUTH, body });
    expect(h.forwarded).toHaveLength(accepted ? 1 : 0);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      error: accepted ? "prompt exceeds 102400 bytes" : "request body too large",
    });
  });

  it("refuses an oversized body sent as a stream without a Content-Length", async () => {
    const h = harness();
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled++;
        if (pulled > 1000) c.close();
        else c.enqueue(new Uint8Array(64 * 1024).fill(0x78));
      },
    });
    const res = await h.app.request(PROMPT_PATH, {
      method: "POST",
      headers: AUTH,
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: "request body too large" });
    expect(pulled).toBeLessThan(10);
  });
});

describe("status.sessionId", () => {
  async function send(h: ReturnType<typeof harness>) {
    const res = await h.app.request(PROMPT_PATH, { method: "POST", headers: AUTH, body: prompt("next") });
    expect(res.status).toBe(202);
    return (await res.json()) as { sessionId: string };
  }

  it("is recorded once when a later reply reveals it, and not for '' or the same id", async () => {
    let reply = { turn: 1, queued: 1, sessionId: "" };
    const h = harness({ supervisor: () => ({ status: 202, body: JSON.stringify(reply) }) });

    expect((await send(h)).sessionId).toBe("");
    expect(h.patches).toEqual([]);

    reply = { turn: 2, queued: 1, sessionId: "thread-abc" };
    expect((await send(h)).sessionId).toBe("thread-abc");
    expect(h.patches).toEqual([{ name: "a", sessionId: "thread-abc" }]);
    expect(h.agents.get("a")?.status?.sessionId).toBe("thread-abc");

    reply = { turn: 3, queued: 1, sessionId: "thread-abc" };
    await send(h);
    expect(h.patches).toHaveLength(1);
  });

  it("is recorded when it differs from the Agent's current one", async () => {
    const h = harness({
      agents: [runningAgent("a", { sessionId: "old" })],
      supervisor: answer(202, { turn: 4, queued: 2, sessionId: "new" }),
    });
    await send(h);
    expect(h.patches).toEqual([{ name: "a", sessionId: "new" }]);
  });

  it("an empty reply id never clears the Agent's recorded one", async () => {
    const h = harness({
      agents: [runningAgent("a", { sessionId: "resumed-id" })],
      supervisor: answer(202, { turn: 1, queued: 1, sessionId: "" }),
    });
    expect((await send(h)).sessionId).toBe("");
    expect(h.patches).toEqual([]);
  });

  it("is not patched for a close or a refused prompt", async () => {
    const h = harness({ supervisor: answer(429, { error: "too many queued prompts", sessionId: "x" }) });
    await h.app.request(PROMPT_PATH, { method: "POST", headers: AUTH, body: prompt("hi") });
    expect(h.patches).toEqual([]);
  });

  it.each([
    ["too long", "s".repeat(4 * 1024 * 1024)],
    ["with characters no CLI writes", 'id\n{"injected":1}'],
  ])("a reply id %s is not recorded, and said so in the log", async (_n, sessionId) => {
    const h = harness({ supervisor: answer(202, { turn: 2, queued: 1, sessionId }) });
    await send(h);
    expect(h.patches).toEqual([]);
    const line = h.logger.lines.find((l) => l.level === "error");
    expect(line?.message).toBe("prompt-api: status.sessionId not recorded");
  });

  it("an opencode session id (not a UUID) is recorded", async () => {
    const h = harness({ supervisor: answer(202, { turn: 2, queued: 1, sessionId: "ses_4f2a9c1e7bffe" }) });
    await send(h);
    expect(h.patches).toEqual([{ name: "a", sessionId: "ses_4f2a9c1e7bffe" }]);
  });

  it("a failed patch is logged and the caller still gets the 202", async () => {
    const h = harness({
      supervisor: answer(202, { turn: 2, queued: 1, sessionId: "s-9" }),
      patchSessionId: () => Promise.reject(new Error("409 Conflict")),
    });
    const res = await h.app.request(PROMPT_PATH, { method: "POST", headers: AUTH, body: prompt("hi") });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ turn: 2, queued: 1, sessionId: "s-9" });
    const line = h.logger.lines.find((l) => l.level === "error");
    expect(line?.fields).toMatchObject({ agent: "a", sessionId: "s-9", error: "Error: 409 Conflict" });
  });
});

describe("createPromptApi", () => {
  const base = {
    namespace: NS,
    apiToken: API_TOKEN,
    signingKey: SIGNING_KEY,
    getAgent: () => undefined,
    resolveRunPod: (): RunPodState => ({ kind: "not-serving" }),
    patchSessionId: async () => {},
  };
  it.each([
    ["namespace", { ...base, namespace: "" }, /namespace is empty/],
    ["apiToken", { ...base, apiToken: "" }, /apiToken .*is empty/],
    ["signingKey", { ...base, signingKey: "" }, /signingKey .*is empty/],
    ["apiToken with a trailing newline", { ...base, apiToken: "tok\n" }, /apiToken .*contains whitespace/],
  ])("refuses %s", (_n, deps, error) => {
    expect(() => createPromptApi(deps)).toThrow(error);
  });
});
