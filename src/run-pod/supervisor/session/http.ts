/**
 * The realtime run pod's HTTP endpoint (seeds/prompt-api.txt "Run pod endpoint", runtime.md §10):
 * `POST /v1/prompt`, `POST /v1/close` and an unauthenticated `GET /healthz`. Only the run's own
 * token is accepted; the pod knows just its SHA-256 (OQ-40) and compares in constant time.
 * Error bodies are `{"error": "<message>"}`.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { bearerToken } from "../../../prompt-api/run-token.js";
import { MSG_ENDING } from "./queue.js";

export const MSG_UNAUTHORIZED = "the bearer token is missing or wrong";
export const MSG_BAD_BODY = "the body is not JSON with a non-empty prompt string";
export const MSG_NOT_FOUND = "not found";
/** The controller already caps bodies at 200 KiB; the pod still bounds what it reads. */
const MAX_BODY_BYTES = 1024 * 1024;

export type Reply = { status: number; body: Record<string, unknown> };

export interface SessionHandlers {
  /** A prompt that passed the body checks (a non-empty string). */
  prompt(prompt: string): Reply;
  close(): Reply;
  /** False once the session takes no more turns: the readiness probe fails from that moment. */
  serving(): boolean;
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

/** The request's answer; pure apart from the handlers it calls. */
export function route(
  method: string,
  path: string,
  authorization: string | undefined,
  body: string | undefined,
  tokenSha256: string,
  handlers: SessionHandlers,
): Reply {
  if (method === "GET" && path === "/healthz") {
    return handlers.serving()
      ? { status: 200, body: { status: "ok" } }
      : { status: 503, body: { error: MSG_ENDING } };
  }
  const endpoint = method === "POST" && (path === "/v1/prompt" || path === "/v1/close") ? path : undefined;
  if (!endpoint) return { status: 404, body: { error: MSG_NOT_FOUND } };
  if (!tokenMatches(authorization, tokenSha256)) return { status: 401, body: { error: MSG_UNAUTHORIZED } };
  if (endpoint === "/v1/close") return handlers.close();
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

/** Reads the body; undefined when it is over the bound. */
function readBody(req: IncomingMessage): Promise<string | undefined> {
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

export async function listen(
  hostPort: string,
  tokenSha256: string,
  handlers: SessionHandlers,
): Promise<{ server: Server; address: string }> {
  const colon = hostPort.lastIndexOf(":");
  const host = hostPort.slice(0, colon).replace(/^\[|\]$/g, "") || "0.0.0.0";
  const port = Number(hostPort.slice(colon + 1));
  if (colon < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`AGENT_REALTIME_LISTEN must be host:port, got: "${hostPort}"`);
  }
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    readBody(req).then(
      (body) => {
        const path = (req.url ?? "").split("?")[0] ?? "";
        const reply = route(req.method ?? "", path, req.headers.authorization, body, tokenSha256, handlers);
        const text = JSON.stringify(reply.body);
        res.writeHead(reply.status, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(text),
        });
        res.end(text);
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address();
  const address = typeof addr === "object" && addr ? `${addr.address}:${addr.port}` : hostPort;
  return { server, address };
}
