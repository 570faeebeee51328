/**
 * The gateway on 127.0.0.1 in front of the local model servers (test/fakes/models): streaming
 * passthrough, the key swap, metering, refusals in each vendor's shape, and requests that try to
 * make it call another host (docs/gateway.md).
 */
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type AnthropicMessagesServer,
  startAnthropicMessages,
} from "../../test/fakes/models/anthropic-messages.js";
import {
  type GatewayUnderTest,
  openRequest,
  REAL_KEYS,
  send,
  startGatewayUnderTest,
  TEST_RUN,
} from "../../test/support/gateway.js";
import { rawBody, rawHttpExchange } from "../../test/support/raw-http.js";
import { issueRunCredential } from "../core/run-job/gateway-credential.js";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const anthropicBody = (stream: boolean) => ({
  model: "claude-sonnet-4-6",
  max_tokens: 1024,
  stream,
  messages: [{ role: "user", content: "Say hi" }],
});
const claudeHeaders = (credential: string) => ({
  "x-api-key": credential,
  "anthropic-version": "2023-06-01",
  "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
});

/** Reads an answer until its text contains `marker`; the answer stays open. */
function readUntil(res: IncomingMessage, marker: string): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const onData = (c: Buffer) => {
      chunks.push(c);
      if (Buffer.concat(chunks).toString("utf8").includes(marker)) {
        res.off("data", onData);
        res.pause();
        resolve(chunks);
      }
    };
    res.on("data", onData);
    res.on("error", reject);
  });
}

/** The rest of an answer after readUntil, and whether it ended cleanly. */
function readRest(res: IncomingMessage): Promise<{ chunks: Buffer[]; complete: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("error", () => undefined);
    res.on("close", () => resolve({ chunks, complete: res.complete }));
    res.resume();
  });
}

let gw: GatewayUnderTest;
beforeAll(async () => {
  gw = await startGatewayUnderTest({ maxRequestBytes: 64 * 1024 });
});
afterAll(async () => {
  await gw?.close();
});

