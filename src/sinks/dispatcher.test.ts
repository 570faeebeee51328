import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { batchSinkAction } from "../../test/support/batch-sink-actions.js";
import type { EmitSinkEventsAction } from "../core/actions.js";
import type { OutputSelector, Sink } from "../core/types.js";
import {
  DEFAULT_MAX_QUEUED_BYTES,
  type DeliveryRequest,
  SinkDispatcher,
  type SinkDispatcherOptions,
} from "./dispatcher.js";
import type { SinkLogger } from "./transport.js";

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A sink listener on 127.0.0.1 answering with the scripted statuses, then 200. */
async function startListener(
  statuses: number[] = [],
): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const script = [...statuses];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      res.statusCode = script.shift() ?? 200;
      res.end("ignored body");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/events`, received, server };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A port nothing listens on: bind, note the port, close. */
async function deadUrl(): Promise<string> {
  const { url, server } = await startListener();
  await closeServer(server);
  return url;
}

function recordingLogger(): SinkLogger & { lines: Array<{ level: string; msg: string; fields?: unknown }> } {
  const lines: Array<{ level: string; msg: string; fields?: unknown }> = [];
  return {
    lines,
    info: (msg, fields) => lines.push({ level: "info", msg, fields }),
    warn: (msg, fields) => lines.push({ level: "warn", msg, fields }),
    error: (msg, fields) => lines.push({ level: "error", msg, fields }),
  };
}

// What the reconcile core asks to send for a batch run (test/support/batch-sink-actions.ts).
const startedAction = batchSinkAction("started");
/** The source production builds for the run ticket-summary-abc12 of Station ticket-summary, task T-1. */
const source = startedAction.source;
const SOURCE_JSON =
  '{"agent":"ticket-summary-abc12","station":"ticket-summary","task":"T-1","namespace":"ai-agents"}';
/** agent/started, after the Running patch. */
const started = startedAction.items;
/** After the completing patch: every CLI line of the result, then agent/succeeded or agent/failed. */
const batchEnd = (lines: string[], outcome: "succeeded" | "failed") =>
  batchSinkAction(outcome, { lines }).items;

/** The output block of a definition, as the core's emitSinkEvents action carries it. */
function definition(output: { sinks?: Sink[]; select?: OutputSelector[] } | undefined) {
  return { sinks: output?.sinks ?? [], select: output?.select ?? [] };
}

const claudeLines = [
  '{"type":"system","subtype":"init","session_id":"uid-1","model":"claude-sonnet-4-6"}',
  '{"type":"assistant","message":{"content":[{"type":"text","text":"Three sentences."}]}}',
  '{"type":"result","is_error":false,"result":"Three sentences.","session_id":"uid-1"}',
];

describe("SinkDispatcher", () => {
  let sleeps: number[];
  let log: ReturnType<typeof recordingLogger>;
  let secrets: Record<string, string>;
  let servers: Server[];

  beforeEach(() => {
    sleeps = [];
    log = recordingLogger();
    secrets = {};
    servers = [];
  });
  afterEach(async () => {
    await Promise.all(servers.map(closeServer));
  });

  function dispatcher(extra: Partial<SinkDispatcherOptions> = {}): SinkDispatcher {
    return new SinkDispatcher({
      readSecretKey: async (namespace, key) => (namespace === "ai-agents" ? secrets[key] : undefined),
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      log,
      ...extra,
    });
  }

  async function listener(statuses: number[] = []) {
    const l = await startListener(statuses);
    servers.push(l.server);
    return l;
  }

  it("POSTs one compact envelope per event with Content-Type and the header block, in order", async () => {
    const sink = await listener();
    secrets["sink-auth"] = "Authorization: Bearer s3cret\n\nX-Team :  floor \n";
    const d = dispatcher();
    const req: DeliveryRequest = {
      ...definition({ sinks: [{ type: "http", url: sink.url, headers_secret: "sink-auth" }] }),
      source,
      vendor: "claude",
      items: batchEnd(claudeLines, "succeeded"),
    };
    await d.deliver(req);

    expect(sink.received.map((r) => r.body)).toEqual([
      `{"source":${SOURCE_JSON},"event":${claudeLines[0]}}`,
      `{"source":${SOURCE_JSON},"event":${claudeLines[1]}}`,
      `{"source":${SOURCE_JSON},"event":${claudeLines[2]}}`,
      `{"source":${SOURCE_JSON},"event":{"kind":"lifecycle","phase":"agent","status":"succeeded","exitCode":0}}`,
    ]);
    for (const r of sink.received) {
      expect(r.method).toBe("POST");
      expect(r.url).toBe("/events");
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers.authorization).toBe("Bearer s3cret");
      expect(r.headers["x-team"]).toBe("floor");
    }
    expect(sleeps).toEqual([]);
    expect(d.pending).toBe(0);
  });

  it("applies output.select to CLI lines but never to lifecycle events", async () => {
    const sink = await listener();
    const d = dispatcher();
    await d.deliver({
      ...definition({ select: [{ event: "result" }], sinks: [{ type: "http", url: sink.url }] }),
      source,
      vendor: "claude",
      items: batchEnd([...claudeLines, "not json"], "failed"),
    });
    expect(sink.received.map((r) => JSON.parse(r.body).event)).toEqual([
      JSON.parse(claudeLines[2] as string),
      { kind: "lifecycle", phase: "agent", status: "failed", reason: "batch_failed", exitCode: 1 },
    ]);
  });

  it("sends without headers when the header block cannot be read", async () => {
    const sink = await listener();
    const d = dispatcher({
      readSecretKey: async () => {
        throw new Error("forbidden");
      },
    });
    await d.deliver({
      ...definition({ sinks: [{ type: "http", url: sink.url, headers_secret: "missing" }] }),
      source,
      vendor: "claude",
      items: started,
    });
    expect(sink.received).toHaveLength(1);
    expect(sink.received[0]?.headers.authorization).toBeUndefined();
    expect(log.lines.some((l) => l.msg.includes("headers_secret unreadable"))).toBe(true);
  });

  it("retries a 5xx with the backoff schedule and stops at the first success", async () => {
    const sink = await listener([503, 500]);
    const d = dispatcher();
    await d.deliver({
      ...definition({ sinks: [{ type: "http", url: sink.url }] }),
      source,
      vendor: "claude",
      items: started,
    });
    expect(sink.received).toHaveLength(3);
    expect(new Set(sink.received.map((r) => r.body)).size).toBe(1);
    expect(sleeps).toEqual([200, 400]);
    expect(log.lines.some((l) => l.msg.startsWith("http sink failed after retries"))).toBe(false);
  });

  it("drops the event after the last attempt and logs the url", async () => {
    const sink = await listener([500, 502, 500, 500, 500]);
    const d = dispatcher({ retry: { attempts: 4, baseMs: 100, maxMs: 250 } });
    await d.deliver({
      ...definition({ sinks: [{ type: "http", url: sink.url }] }),
      source,
      vendor: "claude",
      items: [...started, { type: "cliLine", line: claudeLines[2] as string }],
    });
    // The first event used all four attempts; the second got the 5th scripted 500 then 200s.
    expect(sink.received).toHaveLength(6);
    expect(sleeps).toEqual([100, 200, 250, 100]);
    const gaveUp = log.lines.filter((l) => l.msg === `http sink failed after retries: ${sink.url}`);
    expect(gaveUp).toHaveLength(1);
    expect(gaveUp[0]?.level).toBe("error");
  });

  it("treats a connection error as retryable and gives up after the budget", async () => {
    const url = await deadUrl();
    const d = dispatcher();
    await d.deliver({
      ...definition({ sinks: [{ type: "http", url }] }),
      source,
      vendor: "claude",
      items: started,
    });
    expect(sleeps).toEqual([200, 400]);
    expect(log.lines.filter((l) => l.msg === `http sink failed after retries: ${url}`)).toHaveLength(1);
  });

  it("counts a listener that never answers as a failed attempt (per-attempt timeout)", async () => {
    const hung: Array<() => void> = [];
    const server = createServer((_req, res) => {
      hung.push(() => res.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const d = dispatcher({ attemptTimeoutMs: 150, retry: { attempts: 2, baseMs: 10, maxMs: 10 } });
      await d.deliver({
        ...definition({ sinks: [{ type: "http", url }] }),
        source,
        vendor: "claude",
        items: started,
      });
      expect(hung).toHaveLength(2);
      expect(sleeps).toEqual([10]);
      expect(log.lines.filter((l) => l.msg === `http sink failed after retries: ${url}`)).toHaveLength(1);
    } finally {
      for (const end of hung) end();
      server.closeAllConnections();
      await closeServer(server);
    }
  });

  it("makes exactly one attempt when attempts is 1", async () => {
    const sink = await listener([500]);
    const d = dispatcher({ retry: { attempts: 1, baseMs: 200, maxMs: 5000 } });
    await d.deliver({
      ...definition({ sinks: [{ type: "http", url: sink.url }] }),
      source,
      vendor: "claude",
      items: started,
    });
    expect(sink.received).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it("keeps emission order across deliver calls while an earlier event is still retrying", async () => {
    const sink = await listener([500]);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const d = dispatcher({
      sleep: async (ms) => {
        sleeps.push(ms);
        await gate;
      },
    });
    const def = definition({ sinks: [{ type: "http", url: sink.url }] });
    const first = d.deliver({
      ...def,
      source,
      vendor: "claude",
      items: started,
    });
    const second = d.deliver({
      ...def,
      source,
      vendor: "claude",
      items: batchEnd([], "succeeded"),
    });
    expect(d.pending).toBe(2);
    // Wait until the first attempt failed and the queue sits in its backoff.
    await expect.poll(() => sleeps.length, { timeout: 10_000 }).toBe(1);
    release();
    await Promise.all([first, second]);
    expect(sink.received.map((r) => JSON.parse(r.body).event.status)).toEqual([
      "started",
      "started",
      "succeeded",
    ]);
  });

  it("fire-and-forget: drain() waits for queued deliveries", async () => {
    const sink = await listener();
    const d = dispatcher();
    const def = definition({ sinks: [{ type: "http", url: sink.url }] });
    void d.deliver({
      ...def,
      source,
      vendor: "claude",
      items: batchEnd(claudeLines, "succeeded"),
    });
    await d.drain();
    expect(sink.received).toHaveLength(4);
    expect(d.pending).toBe(0);
  });

  it("tells onOutcome how each event ended on each sink: delivered, or failed after the retries", async () => {
    const ok = await listener();
    const down = await listener([500, 503]);
    const outcomes: string[] = [];
    const d = dispatcher({
      retry: { attempts: 2, baseMs: 1, maxMs: 1 },
      onOutcome: (o) => outcomes.push(o),
    });
    await d.deliver({
      ...definition({
        sinks: [
          { type: "http", url: ok.url },
          { type: "http", url: down.url },
        ],
      }),
      source,
      vendor: "claude",
      items: started,
    });
    expect(down.received).toHaveLength(2);
    expect(outcomes.sort()).toEqual(["delivered", "failed"]);
  });

  it("a line dropped on overflow leaves no idle queue behind for drain() to wait on", async () => {
    const a = await listener([500]);
    const b = await listener();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const outcomes: string[] = [];
    const d = dispatcher({
      maxQueued: 1,
      sleep: async (ms) => {
        sleeps.push(ms);
        await gate;
      },
      onOutcome: (o) => outcomes.push(o),
    });
    const first = d.deliver({
      ...definition({ sinks: [{ type: "http", url: a.url }] }),
      source,
      vendor: "claude",
      items: started,
    });
    await expect.poll(() => sleeps.length, { timeout: 10_000 }).toBe(1);
    await d.deliver({
      ...definition({ sinks: [{ type: "http", url: b.url }] }),
      source: { ...source, agent: "other-agent" },
      vendor: "claude",
      items: [{ type: "cliLine", line: '{"type":"result"}' }],
    });
    expect(b.received).toHaveLength(0);
    expect(log.lines.filter((l) => l.msg === "sink queue full; event dropped")).toHaveLength(1);
    expect(outcomes).toEqual(["dropped"]);
    release();
    await first;
    expect(await d.drain(5_000)).toBe(true);
    expect(d.pending).toBe(0);
  });

  it("drain(timeoutMs) gives up on a queue stuck in backoff and reports it", async () => {
    const sink = await listener([500]);
    const d = dispatcher({ sleep: () => new Promise<void>(() => {}) });
    void d.deliver({
      ...definition({ sinks: [{ type: "http", url: sink.url }] }),
      source,
      vendor: "claude",
      items: started,
    });
    expect(await d.drain(50)).toBe(false);
    expect(d.pending).toBe(1);
    const idle = dispatcher();
    expect(await idle.drain(50)).toBe(true);
  });

  it("delivers to every http sink, each with its own header block, and ignores stdout sinks", async () => {
    const a = await listener();
    const b = await listener();
    secrets.auth = "Authorization: Bearer x";
    const d = dispatcher();
    await d.deliver({
      ...definition({
        sinks: [
          { type: "stdout" },
          { type: "http", url: a.url, headers_secret: "auth" },
          { type: "http", url: b.url },
        ],
      }),
      source,
      vendor: "claude",
      items: started,
    });
    expect(a.received).toHaveLength(1);
    expect(b.received).toHaveLength(1);
    expect(a.received[0]?.headers.authorization).toBe("Bearer x");
    expect(b.received[0]?.headers.authorization).toBeUndefined();
  });

  it("accepts the reconcile core's emitSinkEvents action as is, and sends lifecycle keys in wire order", async () => {
    const sink = await listener();
    const action: EmitSinkEventsAction = batchSinkAction("failed", {
      lines: [claudeLines[2] as string],
      sinks: [{ type: "http", url: sink.url }],
    });
    // The core builds its lifecycle events in its own key order; the wire order is kind, phase,
    // status, reason, exitCode (docs/events.md#lifecycle-events).
    await dispatcher().deliver(action);
    expect(sink.received.map((r) => r.body)).toEqual([
      `{"source":${SOURCE_JSON},"event":${claudeLines[2]}}`,
      `{"source":${SOURCE_JSON},"event":{"kind":"lifecycle","phase":"agent","status":"failed","reason":"batch_failed","exitCode":1}}`,
    ]);
  });

  it("does not deliver a line that already is an envelope", async () => {
    const sink = await listener();
    const d = dispatcher();
    await d.deliver({
      ...definition({ sinks: [{ type: "http", url: sink.url }] }),
      source,
      vendor: "claude",
      items: [{ type: "cliLine", line: '{"source":{},"event":{}}' }, ...started],
    });
    expect(sink.received).toHaveLength(1);
    expect(log.lines.some((l) => l.level === "error" && l.msg.includes("already is an envelope"))).toBe(true);
  });

  it("appends envelope lines to a file sink, relative paths under the base dir; errors are logged", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sinks-"));
    try {
      const d = dispatcher({ fileBaseDir: dir });
      await d.deliver({
        ...definition({
          sinks: [
            { type: "file", path: "events.ndjson" },
            { type: "file", path: join(dir, "no-such-dir", "x.ndjson") },
          ],
        }),
        source,
        vendor: "claude",
        items: batchEnd([claudeLines[2] as string], "succeeded"),
      });
      const text = await readFile(join(dir, "events.ndjson"), "utf8");
      expect(text).toBe(
        `{"source":${SOURCE_JSON},"event":${claudeLines[2]}}\n` +
          `{"source":${SOURCE_JSON},"event":{"kind":"lifecycle","phase":"agent","status":"succeeded","exitCode":0}}\n`,
      );
      expect(log.lines.filter((l) => l.msg === "file sink write failed")).toHaveLength(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("with no sinks does nothing; malformed entries are skipped and logged", async () => {
    const d = dispatcher();
    await d.deliver({
      ...definition({ sinks: [{ type: "http" } as never, { url: "x" } as never] }),
      source,
      vendor: "claude",
      items: started,
    });
    expect(log.lines.filter((l) => l.msg === "sink skipped")).toHaveLength(2);
    await d.deliver({ ...definition(undefined), source, vendor: "claude", items: [] });
    expect(d.pending).toBe(0);
  });

  it("on overflow drops the oldest queued CLI line, never a lifecycle event", async () => {
    const sink = await listener([500]);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const d = dispatcher({
      maxQueued: 3,
      sleep: async (ms) => {
        sleeps.push(ms);
        await gate;
      },
    });
    const def = definition({ sinks: [{ type: "http", url: sink.url }] });
    const lines = ['{"n":1}', '{"n":2}', '{"n":3}', '{"n":4}'];
    const done = d.deliver({
      ...def,
      source,
      vendor: "claude",
      items: [...started, ...batchEnd(lines, "succeeded")],
    });
    await expect.poll(() => sleeps.length, { timeout: 10_000 }).toBe(1);
    release();
    await done;
    const events = sink.received.map((r) => JSON.parse(r.body).event);
    // Bound 3: started stays (lifecycle), each new item evicts the oldest queued line, so only
    // the newest line survives next to started and the terminal event.
    expect(events[0]).toEqual(events[1]);
    expect(events.at(-1)).toEqual({ kind: "lifecycle", phase: "agent", status: "succeeded", exitCode: 0 });
    expect(events.filter((e) => e.kind === "lifecycle")).toHaveLength(3);
    expect(events.filter((e) => "n" in e).map((e) => e.n)).toEqual([4]);
    expect(log.lines.filter((l) => l.msg === "sink queue full; oldest line dropped")).toHaveLength(3);
  });

  it("bounds the queue by bytes: 30 one-MiB lines behind a dead sink keep at most maxQueuedBytes", async () => {
    const maxQueuedBytes = 4 * 1024 * 1024;
    const d = dispatcher({
      maxQueuedBytes,
      post: async () => ({ status: 500 }),
      sleep: () => new Promise<void>(() => {}),
    });
    const def = definition({ sinks: [{ type: "http", url: "http://sink.invalid/events" }] });
    const line = JSON.stringify({ type: "assistant", text: "x".repeat(1024 * 1024) });
    for (let i = 0; i < 30; i++) {
      void d.deliver({ ...def, source, vendor: "claude", items: [{ type: "cliLine", line }] });
    }
    void d.deliver({
      ...def,
      source,
      vendor: "claude",
      items: started,
    });
    expect(d.pendingBytes).toBeLessThanOrEqual(maxQueuedBytes + 1024);
    expect(d.pending).toBeLessThanOrEqual(5);
    expect(log.lines.some((l) => l.msg === "sink queue full; oldest line dropped")).toBe(true);
    // A line larger than the whole bound is dropped on its own, evicting nothing.
    const before = d.pending;
    const huge = JSON.stringify({ text: "y".repeat(maxQueuedBytes) });
    await d.deliver({ ...def, source, vendor: "claude", items: [{ type: "cliLine", line: huge }] });
    expect(d.pending).toBe(before);
    expect(DEFAULT_MAX_QUEUED_BYTES).toBe(32 * 1024 * 1024);
  });

  it("at shutdown a slow sink loses queued lines, not the terminal event behind them", async () => {
    const bodies: string[] = [];
    const d = dispatcher({
      post: async ({ body }) => {
        await new Promise((r) => setTimeout(r, 20));
        bodies.push(body);
        return { status: 200 };
      },
    });
    const def = definition({ sinks: [{ type: "http", url: "http://sink.invalid/events" }] });
    const lines = Array.from({ length: 300 }, (_, n) => JSON.stringify({ n }));
    void d.deliver({ ...def, source, vendor: "claude", items: batchEnd(lines, "failed") });
    // 300 lines take 6 s at 20 ms each; half of the 1 s drain goes to them, then they give way.
    expect(await d.drain(1000)).toBe(true);
    const events = bodies.map((b) => JSON.parse(b).event);
    expect(events.at(-1)).toMatchObject({ kind: "lifecycle", phase: "agent", status: "failed" });
    expect(events.length).toBeLessThan(300);
    expect(log.lines.some((l) => l.msg.includes("queued lines dropped"))).toBe(true);
  });
});
