import { describe, expect, it } from "vitest";
import {
  PromptApiError,
  PromptBadGatewayError,
  PromptBadRequestError,
  PromptConflictError,
  PromptNotFoundError,
  PromptQueueFullError,
  PromptTooLargeError,
  PromptUnauthorizedError,
  PromptUnavailableError,
} from "./errors.js";
import { PromptApiClient } from "./prompt-api-client.js";

interface Call {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/** A fetch that answers from a list, one answer per call, and records what was sent. */
function scripted(answers: { status: number; body: unknown; headers?: Record<string, string> }[]) {
  const calls: Call[] = [];
  const fetchFn = (async (url: string, init: RequestInit) => {
    calls.push({
      url,
      method: String(init.method),
      headers: init.headers as Record<string, string>,
      body: init.body as string | undefined,
    });
    const answer = answers[Math.min(calls.length - 1, answers.length - 1)];
    if (!answer) throw new Error("no answer scripted");
    return new Response(typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body), {
      status: answer.status,
      headers: { "content-type": "application/json", ...answer.headers },
    });
  }) as unknown as typeof fetch;
  return { calls, fetchFn };
}

function client(fetchFn: typeof fetch, slept: number[] = [], maxRetries?: number) {
  return new PromptApiClient({
    baseUrl: "http://api.test:8082/",
    token: "caller-token",
    fetch: fetchFn,
    sleep: async (ms) => {
      slept.push(ms);
    },
    ...(maxRetries !== undefined ? { maxRetries } : {}),
  });
}

describe("PromptApiClient", () => {
  it("posts the prompt with the bearer token and returns the 202 body", async () => {
    const { calls, fetchFn } = scripted([{ status: 202, body: { turn: 2, queued: 1, sessionId: "s-1" } }]);
    const reply = await client(fetchFn).prompt("ai-agents", "run-1", "go on");
    expect(reply).toEqual({ turn: 2, queued: 1, sessionId: "s-1" });
    expect(calls).toEqual([
      {
        url: "http://api.test:8082/v1/namespaces/ai-agents/agents/run-1/prompt",
        method: "POST",
        headers: { authorization: "Bearer caller-token", "content-type": "application/json" },
        body: '{"prompt":"go on"}',
      },
    ]);
  });

  it("close sends no body and returns queued", async () => {
    const { calls, fetchFn } = scripted([{ status: 202, body: { queued: 0 } }]);
    expect(await client(fetchFn).close("ai-agents", "run-1")).toEqual({ queued: 0 });
    expect(calls[0]?.url).toBe("http://api.test:8082/v1/namespaces/ai-agents/agents/run-1/close");
    expect(calls[0]?.body).toBeUndefined();
  });

  it.each([
    [400, "the body is not JSON with a non-empty prompt string", PromptBadRequestError],
    [401, "the bearer token is missing or wrong", PromptUnauthorizedError],
    [404, "Agent run-1 not found", PromptNotFoundError],
    [409, "Agent run-1 is Pending, not a running session", PromptConflictError],
    [413, "prompt exceeds 102400 bytes", PromptTooLargeError],
    [429, "too many queued prompts", PromptQueueFullError],
    [502, "unexpected answer from the session's supervisor (500)", PromptBadGatewayError],
    [500, "internal error", PromptApiError],
  ] as const)(
    "%d is a %s carrying the server's message, not retried",
    async (status, message, ErrorClass) => {
      const { calls, fetchFn } = scripted([{ status, body: { error: message } }]);
      const err = await client(fetchFn)
        .prompt("ai-agents", "run-1", "x")
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ErrorClass);
      expect(err).toMatchObject({ status, serverMessage: message });
      expect((err as Error).message).toBe(
        `POST /v1/namespaces/ai-agents/agents/run-1/prompt: ${status} ${message}`,
      );
      expect(calls).toHaveLength(1);
    },
  );

  it("retries a 503 after its Retry-After and returns the later 202", async () => {
    const slept: number[] = [];
    const { calls, fetchFn } = scripted([
      { status: 503, body: { error: "the session is not serving yet" }, headers: { "retry-after": "2" } },
      {
        status: 503,
        body: { error: "the session's pod cannot be reached" },
        headers: { "retry-after": "5" },
      },
      { status: 202, body: { turn: 1, queued: 1, sessionId: "" } },
    ]);
    expect(await client(fetchFn, slept).prompt("ns", "a", "hi")).toEqual({
      turn: 1,
      queued: 1,
      sessionId: "",
    });
    expect(slept).toEqual([2000, 5000]);
    expect(calls).toHaveLength(3);
  });

  it("gives up after maxRetries with a PromptUnavailableError that counts the attempts", async () => {
    const slept: number[] = [];
    const { calls, fetchFn } = scripted([
      { status: 503, body: { error: "the session is not serving yet" }, headers: { "retry-after": "2" } },
    ]);
    const err = await client(fetchFn, slept, 2)
      .close("ns", "a")
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PromptUnavailableError);
    expect(err).toMatchObject({
      status: 503,
      serverMessage: "the session is not serving yet",
      attempts: 3,
      retryAfterMs: 2000,
    });
    expect(calls).toHaveLength(3);
    expect(slept).toEqual([2000, 2000]);
  });

  it("bounds a huge Retry-After and waits the default when it is missing", async () => {
    const slept: number[] = [];
    const { fetchFn } = scripted([
      { status: 503, body: { error: "x" }, headers: { "retry-after": "3600" } },
      { status: 503, body: { error: "x" } },
      { status: 202, body: { queued: 0 } },
    ]);
    await client(fetchFn, slept).close("ns", "a");
    expect(slept).toEqual([30_000, 2000]);
  });

  it("an error body that is not the documented JSON is quoted", async () => {
    const { fetchFn } = scripted([{ status: 404, body: "<html>nginx</html>" }]);
    const err = await client(fetchFn)
      .prompt("ns", "a", "x")
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 404, serverMessage: "<html>nginx</html>" });
  });

  it("a 202 whose body is not the documented shape is an error, not a reply", async () => {
    const { fetchFn } = scripted([{ status: 202, body: { turn: "1" } }]);
    const err = await client(fetchFn)
      .prompt("ns", "a", "x")
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PromptApiError);
    expect((err as Error).message).toContain('unexpected body {"turn":"1"}');
  });

  it("refuses to start without a token", () => {
    expect(() => new PromptApiClient({ baseUrl: "http://x", token: "" })).toThrow(
      "PromptApiClient: token (the agent-realtime api-token) is empty",
    );
  });
});
