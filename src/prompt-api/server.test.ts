import { request } from "undici";
import { describe, expect, it } from "vitest";
import { API_TOKEN, NS, SIGNING_KEY } from "../../test/support/prompt-api.js";
import { rawBody, rawHttpExchange, tricklingPost } from "../../test/support/raw-http.js";
import { createPromptApi } from "./app.js";
import { DEFAULT_PROMPT_API_PORT, startPromptApiServer } from "./server.js";

const app = () =>
  createPromptApi({
    namespace: NS,
    apiToken: API_TOKEN,
    signingKey: SIGNING_KEY,
    getAgent: () => undefined,
    resolveRunPod: () => ({ kind: "not-serving" }),
    patchSessionId: async () => {},
  });

describe("startPromptApiServer", () => {
  it("defaults to port 8082", () => {
    expect(DEFAULT_PROMPT_API_PORT).toBe(8082);
  });

  it("serves the app on the given host and stops on close()", async () => {
    const server = await startPromptApiServer(app(), { port: 0, host: "127.0.0.1" });
    const url = `http://127.0.0.1:${server.port}/v1/namespaces/${NS}/agents/nobody/close`;
    const res = await request(url, { method: "POST", headers: { authorization: `Bearer ${API_TOKEN}` } });
    expect(res.statusCode).toBe(404);
    expect(await res.body.json()).toEqual({ error: "Agent nobody not found" });
    await server.close();
    await expect(request(url, { method: "POST" })).rejects.toThrow();
  });

  it("names the address when the port is taken", async () => {
    const first = await startPromptApiServer(app(), { port: 0, host: "127.0.0.1" });
    try {
      await expect(startPromptApiServer(app(), { port: first.port, host: "127.0.0.1" })).rejects.toThrow(
        `prompt API cannot listen on 127.0.0.1:${first.port}`,
      );
    } finally {
      await first.close();
    }
  });

  describe('requests Node refuses before the app sees them, answered as {"error": …}', () => {
    const limits = { timeouts: { headersMs: 200, requestMs: 300, keepAliveMs: 200 } };

    it.each([
      [
        "a body that trickles in (slow loris)",
        tricklingPost(`/v1/namespaces/${NS}/agents/a/prompt`, { authorization: `Bearer ${API_TOKEN}` }),
        408,
        "the request did not arrive in time",
      ],
      ["a malformed request line", ["NOT HTTP AT ALL\r\n\r\n"], 400, "the request is not valid HTTP"],
      [
        "headers over Node's 16 KiB",
        [`GET / HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`],
        431,
        "the request headers are too large",
      ],
    ])("%s → %i", async (_what, parts, status, message) => {
      const server = await startPromptApiServer(app(), { port: 0, host: "127.0.0.1", ...limits });
      try {
        const answer = await rawHttpExchange(server.port, parts, 50);
        expect(answer.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
        expect(answer).toMatch(/content-type: application\/json/i);
        expect(JSON.parse(rawBody(answer))).toEqual({ error: message });
      } finally {
        await server.close();
      }
    });
  });
});
