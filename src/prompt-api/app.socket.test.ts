/**
 * The prompt API over real sockets: the controller's server on 127.0.0.1 forwarding with undici to
 * the fake run-pod supervisor (test/fakes/supervisor.ts), also on 127.0.0.1.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { FakeSupervisor, type FakeSupervisorOptions } from "../../test/fakes/supervisor.js";
import {
  API_TOKEN,
  memoryLogger,
  NS,
  RUN_TOKEN_SHA256,
  runningAgent,
  SIGNING_KEY,
} from "../../test/support/prompt-api.js";
import { createPromptApi } from "./app.js";
import { type PromptApiServer, startPromptApiServer } from "./server.js";
import type { PromptApiAgent, RunPodState } from "./session.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

interface Stack {
  api: PromptApiServer;
  supervisor: FakeSupervisor;
  agents: Map<string, PromptApiAgent>;
  patches: string[];
  call(
    action: "prompt" | "close",
    body?: string,
    name?: string,
  ): Promise<{ status: number; json: unknown; retryAfter: string | undefined }>;
}

async function stack(
  options: Partial<FakeSupervisorOptions> = {},
  extra: { signingKey?: string; podState?: () => RunPodState; forwardTimeoutMs?: number } = {},
): Promise<Stack> {
  const supervisor = await new FakeSupervisor({ tokenSha256: RUN_TOKEN_SHA256, ...options }).start();
  cleanups.push(() => supervisor.stop());
  const agents = new Map<string, PromptApiAgent>([["a", runningAgent("a")]]);
  const patches: string[] = [];
  const app = createPromptApi({
    namespace: NS,
    apiToken: API_TOKEN,
    signingKey: extra.signingKey ?? SIGNING_KEY,
    getAgent: (_ns, name) => agents.get(name),
    resolveRunPod: () => extra.podState?.() ?? { kind: "serving", baseUrl: supervisor.baseUrl },
    patchSessionId: async (agent, sessionId) => {
      patches.push(sessionId);
      agents.set(agent.metadata.name ?? "", { ...agent, status: { ...agent.status, sessionId } });
    },
    logger: memoryLogger(),
    ...(extra.forwardTimeoutMs ? { forwardTimeoutMs: extra.forwardTimeoutMs } : {}),
  });
  const api = await startPromptApiServer(app, { port: 0, host: "127.0.0.1" });
  cleanups.push(() => api.close(100));
  return {
    api,
    supervisor,
    agents,
    patches,
    async call(action, body, name = "a") {
      const res = await request(`http://127.0.0.1:${api.port}/v1/namespaces/${NS}/agents/${name}/${action}`, {
        method: "POST",
        headers: { authorization: `Bearer ${API_TOKEN}`, "content-type": "application/json" },
        ...(body !== undefined ? { body } : {}),
      });
      const retryAfter = res.headers["retry-after"];
      return {
        status: res.statusCode,
        json: await res.body.json(),
        retryAfter: retryAfter as string | undefined,
      };
    },
  };
}

const prompt = (text: string) => JSON.stringify({ prompt: text });

describe("prompt API over sockets with the fake supervisor", () => {
  it("runs a fresh Codex-like session: turn numbers, queue counts, the session id learned from turn 1", async () => {
    const s = await stack({ initialPrompt: "initial", sessionIdAfterFirstTurn: "thread-1" });
    expect(s.supervisor.running?.turn).toBe(1);

    expect(await s.call("prompt", prompt("second"))).toMatchObject({
      status: 202,
      json: { turn: 2, queued: 1, sessionId: "" },
    });
    expect(await s.call("prompt", prompt("third"))).toMatchObject({
      status: 202,
      json: { turn: 3, queued: 2, sessionId: "" },
    });
    expect(s.patches).toEqual([]);

    s.supervisor.completeTurn(); // turn 1 done: the id is known, turn 2 runs, turn 3 waits
    expect(await s.call("prompt", prompt("fourth"))).toMatchObject({
      status: 202,
      json: { turn: 4, queued: 2, sessionId: "thread-1" },
    });
    expect(s.patches).toEqual(["thread-1"]);
    expect(s.agents.get("a")?.status?.sessionId).toBe("thread-1");

    expect(await s.call("prompt", prompt("fifth"))).toMatchObject({
      status: 202,
      json: { turn: 5, sessionId: "thread-1" },
    });
    expect(s.patches).toEqual(["thread-1"]);
    expect(s.supervisor.waiting.map((t) => t.prompt)).toEqual(["third", "fourth", "fifth"]);
  });

  it("a session that knows its id from the start reports it on the first prompt", async () => {
    const s = await stack({ sessionId: "c0ffee00-0000-4000-8000-000000000001" });
    expect(await s.call("prompt", prompt("hi"))).toMatchObject({
      status: 202,
      json: { turn: 1, queued: 1, sessionId: "c0ffee00-0000-4000-8000-000000000001" },
    });
    expect(s.patches).toEqual(["c0ffee00-0000-4000-8000-000000000001"]);
  });

  it("refuses the 17th waiting prompt with 429; the running turn does not count", async () => {
    const s = await stack({ initialPrompt: "running" });
    for (let i = 1; i <= 16; i++) {
      expect(await s.call("prompt", prompt(`p${i}`))).toMatchObject({ status: 202, json: { queued: i } });
    }
    expect(await s.call("prompt", prompt("one too many"))).toEqual({
      status: 429,
      json: { error: "too many queued prompts" },
      retryAfter: undefined,
    });
    s.supervisor.completeTurn();
    expect(await s.call("prompt", prompt("room again"))).toMatchObject({
      status: 202,
      json: { turn: 18, queued: 16 },
    });
  });

  it("the supervisor's 102400-byte prompt limit reaches the caller", async () => {
    const s = await stack({ initialPrompt: "running" });
    expect(await s.call("prompt", prompt("x".repeat(102400)))).toMatchObject({ status: 202 });
    expect(await s.call("prompt", prompt("ü".repeat(51201)))).toEqual({
      status: 413,
      json: { error: "prompt exceeds 102400 bytes" },
      retryAfter: undefined,
    });
  });

  it("close: queued turns still run, prompts and a second close are refused, then the pod is gone", async () => {
    const s = await stack({ initialPrompt: "running" });
    await s.call("prompt", prompt("queued"));
    expect(await s.call("close")).toEqual({ status: 202, json: { queued: 1 }, retryAfter: undefined });
    expect(await s.call("prompt", prompt("late"))).toEqual({
      status: 409,
      json: { error: "the session is ending" },
      retryAfter: undefined,
    });
    expect(await s.call("close")).toEqual({
      status: 409,
      json: { error: "the session is ending" },
      retryAfter: undefined,
    });

    s.supervisor.completeTurn();
    s.supervisor.completeTurn();
    expect(s.supervisor.completed.map((t) => t.prompt)).toEqual(["running", "queued"]);
    expect(s.supervisor.ended).toBe(true);
    // The session ended but the Agent is still Running in the cache: the caller is told to retry.
    await expect
      .poll(async () => (await s.call("prompt", prompt("after"))).json, { timeout: 10_000 })
      .toEqual({
        error: "the session's pod cannot be reached",
      });
    expect(await s.call("close")).toEqual({
      status: 503,
      json: { error: "the session's pod cannot be reached" },
      retryAfter: "2",
    });
  });

  it("a pod that does not answer in time counts as unreachable", async () => {
    const silent: Server = createServer(() => {
      // never answers
    });
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", () => r()));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          silent.closeAllConnections();
          silent.close(() => r());
        }),
    );
    const port = (silent.address() as AddressInfo).port;
    const s = await stack(
      {},
      { podState: () => ({ kind: "serving", baseUrl: `http://127.0.0.1:${port}` }), forwardTimeoutMs: 200 },
    );
    expect(await s.call("prompt", prompt("hi"))).toEqual({
      status: 503,
      json: { error: "the session's pod cannot be reached" },
      retryAfter: "2",
    });
  });

  it("a controller with another signing key is refused by the pod, which the caller sees as 502", async () => {
    const s = await stack({}, { signingKey: "rotated-key" });
    expect(await s.call("prompt", prompt("hi"))).toEqual({
      status: 502,
      json: { error: "unexpected answer from the session's supervisor (401)" },
      retryAfter: undefined,
    });
    expect(s.supervisor.requests[0]?.authorization).toMatch(/^Bearer [0-9a-f]{64}$/);
  });

  it("a supervisor answering garbage is a 502", async () => {
    const s = await stack({
      override: () => ({ status: 202, body: "<html>ok</html>", contentType: "text/html" }),
    });
    expect(await s.call("prompt", prompt("hi"))).toMatchObject({
      status: 502,
      json: { error: "unexpected answer from the session's supervisor (202)" },
    });
  });

  it("the pod sees only the run token and the prompt", async () => {
    const s = await stack();
    await s.call("prompt", JSON.stringify({ prompt: "hello", note: "not forwarded" }));
    const seen = s.supervisor.requests[0];
    expect(seen?.path).toBe("/v1/prompt");
    expect(seen?.authorization).not.toContain(API_TOKEN);
    expect(JSON.parse(seen?.body ?? "")).toEqual({ prompt: "hello" });
  });

  it.each([
    [204800, 413, "prompt exceeds 102400 bytes"],
    [204801, 413, "request body too large"],
  ])("a %i-byte body over the socket ⇒ %i %s", async (size, status, error) => {
    const s = await stack();
    const body = `{"prompt":"${"x".repeat(size - 13)}"}`;
    expect(Buffer.byteLength(body)).toBe(size);
    expect(await s.call("prompt", body)).toMatchObject({ status, json: { error } });
    expect(s.supervisor.requests).toHaveLength(size === 204800 ? 1 : 0);
  });

  it("a large body is refused without the controller reading all of it", async () => {
    const s = await stack();
    const body = "x".repeat(5 * 1024 * 1024);
    const res = await s.call("prompt", body).catch((err: unknown) => ({ error: String(err) }));
    // Either the 413 arrives, or the server hung up mid-upload after answering; never a 2xx.
    if ("status" in res)
      expect(res).toMatchObject({ status: 413, json: { error: "request body too large" } });
    expect(s.supervisor.requests).toHaveLength(0);
  });

  // The rest of the upload is discarded by @hono/node-server (bounded drain), never buffered.
  it("a chunked body with no Content-Length is cut off once past 200 KiB", async () => {
    const s = await stack();
    async function* chunks() {
      for (let i = 0; i < 160; i++) {
        yield Buffer.alloc(64 * 1024, 0x78);
      }
    }
    const outcome = await request(`http://127.0.0.1:${s.api.port}/v1/namespaces/${NS}/agents/a/prompt`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_TOKEN}` },
      body: Readable.from(chunks()),
    }).then(
      async (res) => ({ status: res.statusCode, json: await res.body.json() }),
      (err: unknown) => ({ error: String(err) }),
    );
    if ("status" in outcome)
      expect(outcome).toEqual({ status: 413, json: { error: "request body too large" } });
    expect(s.supervisor.requests).toHaveLength(0);
  });

  it("unknown routes are 404 over the socket too", async () => {
    const s = await stack();
    const res = await request(`http://127.0.0.1:${s.api.port}/healthz`);
    expect(res.statusCode).toBe(404);
    expect(await res.body.json()).toEqual({ error: "not found" });
  });

  it("the fake pod's /healthz is unauthenticated", async () => {
    const s = await stack();
    const res = await request(`${s.supervisor.baseUrl}/healthz`);
    expect(res.statusCode).toBe(200);
    await res.body.dump();
  });
});
