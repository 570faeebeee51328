import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type GeminiServer,
  geminiHistory,
  offeredTools,
  startGeminiServer,
  valueForSchema,
} from "./gemini-generate.js";

let server: GeminiServer;
beforeEach(async () => {
  server = await startGeminiServer();
});
afterEach(async () => {
  await server.close();
});

const STREAM = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";

function chat(contents: unknown[], extra: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${server.origin}${STREAM}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-goog-api-key": "secret-key" },
    body: JSON.stringify({ contents, ...extra }),
  });
}

const userTurn = (text: string) => ({ role: "user", parts: [{ text }] });

/** The JSON payloads of an SSE body's `data:` lines. */
async function chunks(res: Response): Promise<Record<string, unknown>[]> {
  const text = await res.text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)));
}

describe("gemini model fake: streamGenerateContent", () => {
  it("streams a text answer as GenerateContentResponse chunks, finishReason and usage on the last", async () => {
    server.script([{ text: "Hello there.", usage: { input: 40, output: 3, cacheRead: 8 } }]);
    const res = await chat([userTurn("hi")]);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const got = await chunks(res);
    expect(got.length).toBe(2);
    const parts = got.map(
      (c) => (c.candidates as { content: { parts: { text: string }[] } }[])[0]?.content.parts[0]?.text,
    );
    expect(parts.join("")).toBe("Hello there.");
    expect(got[0]?.usageMetadata).toBeUndefined();
    const last = got[1] as { candidates: { finishReason: string; content: { role: string } }[] } & Record<
      string,
      unknown
    >;
    expect(last.candidates[0]?.finishReason).toBe("STOP");
    expect(last.candidates[0]?.content.role).toBe("model");
    expect(last.usageMetadata).toEqual({
      promptTokenCount: 48,
      candidatesTokenCount: 3,
      cachedContentTokenCount: 8,
      totalTokenCount: 51,
    });
    expect(last.modelVersion).toBe("gemini-2.5-pro");
  });

  it("answers a toolCall step with a functionCall part after the text", async () => {
    server.script([
      { toolCall: { name: "write_file", input: { file_path: "a.txt", content: "x" } }, text: "Writing." },
    ]);
    const [only] = await chunks(await chat([userTurn("write")]));
    expect((only?.candidates as { content: { parts: unknown[] } }[] | undefined)?.[0]?.content.parts).toEqual(
      [
        { text: "Writing." },
        { functionCall: { name: "write_file", args: { file_path: "a.txt", content: "x" } } },
      ],
    );
  });

  it("answers errors in Google's envelope, with RetryInfo when a retry delay is scripted", async () => {
    server.script([
      { error: { status: 401 } },
      { error: { status: 429 }, retryAfterSeconds: 7 },
      { error: { status: 503, message: "busy" } },
    ]);
    const unauth = await chat([userTurn("a")]);
    expect(unauth.status).toBe(401);
    expect(await unauth.json()).toEqual({
      error: {
        code: 401,
        message: expect.stringContaining("invalid authentication credentials"),
        status: "UNAUTHENTICATED",
      },
    });
    const limited = await chat([userTurn("b")]);
    expect(limited.status).toBe(429);
    expect(await limited.json()).toEqual({
      error: {
        code: 429,
        message: "Resource has been exhausted (e.g. check quota).",
        status: "RESOURCE_EXHAUSTED",
        details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "7s" }],
      },
    });
    const busy = await chat([userTurn("c")]);
    expect(busy.status).toBe(503);
    expect(await busy.json()).toEqual({ error: { code: 503, message: "busy", status: "UNAVAILABLE" } });
  });

  it("cuts the connection mid-stream after the first chunk", async () => {
    server.script([{ cut: true, text: "partial" }]);
    const res = await chat([userTurn("a")]);
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it("stalls: headers sent, no chunk until the server closes", async () => {
    server.script([{ stall: true }]);
    const res = await chat([userTurn("a")]);
    expect(res.status).toBe(200);
    const reader = res.body?.getReader();
    const first = reader?.read();
    await server.close();
    await expect(first).rejects.toThrow();
    server = await startGeminiServer();
  });

  it("journals every request: history received, tools offered, the key only as a flag", async () => {
    server.script([{ text: "one" }, { text: "two" }]);
    await (
      await chat([userTurn("first")], { tools: [{ functionDeclarations: [{ name: "write_file" }] }] })
    ).text();
    await (
      await chat([
        userTurn("first"),
        { role: "model", parts: [{ text: "one" }, { functionCall: { name: "write_file", args: {} } }] },
        { role: "user", parts: [{ functionResponse: { name: "write_file", response: { output: "ok" } } }] },
        userTurn("second"),
      ])
    ).text();
    const calls = server.modelCalls();
    expect(calls.length).toBe(2);
    expect(calls[0]?.headers["x-goog-api-key"]).toBe("<present>");
    expect(calls[0]?.query).toEqual({ alt: "sse" });
    expect(offeredTools(calls[0] as never)).toEqual(["write_file"]);
    expect(geminiHistory(calls[1] as never)).toEqual([
      { role: "user", text: "first", functionCalls: [], functionResponses: [] },
      { role: "model", text: "one", functionCalls: ["write_file"], functionResponses: [] },
      { role: "user", text: "", functionCalls: [], functionResponses: ["write_file"] },
      { role: "user", text: "second", functionCalls: [], functionResponses: [] },
    ]);
  });
});

describe("gemini model fake: the CLI's utility calls", () => {
  it("answers generateContent with JSON shaped by responseJsonSchema, without consuming a step", async () => {
    server.script([{ text: "kept for the chat" }]);
    const res = await fetch(`${server.origin}/v1beta/models/gemini-3.5-flash-lite:generateContent`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        contents: [userTurn("route me")],
        generationConfig: {
          responseMimeType: "application/json",
          responseJsonSchema: {
            type: "OBJECT",
            properties: {
              complexity_reasoning: { type: "STRING" },
              complexity_score: { type: "INTEGER" },
            },
            required: ["complexity_reasoning", "complexity_score"],
          },
        },
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      candidates: { content: { parts: { text: string }[] } }[];
      modelVersion: string;
    };
    expect(JSON.parse(body.candidates[0]?.content.parts[0]?.text ?? "")).toEqual({
      complexity_reasoning: "Done.",
      complexity_score: 1,
    });
    expect(body.modelVersion).toBe("gemini-3.5-flash-lite");
    const [chatChunk] = await chunks(await chat([userTurn("hi")]));
    expect(JSON.stringify(chatChunk)).toContain("kept for");
  });

  it("answers countTokens", async () => {
    const res = await fetch(`${server.origin}/v1beta/models/gemini-2.5-pro:countTokens`, {
      method: "POST",
      body: JSON.stringify({ contents: [userTurn("count these words")] }),
    });
    expect(((await res.json()) as { totalTokens: number }).totalTokens).toBeGreaterThan(0);
  });

  it("fills schemas: enums, numbers with minimum, arrays, booleans", () => {
    expect(
      valueForSchema({
        type: "object",
        properties: {
          a: { type: "string", enum: ["x", "y"] },
          n: { type: "number", minimum: 5 },
          l: { type: "array" },
          b: { type: "boolean" },
        },
      }),
    ).toEqual({ a: "x", n: 5, l: [], b: false });
  });

  it("answers 404 in Google's shape for paths outside the API", async () => {
    const res = await fetch(`${server.origin}/v1/other`);
    expect(res.status).toBe(404);
  });
});
