import { describe, expect, it } from "vitest";
import type { GatewayVendor } from "../vendors.js";
import { Meter, usageReaderFor } from "./meter.js";
import type { UsageReading } from "./reading.js";

const sse = (events: Array<[string | undefined, unknown]>) =>
  events.map(([name, data]) => `${name ? `event: ${name}\n` : ""}data: ${JSON.stringify(data)}\n\n`).join("");

function readStream(vendor: GatewayVendor, text: string, chunk = 7): UsageReading {
  const meter = new Meter(usageReaderFor(vendor), { contentType: "text/event-stream; charset=utf-8" });
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += chunk) meter.push(bytes.subarray(i, i + chunk));
  return meter.finish();
}

function readJson(vendor: GatewayVendor, body: unknown): UsageReading {
  const meter = new Meter(usageReaderFor(vendor), { contentType: "application/json" });
  meter.push(Buffer.from(JSON.stringify(body)));
  return meter.finish();
}

const anthropicStart = (usage: Record<string, unknown>) =>
  [
    "message_start",
    { type: "message_start", message: { id: "msg_1", model: "claude-sonnet-4-6", usage } },
  ] as [string, unknown];
const delta = (usage: Record<string, unknown>) =>
  ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage }] as [
    string,
    unknown,
  ];
const STOP: [string, unknown] = ["message_stop", { type: "message_stop" }];
const TEXT: [string, unknown] = [
  "content_block_delta",
  { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "output_tokens 999" } },
];

