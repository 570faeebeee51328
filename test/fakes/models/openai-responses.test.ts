import { request } from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  messageTexts,
  type OpenAiResponsesServer,
  offeredTools,
  startOpenAiResponsesServer,
} from "./openai-responses.js";

let server: OpenAiResponsesServer;
beforeEach(async () => {
  server = await startOpenAiResponsesServer();
});
afterEach(async () => {
  await server.close();
});

const TOOLS = [
  { type: "function", name: "exec_command", parameters: { type: "object" } },
  { type: "custom", name: "apply_patch", format: { type: "grammar" } },
];

function post(body: unknown): Promise<Response> {
  return fetch(`${server.url}/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-test" },
    body: JSON.stringify(body),
  });
}

/** The SSE events of a response body: `event:` name and parsed `data:`. */
async function events(res: Response): Promise<{ event: string; data: Record<string, unknown> }[]> {
  const text = await res.text();
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? "";
      const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? "null") as Record<string, unknown>;
      return { event, data };
    });
}

const userInput = (text: string) => [
  { type: "message", role: "user", content: [{ type: "input_text", text }] },
];

describe("OpenAI Responses fake", () => {
  it("streams a text answer as the documented events, numbered, ending in response.completed with usage", async () => {
    server.script([{ text: "Hello there", usage: { input: 100, output: 7, cacheRead: 40 } }]);
    const res = await post({ model: "gpt-5.5", stream: true, input: userInput("hi") });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const evs = await events(res);
    expect(evs.map((e) => e.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    for (const e of evs) expect(e.data.type).toBe(e.event);
    expect(evs.map((e) => e.data.sequence_number)).toEqual(evs.map((_, i) => i));
    const deltas = evs.filter((e) => e.event === "response.output_text.delta").map((e) => e.data.delta);
    expect(deltas.join("")).toBe("Hello there");
    const done = evs.at(-1)?.data.response as Record<string, unknown>;
    expect(done).toMatchObject({
      object: "response",
      status: "completed",
      model: "gpt-5.5",
      output: [
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Hello there" }] },
      ],
      usage: {
        input_tokens: 100,
        output_tokens: 7,
        total_tokens: 107,
        input_tokens_details: { cached_tokens: 40 },
      },
    });
  });

  it("calls a function tool with JSON arguments and a freeform tool with raw text", async () => {
    server.script([
      { toolCall: { name: "exec_command", input: { cmd: "ls" } } },
      {
        toolCall: { name: "apply_patch", input: { input: "*** Begin Patch\n*** End Patch\n" } },
        text: "Editing.",
      },
    ]);
    const fn = await events(await post({ model: "m", stream: true, input: userInput("x"), tools: TOOLS }));
    expect(fn.map((e) => e.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const call = fn.find((e) => e.event === "response.output_item.done")?.data.item as Record<
      string,
      unknown
    >;
    expect(call).toMatchObject({ type: "function_call", name: "exec_command", arguments: '{"cmd":"ls"}' });
    expect(String(call.call_id)).toMatch(/^call_/);

    const custom = await events(
      await post({ model: "m", stream: true, input: userInput("x"), tools: TOOLS }),
    );
    expect(custom.map((e) => e.event)).toContain("response.custom_tool_call_input.done");
    const items = custom.filter((e) => e.event === "response.output_item.done").map((e) => e.data.item);
    expect(items).toMatchObject([
      { type: "message", content: [{ text: "Editing." }] },
      { type: "custom_tool_call", name: "apply_patch", input: "*** Begin Patch\n*** End Patch\n" },
    ]);
  });

  it("finds tools codex sends as additional_tools input items, inside namespaces", async () => {
    const input = [
      {
        type: "additional_tools",
        role: "developer",
        tools: [{ type: "namespace", name: "functions", tools: [{ type: "custom", name: "exec" }] }],
      },
      ...userInput("x"),
    ];
    expect(offeredTools({ body: { input } })).toEqual([{ name: "exec", type: "custom" }]);
    server.script([{ toolCall: { name: "exec", input: { input: "text('hi')" } } }]);
    const evs = await events(await post({ model: "m", stream: true, input }));
    expect(evs.map((e) => e.event)).toContain("response.custom_tool_call_input.done");
  });

  it("refuses to call a tool the request did not offer", async () => {
    server.script([{ toolCall: { name: "Write", input: {} } }]);
    const res = await post({ model: "m", stream: true, input: userInput("x"), tools: TOOLS });
    expect(await res.text()).toContain("tool Write was not offered (offered: exec_command, apply_patch)");
  });

  it.each([
    [401, "invalid_request_error", "invalid_api_key"],
    [429, "requests", "rate_limit_exceeded"],
    [500, "server_error", null],
    [503, "server_error", null],
  ])("answers HTTP %i with OpenAI's error body", async (status, type, code) => {
    server.script([{ error: { status }, retryAfterSeconds: 3 }]);
    const res = await post({ model: "m", stream: true, input: userInput("x") });
    expect(res.status).toBe(status);
    expect(res.headers.get("retry-after")).toBe("3");
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"]);
    expect(body.error).toMatchObject({ type, code, param: null });
    expect(String(body.error.message)).not.toBe("");
  });

  it("takes a given error type as the code too (insufficient_quota)", async () => {
    server.script([
      { error: { status: 429, type: "insufficient_quota", message: "You exceeded your current quota." } },
    ]);
    const res = await post({ model: "m", stream: true, input: userInput("x") });
    expect(await res.json()).toEqual({
      error: {
        message: "You exceeded your current quota.",
        type: "insufficient_quota",
        param: null,
        code: "insufficient_quota",
      },
    });
  });

  it("ends a stream in response.failed with the given error", async () => {
    server.script([
      { failed: { code: "server_error", message: "The model failed to generate a response." } },
    ]);
    const evs = await events(await post({ model: "m", stream: true, input: userInput("x") }));
    expect(evs.map((e) => e.event)).toEqual(["response.created", "response.in_progress", "response.failed"]);
    expect(evs[2]?.data.response).toMatchObject({
      status: "failed",
      error: { code: "server_error", message: "The model failed to generate a response." },
    });
  });

  it("cuts the connection mid-stream", async () => {
    server.script([{ cut: true, text: "partial" }]);
    const res = await post({ model: "m", stream: true, input: userInput("x") });
    await expect(res.text()).rejects.toThrow();
  });

  it("stalls: headers, then nothing", async () => {
    server.script([{ stall: true }]);
    const res = await post({ model: "m", stream: true, input: userInput("x") });
    expect(res.status).toBe(200);
    const reader = res.body?.getReader();
    const first = reader?.read();
    // Closing the server ends the stalled stream; nothing was sent before.
    await server.close();
    await expect(first).rejects.toThrow();
    server = await startOpenAiResponsesServer();
  });

  it("answers a WebSocket upgrade of /v1/responses with 426 and lists models", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${server.url}/responses`, {
        headers: {
          connection: "Upgrade",
          upgrade: "websocket",
          "sec-websocket-version": "13",
          "sec-websocket-key": "x",
        },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end();
    });
    expect(status).toBe(426);
    const models = (await (await fetch(`${server.url}/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(["gpt-5-codex"]);
  });

  it("journals each request's input (the history), with the key redacted", async () => {
    await (await post({ model: "m", stream: true, input: userInput("first") })).text();
    await (
      await post({
        model: "m",
        stream: true,
        input: [
          ...userInput("first"),
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "Done." }] },
          ...userInput("second"),
        ],
      })
    ).text();
    const calls = server.modelCalls();
    expect(calls).toHaveLength(2);
    expect(calls[1]?.headers.authorization).toBe("<present>");
    expect(messageTexts(calls[1] ?? { body: undefined }, "user")).toEqual(["first", "second"]);
    expect(messageTexts(calls[1] ?? { body: undefined }, "assistant")).toEqual(["Done."]);
  });
});
