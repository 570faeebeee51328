/**
 * Shared machinery for the fake provider servers: a loopback HTTP server on an ephemeral port,
 * a virtual clock the tests move with advance(), a record of every request, and fault
 * injection (HTTP errors, 429 with retry-after, malformed bodies, slow or hung responses).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  /** Pathname without the query string. */
  path: string;
  query: URLSearchParams;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The raw body as UTF-8 text. */
  body: string;
  /** The body parsed as JSON when it is JSON, else undefined. */
  json?: unknown;
}

export interface FakeResponse {
  status: number;
  json?: unknown;
  text?: string;
  headers?: Record<string, string>;
}

export interface FakeRequest extends RecordedRequest {
  raw: Buffer;
}

export type Fault =
  /** Answer with this status; body defaults to the vendor's error envelope. */
  | { kind: "status"; status: number; retryAfter?: string | number; body?: string; message?: string }
  /** Answer 200 with a body that is not JSON. */
  | { kind: "malformed"; body?: string }
  /** Never answer (until close()): the client's timeout decides. */
  | { kind: "hang" }
  /** Wait this many real milliseconds, then handle the request normally. */
  | { kind: "delay"; ms: number }
  /**
   * Handle the request (it takes effect: a create creates) and then lose the answer: `reset`
   * (default) closes the connection without a response, `hang` never answers.
   */
  | { kind: "lose-answer"; how?: "reset" | "hang" };

export type FaultRule = Fault & {
  /** Only requests with this method (any when absent). */
  method?: string;
  /** Only requests whose pathname equals this string or matches this pattern (any when absent). */
  path?: string | RegExp;
  /** How many matching requests the fault applies to; default 1, Infinity for all. */
  times?: number;
};

/** Virtual time in epoch milliseconds; only advance() moves it. */
export class FakeClock {
  constructor(public nowMs: number = Date.parse("2026-10-01T10:00:00.000Z")) {}
  advance(ms: number): void {
    if (!(ms >= 0)) throw new Error(`advance(ms): ms must be a non-negative number, got ${ms}`);
    this.nowMs += ms;
  }
  iso(ms: number = this.nowMs): string {
    return new Date(ms).toISOString();
  }
  unixSeconds(ms: number = this.nowMs): number {
    return Math.floor(ms / 1000);
  }
}

export interface FakeServerHandle {
  /** http://127.0.0.1:<port> */
  origin: string;
  requests: RecordedRequest[];
  clock: FakeClock;
  inject(rule: FaultRule): void;
  clearFaults(): void;
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: FakeClock;
  /** The vendor's error envelope for a status and message. */
  errorBody(status: number, message: string): unknown;
  handle(req: FakeRequest, origin: string): FakeResponse | Promise<FakeResponse>;
  /** Where it listens (default 127.0.0.1; run pods on the real node reach podReachableHost()). */
  host?: string;
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not found",
  429: "Rate limit exceeded",
  500: "Internal server error",
  502: "Bad gateway",
  503: "Service unavailable",
  504: "Gateway timeout",
  529: "Overloaded",
};

export async function startFakeServer(options: StartOptions): Promise<FakeServerHandle> {
  const clock = options.clock ?? new FakeClock();
  const requests: RecordedRequest[] = [];
  let faults: (FaultRule & { left: number })[] = [];
  const hung = new Set<ServerResponse>();

  const takeFault = (req: RecordedRequest): Fault | undefined => {
    const i = faults.findIndex(
      (f) =>
        f.left > 0 &&
        (f.method === undefined || f.method.toUpperCase() === req.method) &&
        (f.path === undefined || (typeof f.path === "string" ? f.path === req.path : f.path.test(req.path))),
    );
    const rule = faults[i];
    if (rule === undefined) return undefined;
    rule.left -= 1;
    faults = faults.filter((f) => f.left > 0);
    return rule;
  };

  const send = (res: ServerResponse, r: FakeResponse) => {
    const headers: Record<string, string> = { ...r.headers };
    let body = r.text ?? "";
    if (r.json !== undefined) {
      body = JSON.stringify(r.json);
      headers["content-type"] ??= "application/json";
    }
    res.writeHead(r.status, headers);
    res.end(body);
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const raw = Buffer.concat(chunks);
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) {
        if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
      }
      const text = raw.toString("utf8");
      let json: unknown;
      try {
        json = text === "" ? undefined : JSON.parse(text);
      } catch {
        json = undefined;
      }
      const recorded: RecordedRequest = {
        method: (req.method ?? "GET").toUpperCase(),
        path: decodeURIComponent(url.pathname),
        query: url.searchParams,
        headers,
        body: text,
        json,
      };
      requests.push(recorded);
      try {
        const fault = takeFault(recorded);
        if (fault?.kind === "hang") {
          hung.add(res);
          res.on("close", () => hung.delete(res));
          return;
        }
        if (fault?.kind === "delay") await new Promise((r) => setTimeout(r, fault.ms));
        if (fault?.kind === "malformed") {
          send(res, {
            status: 200,
            text: fault.body ?? '{"truncated": ',
            headers: { "content-type": "application/json" },
          });
          return;
        }
        if (fault?.kind === "status") {
          const retry: Record<string, string> =
            fault.retryAfter !== undefined ? { "retry-after": String(fault.retryAfter) } : {};
          if (fault.body !== undefined) {
            send(res, { status: fault.status, text: fault.body, headers: retry });
          } else {
            const message = fault.message ?? STATUS_TEXT[fault.status] ?? `HTTP ${fault.status}`;
            send(res, {
              status: fault.status,
              json: options.errorBody(fault.status, message),
              headers: retry,
            });
          }
          return;
        }
        const answer = await options.handle({ ...recorded, raw }, origin);
        if (fault?.kind === "lose-answer") {
          if (fault.how === "hang") {
            hung.add(res);
            res.on("close", () => hung.delete(res));
          } else res.socket?.destroy();
          return;
        }
        send(res, answer);
      } catch (err) {
        send(res, {
          status: 500,
          json: options.errorBody(500, `fake server bug: ${(err as Error).message}`),
        });
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, options.host ?? "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://${options.host ?? "127.0.0.1"}:${port}`;

  return {
    origin,
    requests,
    clock,
    inject(rule) {
      faults.push({ ...rule, left: rule.times ?? 1 });
    },
    clearFaults() {
      faults = [];
    },
    close() {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

/** Zero-padded counter ids, so ids are predictable in tests. */
export function idMaker(prefix: string): () => string {
  let n = 0;
  return () => `${prefix}${String(++n).padStart(6, "0")}`;
}
