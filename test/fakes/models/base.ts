/**
 * Shared machinery for the local model servers the real agent CLIs talk to in tests: a loopback
 * HTTP server on an ephemeral port, a script of answers consumed one per model request, and a
 * journal of every request (what the CLI sent, so a test can prove a resumed session carried its
 * history). Each API's file (anthropic-messages.ts, openai-responses.ts, gemini-generate.ts)
 * turns a step into that API's documented streaming events and error bodies.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface ModelUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
}

export type ModelStep =
  /** A plain text answer that ends the model's turn. */
  | { text: string; usage?: ModelUsage }
  /** A call of one of the CLI's own tools (with optional text before it); the CLI runs it and asks again. */
  | { toolCall: { name: string; input: Record<string, unknown> }; text?: string; usage?: ModelUsage }
  /**
   * An HTTP error in the API's own error shape (401, 429, 500, 529/503 overloaded). `quotaId`: the
   * Gemini API's QuotaFailure violation (e.g. `GenerateRequestsPerDayPerProjectPerModel`).
   */
  | {
      error: { status: number; message?: string; type?: string; quotaId?: string };
      retryAfterSeconds?: number;
    }
  /** Headers sent, then nothing until the server closes. */
  | { stall: true }
  /** The stream starts (with optional text), then the socket is destroyed mid-stream. */
  | { cut: true; text?: string };

export interface JournalEntry {
  method: string;
  /** Pathname without the query string. */
  path: string;
  query: Record<string, string>;
  /** Lower-cased header names; credential headers are replaced by "<present>". */
  headers: Record<string, string>;
  /**
   * The SHA-256 (hex) of each credential header's value, by lower-cased name: lets a test check
   * which key arrived (the model gateway's swap) without the journal holding the key itself.
   */
  credentialDigests: Record<string, string>;
  /** The body parsed as JSON (undefined when it is not JSON). */
  body: unknown;
  /** The step that answered it (undefined for requests outside the model API, e.g. probes). */
  step?: ModelStep;
  /** When the request arrived (epoch ms): the benchmark's "first model request" mark. */
  at: number;
  /** The bytes of a model call's answer body as written, chunk by chunk (undefined for other requests). */
  sent?: Buffer[];
}

/** What an API module does with one model request, given the step the script chose. */
export type StepResponder = (
  step: ModelStep,
  req: { body: unknown; path: string; query: URLSearchParams; raw: IncomingMessage },
  res: ServerResponse,
) => void | Promise<void>;

export interface ModelApi {
  /** True when the request is a model call that consumes a step. */
  isModelCall(method: string, path: string): boolean;
  respond: StepResponder;
  /** Other requests (model lists, probes); answer and return true, or return false for 404. */
  other?(req: IncomingMessage, path: string, res: ServerResponse, body: unknown): boolean;
}

export interface ModelServer {
  /** http://<host>:<port> (each API module documents what to append for its CLI). */
  origin: string;
  /** Answers for the next model requests, in order (appended to what is left). */
  script(steps: ModelStep[]): void;
  /** The step used once the script is exhausted (default: text "Done."). */
  fallback(step: ModelStep): void;
  /**
   * Provider limits at random: each model request is answered, with probability `rate`, by one of
   * FAULTS (429 with and without retry-after, 529 overloaded, 503, a stream cut) instead of its
   * step, which then answers a later request. Seeded, so a run is reproducible.
   */
  faults(options: { rate: number; seed: number }): void;
  journal(): JournalEntry[];
  /**
   * Holds the next model answer: its first `afterWrites` writes go out and are flushed (all of
   * them by default), the rest and the end wait until the returned function is called (a stream
   * still running, without a timer).
   */
  hold(afterWrites?: number): () => void;
  /** Model calls only. */
  modelCalls(): JournalEntry[];
  close(): Promise<void>;
}

const CREDENTIAL_HEADERS = new Set(["authorization", "x-api-key", "x-goog-api-key", "api-key"]);

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function parseJson(raw: Buffer): unknown {
  try {
    return raw.length === 0 ? undefined : JSON.parse(raw.toString("utf8"));
  } catch {
    return undefined;
  }
}

