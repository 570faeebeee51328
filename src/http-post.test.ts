import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { timedPost } from "./http-post.js";

interface Seen {
  method: string | undefined;
  headers: IncomingMessage["headers"];
  body: string;
}

let server: Server | undefined;

afterEach(async () => {
  const s = server;
  server = undefined;
  if (s === undefined) return;
  s.closeAllConnections();
  await new Promise<void>((resolve) => s.close(() => resolve()));
});

/** A local server that records each request and answers with `answer` once the body is in. */
async function serve(answer: (res: ServerResponse) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/x`, seen };
}

describe("timedPost", () => {
  it("POSTs the headers and a string body, and drains an unread answer whatever its status", async () => {
    const { url, seen } = await serve((res) => {
      res.writeHead(503).end("try later");
    });
    const answer = await timedPost({ url, headers: { "X-Test": "1" }, body: '{"a":1}', timeoutMs: 5_000 });
    expect(answer).toEqual({ status: 503, body: "" });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.method).toBe("POST");
    expect(seen[0]?.headers["x-test"]).toBe("1");
    expect(seen[0]?.body).toBe('{"a":1}');
  });

  it("sends a stream body as it is read", async () => {
    const { url, seen } = await serve((res) => {
      res.writeHead(201).end();
    });
    const body = Readable.from([Buffer.from("part one, "), Buffer.from("part two")]);
    const answer = await timedPost({ url, headers: {}, body, timeoutMs: 5_000 });
    expect(answer.status).toBe(201);
    expect(seen[0]?.body).toBe("part one, part two");
  });

  it("returns the answer's text when asked to read it, up to the limit", async () => {
    const { url } = await serve((res) => {
      res.writeHead(200, { "Content-Type": "application/json" }).end('{"ok":true}');
    });
    const answer = await timedPost({ url, headers: {}, body: "", timeoutMs: 5_000, readBodyUpTo: 1024 });
    expect(answer).toEqual({ status: 200, body: '{"ok":true}' });
  });

  it("cuts an answer past the limit: only what fitted before the limit is returned", async () => {
    const { url } = await serve((res) => {
      res.writeHead(200);
      res.write("a".repeat(1000));
      // The second chunk crosses the limit; wait so it arrives as its own chunk.
      setTimeout(() => res.end("b".repeat(100_000)), 50);
    });
    const answer = await timedPost({ url, headers: {}, body: "", timeoutMs: 5_000, readBodyUpTo: 4096 });
    expect(answer.status).toBe(200);
    expect(answer.body.length).toBeLessThanOrEqual(4096);
    expect(answer.body).toMatch(/^a+$/);
  });

  it("rejects when the answer's headers do not come within the budget", async () => {
    const { url } = await serve(() => {
      // never answers
    });
    const started = Date.now();
    await expect(timedPost({ url, headers: {}, body: "x", timeoutMs: 200 })).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("rejects when the answer's body stalls past the budget", async () => {
    const { url } = await serve((res) => {
      res.writeHead(200);
      res.write("partial");
      // never ends
    });
    const started = Date.now();
    await expect(
      timedPost({ url, headers: {}, body: "x", timeoutMs: 200, readBodyUpTo: 1024 }),
    ).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("rejects on a refused connection", async () => {
    const { url } = await serve(() => {});
    const s = server;
    server = undefined;
    await new Promise<void>((resolve) => s?.close(() => resolve()));
    await expect(timedPost({ url, headers: {}, body: "x", timeoutMs: 1_000 })).rejects.toThrow();
  });
});