describe("Anthropic Messages usage (docs/gateway.md#metering)", () => {
  it.each([
    {
      what: "message_start then the latest message_delta",
      events: [
        anthropicStart({
          input_tokens: 12,
          cache_creation_input_tokens: 5,
          cache_read_input_tokens: 100,
          output_tokens: 1,
        }),
        TEXT,
        delta({ output_tokens: 40 }),
        STOP,
      ],
      usage: { inputTokens: 12, outputTokens: 40, cacheReadTokens: 100, cacheWriteTokens: 5 },
      complete: true,
    },
    {
      what: "repeated cumulative deltas: the latest wins, never a sum",
      events: [
        anthropicStart({ input_tokens: 3, output_tokens: 1 }),
        delta({ output_tokens: 10 }),
        delta({ output_tokens: 25 }),
        STOP,
      ],
      usage: { inputTokens: 3, outputTokens: 25, cacheReadTokens: 0, cacheWriteTokens: 0 },
      complete: true,
    },
    {
      what: "input and cache counts on message_delta only",
      events: [
        anthropicStart({ input_tokens: 0, output_tokens: 0 }),
        delta({
          input_tokens: 50,
          cache_read_input_tokens: 7,
          cache_creation_input_tokens: 2,
          output_tokens: 9,
        }),
        STOP,
      ],
      usage: { inputTokens: 50, outputTokens: 9, cacheReadTokens: 7, cacheWriteTokens: 2 },
      complete: true,
    },
    {
      what: "the one-hour cache write part",
      events: [
        anthropicStart({
          input_tokens: 1,
          cache_creation_input_tokens: 30,
          cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 },
          output_tokens: 1,
        }),
        delta({ output_tokens: 4 }),
        STOP,
      ],
      usage: {
        inputTokens: 1,
        outputTokens: 4,
        cacheReadTokens: 0,
        cacheWriteTokens: 30,
        cacheWrite1hTokens: 20,
      },
      complete: true,
    },
    {
      what: "a stream cut after message_start: what arrived, not complete",
      events: [anthropicStart({ input_tokens: 8, output_tokens: 1 }), TEXT],
      usage: { inputTokens: 8, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
      complete: false,
    },
    {
      what: "an error event mid-stream: what arrived, not complete",
      events: [
        anthropicStart({ input_tokens: 8, output_tokens: 1 }),
        ["error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }],
      ] as Array<[string, unknown]>,
      usage: { inputTokens: 8, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
      complete: false,
    },
    { what: "nothing", events: [], usage: undefined, complete: false },
  ])("$what", ({ events, usage, complete }) => {
    const reading = readStream("anthropic", sse(events));
    expect(reading.usage).toEqual(usage);
    expect(reading.complete).toBe(complete);
    if (usage) expect(reading.model).toBe("claude-sonnet-4-6");
  });

  it("a non-streamed Message", () => {
    expect(
      readJson("anthropic", {
        type: "message",
        model: "claude-opus-4-1",
        content: [],
        usage: {
          input_tokens: 9,
          output_tokens: 3,
          cache_read_input_tokens: 1,
          cache_creation_input_tokens: 0,
        },
      }),
    ).toEqual({
      usage: { inputTokens: 9, outputTokens: 3, cacheReadTokens: 1, cacheWriteTokens: 0 },
      model: "claude-opus-4-1",
      complete: true,
    });
  });

  it("an error body carries no usage", () => {
    expect(
      readJson("anthropic", { type: "error", error: { type: "rate_limit_error", message: "slow down" } }),
    ).toEqual({ usage: undefined, model: undefined, complete: false });
  });
});

const responseEvent = (type: string, usage: unknown, model = "gpt-5-codex") =>
  [type, { type, response: { id: "resp_1", object: "response", model, usage }, sequence_number: 1 }] as [
    string,
    unknown,
  ];
const OPENAI_USAGE = {
  input_tokens: 100,
  input_tokens_details: { cached_tokens: 60 },
  output_tokens: 30,
  output_tokens_details: { reasoning_tokens: 20 },
  total_tokens: 130,
};

describe("OpenAI Responses usage", () => {
  it.each([
    ["response.completed", true],
    ["response.incomplete", true],
    ["response.failed", true],
  ])("%s carries it; cached input is taken out of the input", (type, complete) => {
    const reading = readStream(
      "openai",
      sse([
        responseEvent("response.created", null),
        ["response.output_text.delta", { type: "response.output_text.delta", delta: "hi" }],
        responseEvent(type, OPENAI_USAGE),
      ]),
    );
    expect(reading).toEqual({
      usage: {
        inputTokens: 40,
        outputTokens: 30,
        cacheReadTokens: 60,
        cacheWriteTokens: 0,
        reasoningTokens: 20,
      },
      model: "gpt-5-codex",
      complete,
    });
  });

  it("an explicit cache write is its own kind", () => {
    const reading = readStream(
      "openai",
      sse([
        responseEvent("response.completed", {
          input_tokens: 100,
          input_tokens_details: { cached_tokens: 10, cache_write_tokens: 50 },
          output_tokens: 5,
        }),
      ]),
    );
    expect(reading.usage).toEqual({
      inputTokens: 40,
      outputTokens: 5,
      cacheReadTokens: 10,
      cacheWriteTokens: 50,
    });
  });

  it("a stream without event: lines is read by the payload's type", () => {
    const [, payload] = responseEvent("response.completed", OPENAI_USAGE);
    expect(readStream("openai", sse([[undefined, payload]])).usage?.outputTokens).toBe(30);
  });

  it("a stream that ends before its terminal event has no usage and is not complete", () => {
    expect(readStream("openai", sse([responseEvent("response.created", null)]))).toEqual({
      usage: undefined,
      model: "gpt-5-codex",
      complete: false,
    });
  });

  it("a non-streamed Response", () => {
    expect(
      readJson("openai", { id: "resp_1", object: "response", model: "gpt-5", usage: OPENAI_USAGE }).usage,
    ).toEqual({
      inputTokens: 40,
      outputTokens: 30,
      cacheReadTokens: 60,
      cacheWriteTokens: 0,
      reasoningTokens: 20,
    });
  });
});

const geminiChunk = (usage?: Record<string, number>, finishReason?: string) => ({
  candidates: [
    { content: { role: "model", parts: [{ text: "x" }] }, ...(finishReason ? { finishReason } : {}) },
  ],
  ...(usage ? { usageMetadata: usage } : {}),
  modelVersion: "gemini-2.5-pro",
});

describe("Gemini usage", () => {
  it("the last usageMetadata wins; cached input out of the prompt, thoughts in the output", () => {
    const reading = readStream(
      "gemini",
      sse([
        [undefined, geminiChunk({ promptTokenCount: 50, candidatesTokenCount: 1, totalTokenCount: 51 })],
        [undefined, geminiChunk()],
        [
          undefined,
          geminiChunk(
            {
              promptTokenCount: 50,
              cachedContentTokenCount: 20,
              candidatesTokenCount: 30,
              thoughtsTokenCount: 12,
              toolUsePromptTokenCount: 4,
              totalTokenCount: 96,
            },
            "STOP",
          ),
        ],
      ]),
    );
    expect(reading).toEqual({
      usage: {
        inputTokens: 34,
        outputTokens: 42,
        cacheReadTokens: 20,
        cacheWriteTokens: 0,
        reasoningTokens: 12,
      },
      model: "gemini-2.5-pro",
      complete: true,
    });
  });

  it("a stream cut before its finish: what arrived, not complete", () => {
    const reading = readStream(
      "gemini",
      sse([[undefined, geminiChunk({ promptTokenCount: 5, candidatesTokenCount: 2 })]]),
    );
    expect(reading.usage).toEqual({
      inputTokens: 5,
      outputTokens: 2,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    });
    expect(reading.complete).toBe(false);
  });

  it("generateContent's one object and streamGenerateContent's JSON array without alt=sse", () => {
    expect(
      readJson("gemini", geminiChunk({ promptTokenCount: 5, candidatesTokenCount: 2 }, "STOP")).usage
        ?.outputTokens,
    ).toBe(2);
    const array = [
      geminiChunk({ promptTokenCount: 5, candidatesTokenCount: 1 }),
      geminiChunk({ promptTokenCount: 5, candidatesTokenCount: 9 }, "STOP"),
    ];
    expect(readJson("gemini", array)).toMatchObject({
      usage: { inputTokens: 5, outputTokens: 9 },
      complete: true,
    });
  });
});

describe("the meter", () => {
  it("does not parse a JSON body beyond its bound, and says so", () => {
    const meter = new Meter(usageReaderFor("anthropic"), { contentType: "application/json" }, 10);
    meter.push(
      Buffer.from(JSON.stringify({ type: "message", usage: { input_tokens: 1, output_tokens: 1 } })),
    );
    expect(meter.finish()).toMatchObject({ usage: undefined, unreadable: "oversized" });
  });

  it("does not read an answer encoded despite accept-encoding: identity, and says so", () => {
    const meter = new Meter(usageReaderFor("anthropic"), {
      contentType: "application/json",
      contentEncoding: "gzip",
    });
    meter.push(
      Buffer.from(JSON.stringify({ type: "message", usage: { input_tokens: 1, output_tokens: 1 } })),
    );
    expect(meter.finish()).toMatchObject({ usage: undefined, unreadable: "encoded" });
    const identity = new Meter(usageReaderFor("anthropic"), {
      contentType: "application/json",
      contentEncoding: "identity",
    });
    identity.push(
      Buffer.from(JSON.stringify({ type: "message", usage: { input_tokens: 1, output_tokens: 1 } })),
    );
    expect(identity.finish().usage?.inputTokens).toBe(1);
  });

  it("reads neither a body of another content type nor a broken JSON body", () => {
    const plain = new Meter(usageReaderFor("anthropic"), { contentType: "text/plain" });
    plain.push(Buffer.from('{"type":"message","usage":{"input_tokens":1}}'));
    expect(plain.finish().usage).toBeUndefined();
    const broken = new Meter(usageReaderFor("anthropic"), { contentType: "application/json" });
    broken.push(Buffer.from('{"type":"message","usage":{"input_tokens":1}'));
    expect(broken.finish().usage).toBeUndefined();
  });
});
