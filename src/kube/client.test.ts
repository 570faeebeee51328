import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EXPIRED_CONTINUE,
  JOB_NOT_FOUND_PROTOBUF,
  JOBS_PAGE_JSON,
  JOBS_PAGE_PROTOBUF,
} from "../../test/support/metadata-protobuf-pages.js";
import { KubeClient, METADATA_ONLY } from "./client.js";
import { AGENTS, JOBS, STATIONS } from "./resources.js";

/** A loopback server answering each path with a fixed status, body and headers. */
const answers: Record<string, { status: number; body: string | Buffer; headers?: Record<string, string> }> =
  {};
const seen: string[] = [];
/** The Accept header of each request, in order. */
const accepts: string[] = [];
let server: Server;
let client: KubeClient;

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req.url ?? "");
    accepts.push(req.headers.accept ?? "");
    const a = answers[req.url ?? ""] ??
      answers[(req.url ?? "").split("?")[0] as string] ?? { status: 500, body: "unscripted" };
    res.writeHead(a.status, { "content-type": "application/json", ...a.headers });
    res.end(a.body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  client = new KubeClient({
    server: `http://127.0.0.1:${port}`,
    dispatcher: new Agent(),
    headers: async () => ({}),
    requestTimeoutMs: 5000,
  });
});
afterAll(async () => {
  await client.close();
  await new Promise((r) => server.close(r));
});

const status = (code: number, reason: string, message: string) =>
  JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", code, reason, message });

describe("KubeClient.get", () => {
  it("a 404 NotFound Status is an absent object", async () => {
    answers["/apis/agents.re-cinq.com/v1beta1/namespaces/ns/stations/gone"] = {
      status: 404,
      body: status(404, "NotFound", 'stations.agents.re-cinq.com "gone" not found'),
    };
    expect(await client.get(STATIONS, "ns", "gone")).toBeUndefined();
  });
  it("a bare 404 (the resource type is not served yet, e.g. a CRD right after a restart) throws", async () => {
    answers["/apis/agents.re-cinq.com/v1beta1/namespaces/ns/stations/st"] = {
      status: 404,
      body: "404 page not found",
    };
    await expect(client.get(STATIONS, "ns", "st")).rejects.toThrow(/404/);
  });
});

describe("KubeClient.create errors", () => {
  it("carry the Status message and the Retry-After", async () => {
    answers["/apis/batch/v1/namespaces/ns/jobs"] = {
      status: 429,
      body: status(429, "TooManyRequests", "too many requests"),
      headers: { "retry-after": "3" },
    };
    const err = await client.create(JOBS, "ns", { metadata: { name: "j" } }).catch((e) => e);
    expect(err).toMatchObject({
      status: 429,
      reason: "TooManyRequests",
      detail: "too many requests",
      retryAfterMs: 3000,
    });
  });
});

describe("KubeClient.readLog (by bytes; only a missing log is undefined)", () => {
  const path = "/api/v1/namespaces/ns/pods/p/log";
  it("asks by limitBytes and returns the text", async () => {
    answers[path] = { status: 200, body: "line 1\nline 2\n" };
    expect(await client.readLog("ns", "p", "agent", { limitBytes: 1024 })).toBe("line 1\nline 2\n");
    expect(seen.at(-1)).toBe(`${path}?container=agent&limitBytes=1024`);
  });
  it("asks for the runtime's timestamps only when told", async () => {
    answers[path] = { status: 200, body: "2026-12-07T06:00:00.123456789Z line 1\n" };
    await client.readLog("ns", "p", "agent", { timestamps: true });
    expect(seen.at(-1)).toBe(`${path}?container=agent&timestamps=true`);
    await client.readLog("ns", "p", "agent", { timestamps: false });
    expect(seen.at(-1)).toBe(`${path}?container=agent`);
  });
  it.each([
    [404, status(404, "NotFound", 'pods "p" not found')],
    [400, status(400, "BadRequest", 'container "agent" in pod "p" is waiting to start: PodInitializing')],
  ])("%i is a missing log", async (code, body) => {
    answers[path] = { status: code, body };
    expect(await client.readLog("ns", "p", "agent")).toBeUndefined();
  });
  it.each([500, 503, 429, 403])("%i throws (retried), never reads as a gone pod", async (code) => {
    answers[path] = { status: code, body: status(code, "", "kubelet says no") };
    await expect(client.readLog("ns", "p", "agent")).rejects.toMatchObject({ status: code });
  });
});

