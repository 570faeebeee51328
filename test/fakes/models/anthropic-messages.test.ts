import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AnthropicMessagesServer, startAnthropicMessages, textsOf } from "./anthropic-messages.js";

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

function parseSse(text: string): SseEvent[] {
  return text
    .split("\n\n")
    .filter((frame) => frame.trim() !== "")
    .map((frame) => {
      const lines = frame.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "";
      const data = JSON.parse(lines.find((l) => l.startsWith("data: "))?.slice(6) ?? "null");
      return { event, data };
    });
}

let server: AnthropicMessagesServer;
beforeEach(async () => {
  server = await startAnthropicMessages();
});
afterEach(async () => {
  await server.close();
});

function post(body: unknown, path = "/v1/messages?beta=true"): Promise<Response> {
  return fetch(`${server.origin}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": "sk-test",
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify(body),
  });
}

const request = (extra: Record<string, unknown> = {}) => ({
  model: "claude-opus-5-5",
  max_tokens: 1024,
  stream: true,
  messages: [{ role: "user", content: [{ type: "text", text: "Say hi" }] }],
  ...extra,
});

describe("anthropic messages fake", () => {
  it("streams a text answer as the documented event sequence, usage on message_start and message_delta", async () => {
    server.script([
      { text: "Hello there, this is a longer answer.", usage: { input: 42, output: 7, cacheRead: 3 } },
    ]);
    const res = await post(request());
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("request-id")).toMatch(/^req_/);
    const events = parseSse(await res.text());
    for (const e of events) expect(e.data.type).toBe(e.event);
    expect(events.map((e) => e.event)).toEqual([
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    const start = events[0]?.data.message as Record<string, unknown>;
    expect(start).toMatchObject({
      type: "message",
      role: "assistant",
      model: "claude-opus-5-5",
      content: [],
      stop_reason: null,
      usage: { input_tokens: 42, cache_read_input_tokens: 3, cache_creation_input_tokens: 0 },
    });
    expect(String(start.id)).toMatch(/^msg_/);
    const text = events
      .filter((e) => e.event === "content_block_delta")
      .map((e) => (e.data.delta as { type: string; text: string }).text)
      .join("");
    expect(text).toBe("Hello there, this is a longer answer.");
    expect(events.at(-2)?.data).toEqual({
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 7 },
    });
  });

  it("streams a tool call as a tool_use block with input_json_delta pieces and stop_reason tool_use", async () => {
    const input = { file_path: "/workspace/hello.txt", content: "hello world\nsecond line\n" };
    server.script([{ toolCall: { name: "Write", input }, text: "Writing it." }]);
    const events = parseSse(await (await post(request())).text());
    const starts = events.filter((e) => e.event === "content_block_start").map((e) => e.data);
    expect(starts[0]).toEqual({
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" },
    });
    expect(starts[1]).toMatchObject({
      index: 1,
      content_block: { type: "tool_use", name: "Write", input: {} },
    });
    expect(String((starts[1]?.content_block as { id?: string } | undefined)?.id)).toMatch(/^toolu_/);
    const json = events
      .filter((e) => e.event === "content_block_delta" && e.data.index === 1)
      .map((e) => e.data.delta as { type: string; partial_json: string });
    expect(json.every((d) => d.type === "input_json_delta")).toBe(true);
    expect(json.length).toBeGreaterThan(2);
    expect(JSON.parse(json.map((d) => d.partial_json).join(""))).toEqual(input);
    expect(events.find((e) => e.event === "message_delta")?.data.delta).toEqual({
      stop_reason: "tool_use",
      stop_sequence: null,
    });
  });

  it("answers a non-streaming request with the whole Message", async () => {
    server.script([{ text: "quota ok", usage: { input: 5, output: 2 } }]);
    const res = await post(request({ stream: false }));
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.json()).toMatchObject({
      type: "message",
      role: "assistant",
      content: [{ type: "text", text: "quota ok" }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 5, output_tokens: 2 },
    });
  });

  it.each([
    [401, undefined, "authentication_error", "invalid x-api-key"],
    [429, 7, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"],
    [500, undefined, "api_error", "Internal server error"],
    [529, undefined, "overloaded_error", "Overloaded"],
  ])("answers an error step %i in the API's error shape", async (status, retryAfter, type, message) => {
    server.script([
      { error: { status }, ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}) },
    ]);
    const res = await post(request());
    expect(res.status).toBe(status);
    expect(res.headers.get("retry-after")).toBe(retryAfter === undefined ? null : String(retryAfter));
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ type: "error", error: { type, message } });
    expect(String(body.request_id)).toMatch(/^req_/);
  });

  it("gives every answer its own id without a run of digits (opencode retries a 401 whose body holds 500)", async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 300; i++) {
      server.script([{ error: { status: 401 } }]);
      const res = await post(request());
      const body = (await res.json()) as { request_id?: string };
      expect(res.headers.get("request-id")).toBe(body.request_id);
      ids.add(String(body.request_id));
    }
    expect(ids.size).toBe(300);
    for (const requestId of ids) expect(requestId).toMatch(/^req_01[A-Za-z]+$/);
  });

  it("uses a step's own error type and message", async () => {
    server.script([{ error: { status: 403, type: "permission_error", message: "no access to model" } }]);
    const res = await post(request());
    expect(await res.json()).toMatchObject({
      error: { type: "permission_error", message: "no access to model" },
    });
  });

  it("stalls: headers arrive, then nothing until the server closes", async () => {
    server.script([{ stall: true }]);
    const res = await post(request());
    expect(res.status).toBe(200);
    const reader = res.body?.getReader();
    const first = reader?.read();
    await server.close();
    await expect(first).rejects.toThrow();
    server = await startAnthropicMessages();
  });

  it("cuts: the stream starts, then the connection drops before message_stop", async () => {
    server.script([{ cut: true, text: "partial" }]);
    const res = await post(request());
    let received = "";
    const decoder = new TextDecoder();
    const reader = res.body?.getReader();
    await expect(
      (async () => {
        for (;;) {
          const chunk = await reader?.read();
          if (!chunk || chunk.done) return;
          received += decoder.decode(chunk.value);
        }
      })(),
    ).rejects.toThrow();
    expect(received).toContain("event: message_start");
    expect(received).toContain('"text":"partial"');
    expect(received).not.toContain("message_stop");
  });

  it("answers script steps in order, then the fallback", async () => {
    server.script([{ text: "one" }, { text: "two" }]);
    server.fallback({ text: "rest" });
    const answers: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await post(request({ stream: false }));
      answers.push(((await res.json()) as { content: Array<{ text: string }> }).content[0]?.text ?? "");
    }
    expect(answers).toEqual(["one", "two", "rest"]);
  });

  it("journals every request with the history it carried, the key redacted", async () => {
    const messages = [
      { role: "user", content: "first prompt" },
      { role: "system", content: [{ type: "text", text: "# Environment" }] },
      { role: "assistant", content: [{ type: "text", text: "first answer" }] },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "File created" },
          { type: "text", text: "second prompt" },
        ],
      },
    ];
    await (
      await post(request({ messages, tools: [{ name: "Write", input_schema: { type: "object" } }] }))
    ).text();
    const [entry] = server.modelCalls();
    expect(entry?.path).toBe("/v1/messages");
    expect(entry?.query).toEqual({ beta: "true" });
    expect(entry?.headers["x-api-key"]).toBe("<present>");
    expect(entry?.headers["anthropic-version"]).toBe("2023-06-01");
    expect(textsOf(entry?.body)).toEqual(["first prompt", "first answer", "File created", "second prompt"]);
    expect([...server.lastTools().keys()]).toEqual(["Write"]);
  });

  it("answers count_tokens, the model list and the connectivity probe without consuming steps", async () => {
    server.script([{ text: "kept" }]);
    const count = await post(request({ stream: undefined }), "/v1/messages/count_tokens");
    expect(await count.json()).toEqual({ input_tokens: expect.any(Number) });
    const models = (await (await fetch(`${server.origin}/v1/models`)).json()) as {
      data: Array<{ id: string }>;
    };
    expect(models.data[0]).toMatchObject({ type: "model", id: expect.any(String) });
    expect((await fetch(`${server.origin}/api/hello`, { method: "HEAD" })).status).toBe(200);
    const unknown = await fetch(`${server.origin}/v1/other`);
    expect(unknown.status).toBe(404);
    expect(server.modelCalls()).toEqual([]);
    expect(server.journal().map((e) => `${e.method} ${e.path}`)).toEqual([
      "POST /v1/messages/count_tokens",
      "GET /v1/models",
      "HEAD /api/hello",
      "GET /v1/other",
    ]);
    const res = await post(request({ stream: false }));
    expect(((await res.json()) as { content: Array<{ text: string }> }).content[0]?.text).toBe("kept");
  });
});