describe("streaming passthrough (docs/gateway.md#streaming)", () => {
  it("Anthropic: every event reaches the client before the upstream answer ends, byte for byte", async () => {
    const calls = gw.anthropic.modelCalls().length;
    gw.anthropic.script([
      { text: "Hello from the fake model, streamed in pieces.", usage: { input: 12, output: 34 } },
    ]);
    const release = gw.anthropic.hold();
    const res = await openRequest(
      gw.url,
      "POST",
      "/v1/messages?beta=true",
      claudeHeaders(gw.credential("anthropic")),
      anthropicBody(true),
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/event-stream");
    expect(res.headers["request-id"]).toMatch(/^req_/);
    // The upstream has written message_stop but not ended its answer: the client already has it all.
    const early = await readUntil(res, "event: message_stop");
    expect(res.complete).toBe(false);
    release();
    const rest = await readRest(res);
    expect(rest.complete).toBe(true);
    const entry = gw.anthropic.modelCalls()[calls];
    expect(Buffer.concat([...early, ...rest.chunks]).equals(Buffer.concat(entry?.sent ?? []))).toBe(true);
  });

  it("OpenAI Responses: the SSE answer arrives byte for byte", async () => {
    const calls = gw.openai.modelCalls().length;
    gw.openai.script([{ text: "Hello from codex's fake." }]);
    const answer = await send(
      gw.url,
      "POST",
      "/v1/responses",
      { authorization: `Bearer ${gw.credential("openai")}`, "openai-beta": "responses=experimental" },
      { model: "gpt-5-codex", stream: true, input: "Say hi" },
    );
    expect(answer.status).toBe(200);
    const entry = gw.openai.modelCalls()[calls];
    expect(answer.body.equals(Buffer.concat(entry?.sent ?? []))).toBe(true);
    expect(answer.body.toString()).toContain("event: response.completed");
    expect(entry?.headers["openai-beta"]).toBe("responses=experimental");
  });

  it("Gemini: ?alt=sse is kept, ?key= is not, and the chunks arrive byte for byte", async () => {
    const calls = gw.gemini.modelCalls().length;
    gw.gemini.script([{ text: "Hello from gemini's fake, in two chunks." }]);
    const answer = await send(
      gw.url,
      "POST",
      "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
      { "x-goog-api-key": gw.credential("gemini") },
      { contents: [{ role: "user", parts: [{ text: "Say hi" }] }] },
    );
    expect(answer.status).toBe(200);
    const entry = gw.gemini.modelCalls()[calls];
    expect(entry?.path).toBe("/v1beta/models/gemini-2.5-pro:streamGenerateContent");
    expect(entry?.query).toEqual({ alt: "sse" });
    expect(answer.body.equals(Buffer.concat(entry?.sent ?? []))).toBe(true);
  });

  it("count_tokens and the model lists pass through; /v1/models goes to the credential's vendor", async () => {
    const count = await send(
      gw.url,
      "POST",
      "/v1/messages/count_tokens?beta=true",
      claudeHeaders(gw.credential("anthropic")),
      {
        model: "claude-sonnet-4-6",
        messages: [{ role: "user", content: "count me" }],
      },
    );
    expect(count.status).toBe(200);
    expect(count.json()).toEqual({ input_tokens: expect.any(Number) });
    const anthropicModels = await send(gw.url, "GET", "/v1/models", {
      "x-api-key": gw.credential("anthropic"),
    });
    expect((anthropicModels.json() as { data: Array<{ type: string }> }).data[0]?.type).toBe("model");
    const openaiModels = await send(gw.url, "GET", "/v1/models", {
      authorization: `Bearer ${gw.credential("openai")}`,
    });
    expect(openaiModels.json()).toMatchObject({ object: "list" });
  });
});

describe("what reaches the upstream (docs/gateway.md#what-reaches-upstream)", () => {
  it("the vendor's real key and the API's own headers; no client credential, cookie or forwarding header", async () => {
    const before = gw.anthropic.journal().length;
    const credential = gw.credential("anthropic");
    const answer = await send(
      gw.url,
      "POST",
      "/v1/messages?beta=true&key=also-a-credential",
      {
        ...claudeHeaders(credential),
        cookie: "session=stolen",
        "proxy-authorization": "Basic dXNlcjpwYXNz",
        "x-forwarded-for": "10.1.2.3",
        "X-Forwarded-Host": "evil.example",
        forwarded: "for=10.1.2.3;host=evil.example",
        "accept-encoding": "gzip, br",
      },
      anthropicBody(false),
    );
    // The query's key is a second, different credential: refused, nothing forwarded.
    expect(answer.status).toBe(401);
    expect(gw.anthropic.journal().length).toBe(before);
    const ok = await send(
      gw.url,
      "POST",
      `/v1/messages?beta=true&key=${credential}`,
      {
        ...claudeHeaders(credential),
        cookie: "session=stolen",
        "proxy-authorization": "Basic dXNlcjpwYXNz",
        "x-forwarded-for": "10.1.2.3",
        "X-Forwarded-Host": "evil.example",
        forwarded: "for=10.1.2.3;host=evil.example",
        "accept-encoding": "gzip, br",
      },
      anthropicBody(false),
    );
    expect(ok.status).toBe(200);
    const entry = gw.anthropic.journal().at(-1);
    expect(entry?.query).toEqual({ beta: "true" });
    expect(entry?.credentialDigests).toEqual({ "x-api-key": sha256(REAL_KEYS.anthropic) });
    expect(entry?.headers).toMatchObject({
      "anthropic-version": "2023-06-01",
      "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
      "accept-encoding": "identity",
      host: new URL(gw.anthropic.origin).host,
    });
    for (const name of [
      "cookie",
      "proxy-authorization",
      "x-forwarded-for",
      "x-forwarded-host",
      "forwarded",
      "authorization",
    ]) {
      expect(entry?.headers, name).not.toHaveProperty(name);
    }
  });

  it.each([
    [
      "openai",
      "/v1/responses",
      { model: "gpt-5-codex", stream: true, input: "hi" },
      "authorization",
      "Bearer ",
    ],
    [
      "gemini",
      "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
      { contents: [] },
      "x-goog-api-key",
      "",
    ],
  ] as const)("%s gets its real key as %s", async (vendor, path, body, header, prefix) => {
    const server = vendor === "openai" ? gw.openai : gw.gemini;
    const before = server.modelCalls().length;
    const answer = await send(gw.url, "POST", path, { "x-goog-api-key": gw.credential(vendor) }, body);
    expect(answer.status).toBe(200);
    expect(server.modelCalls()[before]?.credentialDigests).toEqual({
      [header]: sha256(`${prefix}${REAL_KEYS[vendor]}`),
    });
  });
});

describe("metering from the provider's own fields (docs/gateway.md#metering)", () => {
  it("a streamed Anthropic answer: message_start and the latest message_delta, per run", async () => {
    const n = gw.usage.length + 1;
    gw.anthropic.script([{ text: "metered", usage: { input: 12, output: 34, cacheRead: 5, cacheWrite: 7 } }]);
    await send(
      gw.url,
      "POST",
      "/v1/messages?beta=true",
      claudeHeaders(gw.credential("anthropic")),
      anthropicBody(true),
    );
    expect(await gw.usageRecord(n)).toMatchObject({
      run: TEST_RUN,
      vendor: "anthropic",
      route: "messages",
      requestedModel: "claude-sonnet-4-6",
      model: "claude-sonnet-4-6",
      status: 200,
      usage: { inputTokens: 12, outputTokens: 34, cacheReadTokens: 5, cacheWriteTokens: 7 },
      complete: true,
      clientAborted: false,
    });
  });

  it("a non-streamed Anthropic answer", async () => {
    const n = gw.usage.length + 1;
    gw.anthropic.script([{ text: "metered", usage: { input: 3, output: 4 } }]);
    await send(
      gw.url,
      "POST",
      "/v1/messages",
      claudeHeaders(gw.credential("anthropic")),
      anthropicBody(false),
    );
    expect((await gw.usageRecord(n)).usage).toEqual({
      inputTokens: 3,
      outputTokens: 4,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    });
  });

  it("OpenAI's response.completed (the cached part taken out of the input)", async () => {
    const n = gw.usage.length + 1;
    gw.openai.script([{ text: "metered", usage: { input: 40, output: 9, cacheRead: 10 } }]);
    await send(
      gw.url,
      "POST",
      "/v1/responses",
      { authorization: `Bearer ${gw.credential("openai")}` },
      {
        model: "gpt-5-codex",
        stream: true,
        input: "hi",
      },
    );
    expect(await gw.usageRecord(n)).toMatchObject({
      vendor: "openai",
      usage: { inputTokens: 30, outputTokens: 9, cacheReadTokens: 10, cacheWriteTokens: 0 },
      complete: true,
    });
  });

  it("Gemini's last usageMetadata, streamed and not", async () => {
    const n = gw.usage.length + 1;
    gw.gemini.script([{ text: "metered", usage: { input: 20, output: 6, cacheRead: 4 } }]);
    await send(
      gw.url,
      "POST",
      "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
      { "x-goog-api-key": gw.credential("gemini") },
      { contents: [] },
    );
    expect(await gw.usageRecord(n)).toMatchObject({
      vendor: "gemini",
      requestedModel: "gemini-2.5-pro",
      usage: { inputTokens: 20, outputTokens: 6, cacheReadTokens: 4, cacheWriteTokens: 0 },
      complete: true,
    });
    await send(
      gw.url,
      "POST",
      "/v1beta/models/gemini-2.5-flash:generateContent",
      { "x-goog-api-key": gw.credential("gemini") },
      {
        contents: [{ role: "user", parts: [{ text: "classify" }] }],
      },
    );
    expect(await gw.usageRecord(n + 1)).toMatchObject({
      route: "generate_content",
      usage: { inputTokens: 10 },
      complete: true,
    });
  });

  it("a client that goes away mid-stream: the gateway reads the upstream to its end and meters all of it", async () => {
    const n = gw.usage.length + 1;
    const aborts = async () =>
      (await gw.metrics.clientAborts.get()).values.find((v) => v.labels.vendor === "anthropic")?.value ?? 0;
    const abortsBefore = await aborts();
    gw.anthropic.script([{ text: "an answer the client stops reading", usage: { input: 21, output: 55 } }]);
    const release = gw.anthropic.hold(1);
    const res = await openRequest(
      gw.url,
      "POST",
      "/v1/messages?beta=true",
      claudeHeaders(gw.credential("anthropic")),
      anthropicBody(true),
    );
    // The upstream has sent message_start only (input counts, output 1); the final count comes later.
    const early = await readUntil(res, "event: message_start");
    expect(Buffer.concat(early).toString()).not.toContain("message_delta");
    res.destroy();
    // Once the gateway has seen the client go, the upstream sends the rest, message_delta included.
    await vi.waitFor(async () => expect(await aborts()).toBe(abortsBefore + 1));
    release();
    expect(await gw.usageRecord(n)).toMatchObject({
      usage: { inputTokens: 21, outputTokens: 55 },
      complete: true,
      clientAborted: true,
    });
  });

  it("an answer ends for the client only once its call's record is durable, and each call counts as started", async () => {
    const n = gw.usage.length + 1;
    const startedBefore = gw.startedCalls();
    gw.anthropic.script([{ text: "recorded before the end", usage: { input: 8, output: 9 } }]);
    gw.holdRecords();
    const res = await openRequest(
      gw.url,
      "POST",
      "/v1/messages?beta=true",
      claudeHeaders(gw.credential("anthropic")),
      anthropicBody(true),
    );
    let ended = false;
    const rest = readRest(res).then((r) => {
      ended = true;
      return r;
    });
    // Every byte is out (message_stop included) and the record written, but not yet durable.
    expect(await gw.usageRecord(n)).toMatchObject({
      usage: { inputTokens: 8, outputTokens: 9 },
      complete: true,
    });
    expect(gw.startedCalls()).toBe(startedBefore + 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(ended).toBe(false);
    gw.releaseRecords();
    const answer = await rest;
    expect(answer.complete).toBe(true);
    expect(Buffer.concat(answer.chunks).toString()).toContain("message_stop");
  });

  it("an upstream that cuts its stream: the client sees the cut, the usage that arrived is metered", async () => {
    const n = gw.usage.length + 1;
    gw.anthropic.script([{ cut: true, text: "Partial" }]);
    const res = await openRequest(
      gw.url,
      "POST",
      "/v1/messages?beta=true",
      claudeHeaders(gw.credential("anthropic")),
      anthropicBody(true),
    );
    const rest = await readRest(res);
    expect(rest.complete).toBe(false);
    const record = await gw.usageRecord(n);
    expect(record).toMatchObject({ complete: false, clientAborted: false, usage: { outputTokens: 1 } });
    expect(record.usage?.inputTokens).toBeGreaterThan(0);
    expect(record.upstreamError).toBeDefined();
  });

  it("a provider error is forwarded unchanged and recorded without usage", async () => {
    const n = gw.usage.length + 1;
    gw.anthropic.script([{ error: { status: 429 }, retryAfterSeconds: 7 }]);
    const answer = await send(
      gw.url,
      "POST",
      "/v1/messages",
      claudeHeaders(gw.credential("anthropic")),
      anthropicBody(true),
    );
    expect(answer.status).toBe(429);
    expect(answer.headers["retry-after"]).toBe("7");
    expect(answer.json()).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
    const record = await gw.usageRecord(n);
    expect(record.status).toBe(429);
    expect(record.usage).toBeUndefined();
  });

  it("the cost of each metered answer per Station and model, priced as the controller prices a metered run", async () => {
    const cost = async () =>
      (await gw.metrics.cost.get()).values.find(
        (v) => v.labels.station === "docs-station" && v.labels.model === "claude-sonnet-4-6",
      )?.value ?? 0;
    const before = await cost();
    const n = gw.usage.length + 1;
    gw.anthropic.script([{ text: "priced", usage: { input: 1000, output: 100 } }]);
    await send(
      gw.url,
      "POST",
      "/v1/messages",
      claudeHeaders(gw.credential("anthropic")),
      anthropicBody(true),
    );
    await gw.usageRecord(n);
    // claude-sonnet-4-6: $3 input, $15 output per million tokens.
    expect((await cost()) - before).toBeCloseTo(0.0045, 9);
  });

  it("Prometheus counts requests, status codes, tokens and time to first byte per Station, vendor and model", async () => {
    const text = await (await fetch(gw.metricsUrl)).text();
    expect(text).toMatch(
      /agent_gateway_requests_total\{station="docs-station",vendor="anthropic",model="claude-sonnet-4-6",route="messages",code="200"\} \d+/,
    );
    expect(text).toMatch(
      /agent_gateway_requests_total\{station="docs-station",vendor="anthropic",model="claude-sonnet-4-6",route="messages",code="429"\} 1/,
    );
    expect(text).toMatch(
      /agent_gateway_tokens_total\{station="docs-station",vendor="openai",model="gpt-5-codex",kind="cache_read"\} \d+/,
    );
    expect(text).toMatch(
      /agent_gateway_time_to_first_byte_seconds_count\{station="docs-station",vendor="gemini",model="gemini-2.5-pro"\} \d+/,
    );
    expect(text).toMatch(/agent_gateway_refusals_total\{reason="several-credentials"\} \d+/);
    // The gateway's own refusals are requests too, with their status.
    expect(text).toMatch(
      /agent_gateway_requests_total\{station="",vendor="anthropic",model="unknown",route="messages",code="401"\} \d+/,
    );
  });
});

describe("budgets in flight (docs/gateway.md#budgets-in-flight)", () => {
  it("a metered request reserves its worst case for its Station; the call's record releases it", async () => {
    const n = gw.usage.length + 1;
    const asked = gw.budgetAsked.length;
    gw.anthropic.script([{ text: "within budget", usage: { input: 10, output: 2 } }]);
    const body = { ...anthropicBody(false), max_tokens: 2000 };
    expect(
      (await send(gw.url, "POST", "/v1/messages", claudeHeaders(gw.credential("anthropic")), body)).status,
    ).toBe(200);
    const worst = gw.budgetAsked[asked];
    expect(worst).toMatchObject({ station: "docs-station" });
    expect(worst?.why).toContain("output limit 2000, at claude-sonnet-4-6's price");
    expect(await gw.usageRecord(n)).toMatchObject({ reservedUsd: worst?.usd, costUsd: expect.any(Number) });
  });

  it("a request past the budget is refused 403 in the vendor's shape with the gate's message, and nothing reaches the provider", async () => {
    const before = gw.openai.journal().length;
    gw.budgetRefusal.message = "gateway: budget of Station ai-agents/docs-station reached: test";
    try {
      const answer = await send(
        gw.url,
        "POST",
        "/v1/responses",
        { authorization: `Bearer ${gw.credential("openai")}` },
        { model: "gpt-5-codex", input: "hi", stream: true },
      );
      expect(answer.status).toBe(403);
      expect(answer.json()).toMatchObject({
        error: { message: "gateway: budget of Station ai-agents/docs-station reached: test" },
      });
      expect(gw.openai.journal().length).toBe(before);
    } finally {
      delete gw.budgetRefusal.message;
    }
  });

  it("a route that costs nothing (count_tokens) is not held to the budget", async () => {
    const asked = gw.budgetAsked.length;
    await send(gw.url, "POST", "/v1/messages/count_tokens", claudeHeaders(gw.credential("anthropic")), {
      model: "claude-sonnet-4-6",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(gw.budgetAsked.length).toBe(asked);
  });
});

describe("refusals the CLI prints (docs/gateway.md#refusals)", () => {
  const forged = issueRunCredential(Buffer.from("another-key-of-at-least-thirty-two-bytes"), {
    ...TEST_RUN,
    vendor: "anthropic",
  });

  it.each([
    {
      what: "a forged credential (Anthropic's shape)",
      path: "/v1/messages",
      headers: () => ({ "x-api-key": forged }),
      status: 401,
      body: {
        type: "error",
        error: { type: "authentication_error", message: expect.stringContaining("not a run credential") },
      },
    },
    {
      what: "no credential (OpenAI's shape)",
      path: "/v1/responses",
      headers: () => ({}),
      status: 401,
      body: { error: { code: "invalid_api_key", message: expect.stringContaining("no run credential") } },
    },
    {
      what: "a credential for another vendor (Anthropic's shape)",
      path: "/v1/messages",
      headers: () => ({ "x-api-key": gw.credential("openai") }),
      status: 403,
      body: {
        type: "error",
        error: {
          type: "permission_error",
          message: "gateway: Agent ai-agents/fix-readme may call the openai API only, not anthropic",
        },
      },
    },
    {
      what: "a credential for another vendor (Google's shape)",
      path: "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
      headers: () => ({ "x-goog-api-key": gw.credential("anthropic") }),
      status: 403,
      body: {
        error: {
          code: 403,
          status: "PERMISSION_DENIED",
          message: expect.stringContaining("anthropic API only"),
        },
      },
    },
    {
      what: "a provider key instead of a run credential",
      path: "/v1/messages",
      headers: () => ({ "x-api-key": REAL_KEYS.anthropic }),
      status: 401,
      body: { type: "error", error: { type: "authentication_error" } },
    },
    {
      what: "two different credentials",
      path: "/v1/messages",
      headers: () => ({
        "x-api-key": gw.credential("anthropic"),
        authorization: `Bearer ${gw.credential("anthropic", { name: "other-run" })}`,
      }),
      status: 401,
      body: { type: "error", error: { message: expect.stringContaining("more than one credential") } },
    },
  ])("$what", async ({ path, headers, status, body }) => {
    const journals = [gw.anthropic, gw.openai, gw.gemini].map((s) => s.journal().length);
    const answer = await send(gw.url, "POST", path, headers(), anthropicBody(true));
    expect(answer.status).toBe(status);
    expect(answer.headers["content-type"]).toBe("application/json");
    expect(answer.json()).toMatchObject(body);
    expect([gw.anthropic, gw.openai, gw.gemini].map((s) => s.journal().length)).toEqual(journals);
  });

  it("an ended Agent's and a deleted Agent's credentials", async () => {
    const ended = gw.credential("anthropic", {
      name: "ended-run",
      uid: "11111111-2222-3333-4444-555555555555",
    });
    const deleted = gw.credential("anthropic", {
      name: "gone-run",
      uid: "99999999-2222-3333-4444-555555555555",
    });
    gw.runStates.set("11111111-2222-3333-4444-555555555555", { state: "terminal", phase: "Succeeded" });
    gw.runStates.set("99999999-2222-3333-4444-555555555555", { state: "deleted" });
    const before = gw.anthropic.journal().length;
    const a = await send(gw.url, "POST", "/v1/messages", { "x-api-key": ended }, anthropicBody(true));
    expect(a.status).toBe(403);
    expect(a.json()).toMatchObject({
      error: {
        message:
          "gateway: Agent ai-agents/ended-run has ended (phase Succeeded); its credential no longer works",
      },
    });
    const d = await send(gw.url, "POST", "/v1/messages", { "x-api-key": deleted }, anthropicBody(true));
    expect(d.status).toBe(403);
    expect(d.json()).toMatchObject({
      error: { message: expect.stringContaining("ai-agents/gone-run (uid 99999999") },
    });
    expect(gw.anthropic.journal().length).toBe(before);
  });

  it.each([
    {
      vendor: "anthropic" as const,
      path: "/v1/messages",
      headers: (c: string) => ({ "x-api-key": c }),
      body: { type: "error", error: { type: "api_error" } },
    },
    {
      vendor: "openai" as const,
      path: "/v1/responses",
      headers: (c: string) => ({ authorization: `Bearer ${c}` }),
      body: { error: { type: "server_error", code: "service_unavailable" } },
    },
    {
      vendor: "gemini" as const,
      path: "/v1beta/models/gemini-2.5-pro:generateContent",
      headers: (c: string) => ({ "x-goog-api-key": c }),
      body: { error: { code: 503, status: "UNAVAILABLE" } },
    },
  ])(
    "a run the gateway cannot confirm ($vendor): 503 in the vendor's shape, saying who and why, nothing forwarded",
    async ({ vendor, path, headers, body }) => {
      const uid = "77777777-2222-3333-4444-555555555555";
      gw.runStates.set(uid, { unconfirmed: "the Kubernetes API server cannot be reached" });
      try {
        const journals = [gw.anthropic, gw.openai, gw.gemini].map((s) => s.journal().length);
        const answer = await send(
          gw.url,
          "POST",
          path,
          headers(gw.credential(vendor, { name: "unsure-run", uid })),
          {
            model: "m",
          },
        );
        expect(answer.status).toBe(503);
        const message =
          "gateway: cannot confirm that Agent ai-agents/unsure-run is still running (the Kubernetes API server cannot be reached); try again later";
        const json = answer.json() as { error: { message: string } };
        expect(json).toMatchObject(body);
        expect(json.error.message).toBe(message);
        expect([gw.anthropic, gw.openai, gw.gemini].map((s) => s.journal().length)).toEqual(journals);
      } finally {
        gw.runStates.delete(uid);
      }
    },
  );

  it("a credential of a namespace the gateway does not serve: 403 naming both", async () => {
    const uid = "88888888-2222-3333-4444-555555555555";
    gw.runStates.set(uid, { state: "foreign", served: "ai-agents" });
    try {
      const before = gw.anthropic.journal().length;
      const credential = gw.credential("anthropic", { namespace: "team-b", name: "their-run", uid });
      const answer = await send(
        gw.url,
        "POST",
        "/v1/messages",
        { "x-api-key": credential },
        anthropicBody(true),
      );
      expect(answer.status).toBe(403);
      expect(answer.json()).toMatchObject({
        type: "error",
        error: {
          type: "permission_error",
          message:
            "gateway: Agent team-b/their-run is not in namespace ai-agents, the only one this gateway serves",
        },
      });
      expect(gw.anthropic.journal().length).toBe(before);
    } finally {
      gw.runStates.delete(uid);
    }
  });

  it("a key that cannot be read now (its Station or definition unreadable): 503 saying so, not forwarded", async () => {
    gw.unreadableKeys.set("gemini", "the Kubernetes API server cannot be reached");
    try {
      const before = gw.gemini.journal().length;
      const answer = await send(
        gw.url,
        "POST",
        "/v1beta/models/gemini-2.5-pro:generateContent",
        { "x-goog-api-key": gw.credential("gemini") },
        { contents: [] },
      );
      expect(answer.status).toBe(503);
      expect(answer.json()).toEqual({
        error: {
          code: 503,
          status: "UNAVAILABLE",
          message:
            "gateway: cannot read the gemini API key for Agent ai-agents/fix-readme now (the Kubernetes API server cannot be reached); try again later",
        },
      });
      expect(gw.gemini.journal().length).toBe(before);
      expect(gw.warnings.map((w) => w.reason)).toContain("ProviderKeyUnreadable");
    } finally {
      gw.unreadableKeys.delete("gemini");
    }
  });

  it("no key for the vendor: refused, not forwarded without one", async () => {
    gw.missingKeys.add("openai");
    try {
      const before = gw.openai.journal().length;
      const answer = await send(
        gw.url,
        "POST",
        "/v1/responses",
        { authorization: `Bearer ${gw.credential("openai")}` },
        { model: "gpt-5", input: "x" },
      );
      expect(answer.status).toBe(403);
      const message = "gateway: no openai API key for Agent ai-agents/fix-readme: the test gives it none";
      expect(answer.json()).toMatchObject({ error: { message } });
      expect(gw.openai.journal().length).toBe(before);
      // The run's author sees it on the Agent too, as it happens (docs/gateway.md#what-the-agent-shows).
      expect(gw.warnings.filter((w) => w.note === message)).toEqual([
        { uid: TEST_RUN.uid, reason: "ProviderKeyMissing", note: message },
      ]);
    } finally {
      gw.missingKeys.delete("openai");
    }
  });

  it("a body over the bound: 413 naming the limit, before anything is forwarded", async () => {
    const before = gw.anthropic.journal().length;
    const big = { ...anthropicBody(true), messages: [{ role: "user", content: "x".repeat(70 * 1024) }] };
    const answer = await send(gw.url, "POST", "/v1/messages", claudeHeaders(gw.credential("anthropic")), big);
    expect(answer.status).toBe(413);
    expect(answer.json()).toMatchObject({
      type: "error",
      error: {
        type: "request_too_large",
        message: expect.stringContaining("65536 bytes (GATEWAY_MAX_REQUEST_BYTES)"),
      },
    });
    expect(gw.anthropic.journal().length).toBe(before);
  });

  it("codex's WebSocket upgrade: 426 in OpenAI's shape, saying to stream over HTTP", async () => {
    const answer = await rawHttpExchange(gw.port, [
      "GET /v1/responses HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\n" +
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
        `Authorization: Bearer ${gw.credential("openai")}\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 426 /);
    expect(JSON.parse(rawBody(answer))).toMatchObject({ error: { code: "websocket_not_supported" } });
  });
});

describe("no request makes the gateway call another host (docs/gateway.md#what-reaches-upstream)", () => {
  let evil: AnthropicMessagesServer;
  beforeAll(async () => {
    evil = await startAnthropicMessages();
  });
  afterAll(async () => {
    await evil?.close();
  });

  const raw = (target: string, headers: string[] = []) => {
    const body = JSON.stringify(anthropicBody(false));
    return rawHttpExchange(gw.port, [
      `POST ${target} HTTP/1.1\r\n` +
        [
          ...headers,
          `x-api-key: ${gw.credential("anthropic")}`,
          "anthropic-version: 2023-06-01",
          "content-type: application/json",
          `content-length: ${Buffer.byteLength(body)}`,
          "connection: close",
        ].join("\r\n") +
        `\r\n\r\n${body}`,
    ]);
  };
  const evilHost = () => new URL(evil.origin).host;
  const status = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);

  it.each([
    ["an absolute URL", () => `http://${evilHost()}/v1/messages`],
    [
      "an absolute URL with the upstream's path and a query",
      () => `http://${evilHost()}/v1/messages?beta=true`,
    ],
    ["a network-path reference", () => `//${evilHost()}/v1/messages`],
    ["dot segments to another path", () => "/v1/messages/../../v1/complete"],
    ["an encoded slash run", () => `/v1/messages/%2F%2F${evilHost()}`],
    ["userinfo in the path", () => `/v1beta/models/x@${evilHost()}:generateContent`],
    ["a backslash", () => `/\\${evilHost()}/v1/messages`],
  ])("%s is refused and reaches no host", async (_what, target) => {
    const before = gw.anthropic.journal().length;
    const answer = await raw(target(), [`host: ${evilHost()}`]);
    expect(status(answer)).toBeGreaterThanOrEqual(400);
    expect(status(answer)).toBeLessThan(500);
    expect(evil.journal()).toEqual([]);
    expect(gw.anthropic.journal().length).toBe(before);
  });

  it("a CONNECT to another host gets no tunnel", async () => {
    const answer = await rawHttpExchange(gw.port, [
      `CONNECT ${evilHost()} HTTP/1.1\r\nHost: ${evilHost()}\r\nx-api-key: ${gw.credential("anthropic")}\r\n\r\n` +
        "GET /v1/models HTTP/1.1\r\nHost: evil\r\nConnection: close\r\n\r\n",
    ]);
    expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
    expect(evil.journal()).toEqual([]);
  });

  it.each([
    ["a Host header naming another host", () => [`host: ${evilHost()}`]],
    [
      "X-Forwarded-Host and Forwarded",
      () => ["host: gw", `x-forwarded-host: ${evilHost()}`, `forwarded: host=${evilHost()}`],
    ],
    [
      "X-Forwarded-Proto and -Port",
      () => ["host: gw", "x-forwarded-proto: http", `x-forwarded-port: ${new URL(evil.origin).port}`],
    ],
    ["a query naming a URL", () => ["host: gw"]],
  ])("%s: forwarded to the configured upstream only, under its own Host", async (_what, headers) => {
    const before = gw.anthropic.journal().length;
    const answer = await raw(`/v1/messages?beta=true&url=${encodeURIComponent(evil.origin)}`, headers());
    expect(status(answer)).toBe(200);
    expect(evil.journal()).toEqual([]);
    const entry = gw.anthropic.journal()[before];
    expect(entry?.headers.host).toBe(new URL(gw.anthropic.origin).host);
    expect(
      Object.keys(entry?.headers ?? {}).filter((h) => h.startsWith("x-forwarded") || h === "forwarded"),
    ).toEqual([]);
  });
});

describe("the probes' endpoint (docs/gateway.md#ports)", () => {
  it("answers GET /healthz on the metrics port, and the port the run pods call has no such route", async () => {
    const health = await fetch(new URL("/healthz", gw.metricsUrl));
    expect(health.status).toBe(200);
    expect(await health.text()).toBe("ok");
    const before = gw.anthropic.journal().length;
    const onApi = await fetch(new URL("/healthz", gw.url));
    expect(onApi.status).toBe(404);
    await onApi.arrayBuffer();
    expect(gw.anthropic.journal().length).toBe(before);
  });
});