describe("KubeClient.list", () => {
  it("follows continue tokens and applies map to each item as its page arrives", async () => {
    const path = "/apis/batch/v1/namespaces/ns/jobs";
    const page = (names: string[], cont?: string, rv?: string) =>
      JSON.stringify({
        metadata: { ...(rv ? { resourceVersion: rv } : {}), ...(cont ? { continue: cont } : {}) },
        items: names.map((name) => ({ metadata: { name }, spec: { big: "x".repeat(1000) } })),
      });
    answers[`${path}?limit=2`] = { status: 200, body: page(["a", "b"], "c1", "42") };
    answers[`${path}?limit=2&continue=c1`] = { status: 200, body: page(["c", "d"], undefined, "43") };
    const mapped: string[] = [];
    const res = await client.list<{ metadata: { name: string }; spec?: unknown }>(JOBS, "ns", {
      limit: 2,
      map: (it) => {
        mapped.push(it.metadata.name);
        return it.metadata.name === "c" ? undefined : { metadata: it.metadata };
      },
    });
    expect(mapped).toEqual(["a", "b", "c", "d"]);
    expect(res).toEqual({
      resourceVersion: "42",
      items: [{ metadata: { name: "a" } }, { metadata: { name: "b" } }, { metadata: { name: "d" } }],
    });
  });
});

describe("KubeClient.list, metadata only (the poll's LIST; docs/controller.md#watch-poll-and-cache)", () => {
  const path = "/apis/batch/v1/namespaces/md/jobs";
  const captured = (a: { status: number; contentType: string; body: string }, binary: boolean) => ({
    status: a.status,
    body: binary ? Buffer.from(a.body, "base64") : a.body,
    headers: { "content-type": a.contentType },
  });
  const list = () => client.list<{ metadata: Record<string, unknown> }>(JOBS, "md", { metadataOnly: true });

  it("asks for protobuf, then JSON, and decodes a protobuf answer by its Content-Type", async () => {
    answers[`${path}?limit=500`] = captured(JOBS_PAGE_PROTOBUF, true);
    const before = client.protobufPages;
    const res = await list();
    expect(accepts.at(-1)).toMatch(
      /^application\/vnd\.kubernetes\.protobuf;as=PartialObjectMetadataList;g=meta\.k8s\.io;v=v1, application\/json;as=/,
    );
    expect(client.protobufPages).toBe(before + 1);
    expect(res.resourceVersion).toBe("253");
    expect(res.items[0]?.metadata).toMatchObject({
      name: "a-1-run",
      ownerReferences: [{ name: "a-1", controller: true }],
    });
    expect(res.items[0]?.metadata).not.toHaveProperty("managedFields");
  });
  it("parses a JSON answer (a server or proxy without protobuf) as JSON", async () => {
    answers[`${path}?limit=500`] = captured(JOBS_PAGE_JSON, false);
    const before = client.protobufPages;
    const res = await list();
    expect(client.protobufPages).toBe(before);
    expect(res.items[0]?.metadata).toHaveProperty("managedFields");
  });
  it("asks for JSON only when told to", async () => {
    answers[`${path}?limit=500`] = captured(JOBS_PAGE_JSON, false);
    client.metadataEncoding = "json";
    try {
      await list();
    } finally {
      client.metadataEncoding = "protobuf";
    }
    expect(accepts.at(-1)).toBe(METADATA_ONLY);
  });
  it.each([
    ["a protobuf Status", captured(JOB_NOT_FOUND_PROTOBUF, true), { status: 404, reason: "NotFound" }],
    [
      "an expired continue token (kube-apiserver answers it in JSON)",
      captured(EXPIRED_CONTINUE, false),
      { status: 410, reason: "Expired" },
    ],
  ])(
    "an error answered as %s is a KubeApiError with its code and reason",
    async (_name, answer, expected) => {
      answers[`${path}?limit=500`] = answer;
      await expect(list()).rejects.toMatchObject(expected);
    },
  );
});

