/**
 * A local HTTP(S) server for download tests (the run-pod init's files, skills and conversation
 * fetches): routes by path, records every request's path and headers. Binds 127.0.0.1 only.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
}

export interface FileServer {
  /** `http://127.0.0.1:<port>` or `https://127.0.0.1:<port>` */
  url: string;
  requests: RecordedRequest[];
  /** Answers `path` with `reply` (or what the function returns); unknown paths get 404. */
  route(path: string, reply: Reply | ((req: IncomingMessage) => Reply)): void;
  close(): Promise<void>;
}

export interface Tls {
  cert: string;
  key: string;
}

export async function startFileServer(tls?: Tls): Promise<FileServer> {
  const routes = new Map<string, Reply | ((req: IncomingMessage) => Reply)>();
  const requests: RecordedRequest[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? "/";
    requests.push({ method: req.method ?? "", path, headers: req.headers });
    const route = routes.get(path);
    const reply =
      route === undefined
        ? { status: 404, body: "not found\n" }
        : typeof route === "function"
          ? route(req)
          : route;
    res.writeHead(reply.status, reply.headers);
    res.end(reply.body ?? "");
  };
  const server: Server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? "https" : "http"}://127.0.0.1:${port}`,
    requests,
    route: (path, reply) => routes.set(path, reply),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A self-signed certificate for 127.0.0.1 (the cert doubles as its own CA for the client). */
export function selfSignedCert(): Tls {
  const dir = mkdtempSync(join(tmpdir(), "selfsigned-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "key.pem",
        "-out",
        "cert.pem",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
      ],
      { cwd: dir, stdio: "ignore" },
    );
    return {
      cert: readFileSync(join(dir, "cert.pem"), "utf8"),
      key: readFileSync(join(dir, "key.pem"), "utf8"),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A 127.0.0.1 port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createHttpServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
