/**
 * A faithful stand-in for a realtime run pod's supervisor (docs/supervisor.md#realtime-sessions),
 * served over real HTTP on 127.0.0.1 so the controller's forwarding is exercised through a socket.
 *
 * - `POST /v1/prompt` `{"prompt": "<text>"}` ⇒ 202 `{"turn","queued","sessionId"}`
 * - `POST /v1/close` ⇒ 202 `{"queued"}`
 * - `GET /healthz` (unauthenticated) ⇒ 200 when ready, 503 otherwise
 * - only the run's own token: the pod knows just its SHA-256 (docs/decisions.md D-40) and compares in constant time
 * - FIFO queue, at most 16 waiting prompts (the running turn excluded) ⇒ 429
 * - decoded prompt over 102400 bytes ⇒ 413; close refuses new prompts and a second close ⇒ 409
 * - turns are numbered from 1 across the session; the initial prompt, when given, is turn 1
 *
 * Turns do not run a CLI: a test finishes the running turn with `completeTurn()` (or sets
 * `autoCompleteTurns`). When a closed session has drained, the fake stops listening, as the pod
 * exits, so later requests fail to connect.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeSupervisorOptions {
  /** Hex SHA-256 of the run token, as the pod gets it in AGENT_REALTIME_TOKEN_SHA256. */
  tokenSha256: string;
  /** The session id known from the start (a resumed or fresh Claude session); "" when unknown. */
  sessionId?: string;
  /** A session id learned when the first turn completes (a fresh Codex or Gemini session). */
  sessionIdAfterFirstTurn?: string;
  /** The rendered definition prompt; runs as turn 1. Absent for a resumed session. */
  initialPrompt?: string;
  /** Finish each turn as soon as it starts. */
  autoCompleteTurns?: boolean;
  /** Readiness reported by /healthz. */
  ready?: boolean;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /**
   * Answers a request instead of the faithful logic (after it was recorded), to play a
   * misbehaving supervisor. Return undefined to fall through.
   */
  override?: (route: string) => { status: number; body: string; contentType?: string } | undefined;
}

export interface FakeTurn {
  turn: number;
  prompt: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: string;
}

export const FAKE_MAX_PROMPT_BYTES = 102400;
export const FAKE_MAX_WAITING = 16;
/** The pod still bounds what it reads; the controller already caps bodies at 200 KiB. */
const MAX_BODY_BYTES = 1024 * 1024;

export class FakeSupervisor {
  readonly requests: RecordedRequest[] = [];
  /** Turns in the order they finished. */
  readonly completed: FakeTurn[] = [];
  running: FakeTurn | undefined;
  readonly waiting: FakeTurn[] = [];
  sessionId: string;
  closing = false;
  ended = false;
  ready: boolean;
  private nextTurn = 1;
  private server: Server | undefined;
  private port = 0;

  constructor(private readonly options: FakeSupervisorOptions) {
    this.sessionId = options.sessionId ?? "";
    this.ready = options.ready ?? true;
    if (options.initialPrompt !== undefined) {
      this.waiting.push({ turn: this.nextTurn++, prompt: options.initialPrompt });
      this.pump();
    }
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.send(res, 500, { error: String(err) });
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.options.port ?? 0, "127.0.0.1", () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  /** Finishes the running turn and starts the next waiting one. */
  completeTurn(): FakeTurn {
    const done = this.running;
    if (!done) throw new Error("FakeSupervisor.completeTurn: no turn is running");
    this.running = undefined;
    this.completed.push(done);
    if (done.turn === 1 && this.sessionId === "" && this.options.sessionIdAfterFirstTurn) {
      this.sessionId = this.options.sessionIdAfterFirstTurn;
    }
    this.pump();
    return done;
  }

  private pump(): void {
    if (!this.running) this.running = this.waiting.shift();
    if (this.running && this.options.autoCompleteTurns) {
      this.completeTurn();
      return;
    }
    if (!this.running && this.closing && !this.ended) {
      // The session has drained: the supervisor exits 0 and the pod stops listening.
      this.ended = true;
      void this.stop();
    }
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  }

  private tokenOk(header: string | undefined): boolean {
    const m = /^Bearer (\S+)$/.exec(header ?? "");
    const presented = createHash("sha256")
      .update(m?.[1] ?? "")
      .digest();
    const expected = Buffer.from(this.options.tokenSha256, "hex");
    return expected.length === presented.length && timingSafeEqual(presented, expected) && m !== null;
  }

  private async readBody(req: IncomingMessage): Promise<string | undefined> {
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of req) {
      total += (chunk as Buffer).byteLength;
      if (total > MAX_BODY_BYTES) return undefined;
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks).toString("utf8");
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0] ?? "";
    const route = `${req.method} ${path}`;
    const body = (await this.readBody(req)) ?? "";
    this.requests.push({ method: req.method ?? "", path, authorization: req.headers.authorization, body });

    if (route === "GET /healthz") {
      this.send(res, this.ready ? 200 : 503, this.ready ? { status: "ok" } : { error: "not ready" });
      return;
    }
    if (route !== "POST /v1/prompt" && route !== "POST /v1/close") {
      this.send(res, 404, { error: "not found" });
      return;
    }
    if (!this.tokenOk(req.headers.authorization)) {
      this.send(res, 401, { error: "the bearer token is missing or wrong" });
      return;
    }
    const override = this.options.override?.(route);
    if (override) {
      res.writeHead(override.status, { "content-type": override.contentType ?? "application/json" });
      res.end(override.body);
      return;
    }
    if (route === "POST /v1/close") {
      if (this.closing) {
        this.send(res, 409, { error: "the session is ending" });
        return;
      }
      this.closing = true;
      this.send(res, 202, { queued: this.waiting.length });
      this.pump();
      return;
    }

    let prompt: unknown;
    try {
      prompt = (JSON.parse(body) as { prompt?: unknown } | null)?.prompt;
    } catch {
      prompt = undefined;
    }
    if (typeof prompt !== "string" || prompt.length === 0) {
      this.send(res, 400, { error: "the body is not JSON with a non-empty prompt string" });
      return;
    }
    if (Buffer.byteLength(prompt, "utf8") > FAKE_MAX_PROMPT_BYTES) {
      this.send(res, 413, { error: `prompt exceeds ${FAKE_MAX_PROMPT_BYTES} bytes` });
      return;
    }
    if (this.closing) {
      this.send(res, 409, { error: "the session is ending" });
      return;
    }
    if (this.waiting.length >= FAKE_MAX_WAITING) {
      this.send(res, 429, { error: "too many queued prompts" });
      return;
    }
    const turn = { turn: this.nextTurn++, prompt };
    this.waiting.push(turn);
    // queued counts the waiting prompts including this one, taken before it may start running.
    this.send(res, 202, { turn: turn.turn, queued: this.waiting.length, sessionId: this.sessionId });
    this.pump();
  }
}

export async function startFakeSupervisor(options: FakeSupervisorOptions): Promise<FakeSupervisor> {
  return new FakeSupervisor(options).start();
}