/** Writes one server-sent event (`event:` line only when `event` is given). */
export function sse(res: ServerResponse, data: unknown, event?: string): void {
  res.write(`${event !== undefined ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
}

export function startSse(res: ServerResponse, headers: Record<string, string> = {}): void {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
    ...headers,
  });
  res.flushHeaders();
}

/** `host`: where it listens; a run pod on the real node reaches this machine at podReachableHost(). */
export async function startModelServer(api: ModelApi, host = "127.0.0.1"): Promise<ModelServer> {
  const steps: ModelStep[] = [];
  let fallbackStep: ModelStep = { text: "Done." };
  let faults: { rate: number; random: () => number; pick: () => ModelStep } | undefined;
  const entries: JournalEntry[] = [];
  const holds: Array<{ released: Promise<void>; afterWrites: number }> = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer(async (req, res) => {
    const at = Date.now();
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const raw = await readBody(req).catch(() => Buffer.alloc(0));
    const body = parseJson(raw);
    const headers: Record<string, string> = {};
    const credentialDigests: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined) continue;
      const value = Array.isArray(v) ? v.join(", ") : v;
      headers[k] = CREDENTIAL_HEADERS.has(k) ? "<present>" : value;
      if (CREDENTIAL_HEADERS.has(k)) credentialDigests[k] = createHash("sha256").update(value).digest("hex");
    }
    const entry: JournalEntry = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      credentialDigests,
      body,
      at,
    };
    entries.push(entry);
    if (api.isModelCall(entry.method, url.pathname)) {
      const fault = faults !== undefined && faults.random() < faults.rate ? faults.pick() : undefined;
      const step = fault ?? steps.shift() ?? fallbackStep;
      entry.step = step;
      recordAnswer(res, entry, holds.shift());
      try {
        await api.respond(step, { body, path: url.pathname, query: url.searchParams, raw: req }, res);
      } catch (err) {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(`model fake error: ${(err as Error).message}`);
      }
      return;
    }
    if (api.other?.(req, url.pathname, res, body)) return;
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `no route ${entry.method} ${url.pathname}` } }));
  });
  // The providers' front ends keep an idle connection open for a minute or more; Node's 5 s default
  // closed sockets the CLIs' pools (claude and opencode run on Bun) then reused for their next request,
  // which failed with ECONNRESET instead of the provider's answer.
  server.keepAliveTimeout = 120_000;
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://${host}:${port}`,
    script(more) {
      steps.push(...more);
    },
    fallback(step) {
      fallbackStep = step;
    },
    faults({ rate, seed }) {
      const random = seededRandom(seed);
      faults = { rate, random, pick: () => FAULTS[Math.floor(random() * FAULTS.length)] as ModelStep };
    },
    journal: () => [...entries],
    hold(afterWrites = Number.POSITIVE_INFINITY) {
      let release = () => {};
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      holds.push({ released, afterWrites });
      return () => release();
    },
    modelCalls: () => entries.filter((e) => e.step !== undefined),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Keeps what a model call's answer writes (`entry.sent`) and, with `hold`, lets its first
 * `afterWrites` writes out and queues the rest and the end, in order, until `hold.released`.
 */
function recordAnswer(
  res: ServerResponse,
  entry: JournalEntry,
  hold: { released: Promise<void>; afterWrites: number } | undefined,
): void {
  const sent: Buffer[] = [];
  entry.sent = sent;
  const keep = (chunk: unknown) => {
    if (typeof chunk === "string" || chunk instanceof Uint8Array) sent.push(Buffer.from(chunk));
  };
  let written = 0;
  let released = hold === undefined;
  const queued: Array<() => void> = [];
  void hold?.released.then(() => {
    released = true;
    for (const next of queued.splice(0)) next();
  });
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    keep(chunk);
    if (!released && written >= (hold?.afterWrites ?? 0)) {
      queued.push(() => write(chunk, ...rest));
      return true;
    }
    written++;
    return write(chunk, ...rest);
  }) as typeof res.write;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    keep(chunk);
    if (released) return end(chunk, ...rest);
    queued.push(() => end(chunk, ...rest));
    return res;
  }) as typeof res.end;
}

/** The provider limits ModelServer.faults answers with. */
export const FAULTS: readonly ModelStep[] = [
  { error: { status: 429 }, retryAfterSeconds: 1 },
  { error: { status: 429 } },
  { error: { status: 529 } },
  { error: { status: 503 } },
  { cut: true, text: "Partial" },
];

/** mulberry32: a small seeded generator, numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Ends a response the way a `cut` step does: the connection drops mid-stream. */
export function cutConnection(res: ServerResponse): void {
  res.socket?.destroy();
}
