import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { rawBody, rawHttpExchange, tricklingPost } from "../../../../test/support/raw-http.js";
import { listen, type Reply, tokenMatches } from "./http.js";

const TOKEN = "run-token-3f9a";
const SHA = createHash("sha256").update(TOKEN).digest("hex");

describe("tokenMatches: the run token on the pod, parsed as the controller parses it", () => {
  it.each([
    ["Bearer run-token-3f9a", true],
    ["bearer run-token-3f9a", true],
    ["BEARER  run-token-3f9a ", true],
    ["Bearer run-token-3f9b", false],
    ["Basic run-token-3f9a", false],
    ["Bearer", false],
    ["run-token-3f9a", false],
    ["", false],
  ])("%j → %s", (header, ok) => {
    expect(tokenMatches(header, SHA)).toBe(ok);
  });

  it("no expected hash accepts nothing", () => {
    expect(tokenMatches(`Bearer ${TOKEN}`, "")).toBe(false);
    expect(tokenMatches(undefined, SHA)).toBe(false);
  });
});

describe("the session endpoint over a socket: what is answered before a body is read", () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  async function serve(state: { serving: boolean } = { serving: true }) {
    const prompts: string[] = [];
    const handlers = {
      prompt: (p: string): Reply => {
        prompts.push(p);
        return { status: 202, body: { turn: prompts.length, queued: 1, sessionId: "" } };
      },
      close: (): Reply => ({ status: 202, body: { queued: 0 } }),
      serving: () => state.serving,
    };
    const { server } = await listen("127.0.0.1:0", SHA, handlers, {
      headersMs: 200,
      requestMs: 300,
      keepAliveMs: 200,
    });
    close = () => new Promise((r) => server.close(() => r()));
    server.unref();
    const port = (server.address() as { port: number }).port;
    const exchange = (parts: string[], gapMs = 0) => rawHttpExchange(port, parts, gapMs, true);
    return { port, prompts, exchange };
  }

  const post = (path: string, headers: Record<string, string>, body?: string, declared?: number) => {
    const extra = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("");
    const length = declared ?? Buffer.byteLength(body ?? "");
    return `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n${extra}\r\n${body ?? ""}`;
  };
  const answerOf = (raw: string) => ({ status: Number(raw.slice(9, 12)), body: JSON.parse(rawBody(raw)) });
  const AUTH = { authorization: `Bearer ${TOKEN}` };

  it("refuses a caller without the run token before reading the 1 MiB body it announces", async () => {
    const { exchange } = await serve();
    // Only the head is sent: a server that read the body first would time out (408) instead.
    const raw = await exchange([post("/v1/prompt", {}, undefined, 1024 * 1024)]);
    expect(answerOf(raw)).toEqual({ status: 401, body: { error: "the bearer token is missing or wrong" } });
  });

  it("answers 409 'the session is ending' after an accepted close, before judging a body", async () => {
    const { exchange, prompts } = await serve();
    expect(answerOf(await exchange([post("/v1/close", AUTH)]))).toEqual({ status: 202, body: { queued: 0 } });
    const ending = { status: 409, body: { error: "the session is ending" } };
    expect(answerOf(await exchange([post("/v1/prompt", AUTH, "not json")]))).toEqual(ending);
    expect(answerOf(await exchange([post("/v1/prompt", AUTH, undefined, 2 * 1024 * 1024)]))).toEqual(ending);
    expect(answerOf(await exchange([post("/v1/prompt", AUTH, JSON.stringify({ prompt: "hi" }))]))).toEqual(
      ending,
    );
    expect(answerOf(await exchange([post("/v1/close", AUTH)]))).toEqual(ending);
    expect(prompts).toEqual([]);
  });

  it("answers 409 first once the session stopped serving (signal, deadline)", async () => {
    const state = { serving: true };
    const { exchange } = await serve(state);
    expect(answerOf(await exchange([post("/v1/prompt", AUTH, "{}")])).status).toBe(400);
    state.serving = false;
    expect(answerOf(await exchange([post("/v1/prompt", AUTH, "{}")]))).toEqual({
      status: 409,
      body: { error: "the session is ending" },
    });
  });

  it("still reads and judges the body of an authorised prompt while serving", async () => {
    const { exchange, prompts } = await serve();
    expect(answerOf(await exchange([post("/v1/prompt", AUTH, undefined, 2 * 1024 * 1024)]))).toEqual({
      status: 413,
      body: { error: "request body too large" },
    });
    expect(answerOf(await exchange([post("/v1/prompt", AUTH, JSON.stringify({ prompt: "hi" }))]))).toEqual({
      status: 202,
      body: { turn: 1, queued: 1, sessionId: "" },
    });
    expect(prompts).toEqual(["hi"]);
  });

  it.each([
    [
      "a body that trickles in (slow loris)",
      tricklingPost("/v1/prompt", AUTH),
      408,
      "the request did not arrive in time",
    ],
    ["a malformed request line", ["NOT HTTP AT ALL\r\n\r\n"], 400, "the request is not valid HTTP"],
    [
      "headers over Node's 16 KiB",
      [`GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`],
      431,
      "the request headers are too large",
    ],
  ])("answers %s in the endpoint's own shape (%i)", async (_what, parts, status, message) => {
    const { port } = await serve();
    const raw = await rawHttpExchange(port, parts, 50);
    expect(answerOf(raw)).toEqual({ status, body: { error: message } });
  });
});