describe("KubeClient.patchStatus", () => {
  const path = "/apis/agents.re-cinq.com/v1beta1/namespaces/ns/agents/a/status";
  it("hands the stored object to `written` on success", async () => {
    answers[path] = { status: 200, body: JSON.stringify({ metadata: { name: "a", resourceVersion: "8" } }) };
    const written: unknown[] = [];
    expect(
      await client.patchStatus(AGENTS, "ns", "a", "7", { phase: "Running" }, (o) => written.push(o)),
    ).toBe("ok");
    expect(written).toEqual([{ metadata: { name: "a", resourceVersion: "8" } }]);
  });
  it("a 409 is a conflict and writes nothing through", async () => {
    answers[path] = { status: 409, body: status(409, "Conflict", "the object has been modified") };
    const written: unknown[] = [];
    expect(
      await client.patchStatus(AGENTS, "ns", "a", "7", { phase: "Running" }, (o) => written.push(o)),
    ).toBe("conflict");
    expect(written).toEqual([]);
  });
});

describe("KubeClient.streamLog", () => {
  it("hands its reader text, a character split across chunks whole, and waits for it", async () => {
    const text = `${"é".repeat(40_000)}\n{"type":"result"}\n`;
    answers["/api/v1/namespaces/ns/pods/p/log"] = { status: 200, body: text };
    const got: string[] = [];
    const found = await client.streamLog("ns", "p", "agent", async (chunk) => {
      expect(typeof chunk).toBe("string");
      await new Promise((r) => setImmediate(r));
      got.push(chunk);
    });
    expect(found).toBe(true);
    expect(got.join("")).toBe(text);
  });
});

describe("KubeClient.watch (docs/controller.md#watch-poll-and-cache)", () => {
  it("a quiet watch is not cut by the per-request timeout: it runs until the server ends it, resuming where asked", async () => {
    const urls: string[] = [];
    // A WATCH that answers at once, stays silent longer than the client's per-request timeout,
    // then delivers one event and ends, as the API server does at timeoutSeconds (1.5 s: undici
    // checks its timeouts about once a second, so a shorter silence would not show a cut).
    const quiet = createServer((req, res) => {
      urls.push(req.url ?? "");
      res.writeHead(200, { "content-type": "application/json" });
      res.flushHeaders();
      setTimeout(() => {
        res.end(`${JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: "12" } } })}\n`);
      }, 1500);
    });
    await new Promise<void>((r) => quiet.listen(0, "127.0.0.1", r));
    const c = new KubeClient({
      server: `http://127.0.0.1:${(quiet.address() as AddressInfo).port}`,
      dispatcher: new Agent(),
      headers: async () => ({}),
      requestTimeoutMs: 50,
    });
    try {
      const events: unknown[] = [];
      await c.watch(AGENTS, "ns", { resourceVersion: "10", timeoutSeconds: 1 }, (e) => events.push(e));
      expect(events).toEqual([{ type: "BOOKMARK", object: { metadata: { resourceVersion: "12" } } }]);
      const query = new URLSearchParams(urls[0]?.split("?")[1]);
      expect(query.get("watch")).toBe("1");
      expect(query.get("resourceVersion")).toBe("10");
      expect(query.get("timeoutSeconds")).toBe("1");
      expect(query.get("allowWatchBookmarks")).toBe("true");
    } finally {
      await c.close();
      await new Promise((r) => quiet.close(r));
    }
  });
});
