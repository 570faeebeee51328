/**
 * The realtime run pod's HTTP endpoint (docs/supervisor.md#realtime-sessions):
 * `POST /v1/prompt`, `POST /v1/close` and an unauthenticated `GET /healthz`. Only the run's own
 * token is accepted; the pod knows just its SHA-256 (docs/decisions.md D-40) and compares in constant time.
 * Error bodies are `{"error": "<message>"}`.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import {
  answerClientErrors,
  jsonClientError,
  type RequestTimeouts,
  timeoutServerOptions,
} from "../../../http-server-limits.js";
import { bearerToken } from "../../../prompt-api/run-token.js";
import { MSG_ENDING } from "./queue.js";

export const MSG_UNAUTHORIZED = "the bearer token is missing or wrong";
export const MSG_BAD_BODY = "the body is not JSON with a non-empty prompt string";
export const MSG_NOT_FOUND = "not found";
export const MSG_STARTING = "the session is not serving yet";
/**
 * The controller caps the caller's body at 200 KiB and re-serialises the prompt (JSON escapes can
 * make a 100 KiB prompt up to six times longer); the pod still bounds what it reads.
 */
const MAX_BODY_BYTES = 1024 * 1024;
/**
 * The only caller is the controller, which sends each request at once and waits 10 s for the
 * answer, so a request still arriving after that is nobody's (Node's default wait is 300 s).
 */
export const SESSION_TIMEOUTS: RequestTimeouts = { headersMs: 5_000, requestMs: 10_000, keepAliveMs: 5_000 };

export type Reply = { status: number; body: Record<string, unknown> };

export interface SessionHandlers {
  /** A prompt that passed the body checks (a non-empty string). */
  prompt(prompt: string): Reply;
  close(): Reply;
  /** False once the session takes no more turns: the readiness probe fails from that moment. */
  serving(): boolean;
  /** False until the session takes its first turn (the CLI is set up); the probe fails until then. */
  ready?(): boolean;
}

/**
 * True when `authorization` is `Bearer <t>` (the scheme case-insensitive, RFC 7235, parsed as the
 * controller's prompt API parses it) and SHA-256(t) is `tokenSha256` (hex).
 */
export function tokenMatches(authorization: string | undefined, tokenSha256: string): boolean {
  const token = bearerToken(authorization);
  if (token === undefined || tokenSha256 === "") return false;
  const got = createHash("sha256").update(token).digest();
  const want = Buffer.from(tokenSha256, "hex");
  return want.length === got.length && timingSafeEqual(got, want);
}

/** What the session says before any body is read; `readPrompt` when the body decides. */
export type HeadAnswer = Reply | "readPrompt";

/**
 * The answer a request's method, path and Authorization header already decide, so that nobody
 * without the run token can make the pod read a body, and a session that is ending answers the
 * seed's 409 before it would judge a body's size or shape. Pure apart from the handlers it calls.
 */
export function routeHead(
  method: string,
  path: string,
  authorization: string | undefined,
  tokenSha256: string,
  handlers: SessionHandlers,
  ending: boolean,
): HeadAnswer {
  if (method === "GET" && path === "/healthz") {
    if (!handlers.serving()) return { status: 503, body: { error: MSG_ENDING } };
    return (handlers.ready?.() ?? true)
      ? { status: 200, body: { status: "ok" } }
      : { status: 503, body: { error: MSG_STARTING } };
  }
  const endpoint = method === "POST" && (path === "/v1/prompt" || path === "/v1/close") ? path : undefined;
  if (!endpoint) return { status: 404, body: { error: MSG_NOT_FOUND } };
  if (!tokenMatches(authorization, tokenSha256)) return { status: 401, body: { error: MSG_UNAUTHORIZED } };
  if (ending) return { status: 409, body: { error: MSG_ENDING } };
  if (endpoint === "/v1/close") return handlers.close();
  return "readPrompt";
}

/** A prompt request's answer once its body is read; `undefined` is a body over MAX_BODY_BYTES. */
export function routePrompt(body: string | undefined, handlers: SessionHandlers): Reply {
  if (body === undefined) return { status: 413, body: { error: "request body too large" } };
  let prompt: unknown;
  try {
    prompt = (JSON.parse(body) as { prompt?: unknown } | null)?.prompt;
  } catch {
    prompt = undefined;
  }
  if (typeof prompt !== "string" || prompt.length === 0)
    return { status: 400, body: { error: MSG_BAD_BODY } };
  return handlers.prompt(prompt);
}

/** Reads the body; undefined when it is (or declares to be) over the bound, without buffering it. */
function readBody(req: IncomingMessage): Promise<string | undefined> {
  if (Number(req.headers["content-length"] ?? 0) > MAX_BODY_BYTES) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) over = true;
      else chunks.push(chunk);
    });
    req.on("end", () => resolve(over ? undefined : Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

const declaresBody = (req: IncomingMessage): boolean =>
  req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;

function send(res: ServerResponse, reply: Reply): void {
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

export async function listen(
  hostPort: string,
  tokenSha256: string,
  handlers: SessionHandlers,
  timeouts: RequestTimeouts = SESSION_TIMEOUTS,
): Promise<{ server: Server; address: string }> {
  const colon = hostPort.lastIndexOf(":");
  const host = hostPort.slice(0, colon).replace(/^\[|\]$/g, "") || "0.0.0.0";
  const port = Number(hostPort.slice(colon + 1));
  if (colon < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`AGENT_REALTIME_LISTEN must be host:port, got: "${hostPort}"`);
  }
  // An accepted close ends the intake as surely as the session's own end (handlers.serving()).
  let closeAccepted = false;
  const server = createServer(timeoutServerOptions(timeouts), (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "").split("?")[0] ?? "";
    const ending = closeAccepted || !handlers.serving();
    const head = routeHead(req.method ?? "", path, req.headers.authorization, tokenSha256, handlers, ending);
    if (head !== "readPrompt") {
      if (path === "/v1/close" && head.status === 202) closeAccepted = true;
      // A body nobody reads makes the connection unusable for another request.
      if (declaresBody(req)) res.setHeader("connection", "close");
      send(res, head);
      return;
    }
    readBody(req).then(
      (body) => {
        if (body === undefined) res.setHeader("connection", "close");
        send(res, routePrompt(body, handlers));
      },
      () => res.destroy(),
    );
  });
  answerClientErrors(server, jsonClientError);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address();
  const address = typeof addr === "object" && addr ? `${addr.address}:${addr.port}` : hostPort;
  return { server, address };
}
