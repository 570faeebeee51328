import { readFileSync } from "node:fs";
import { Agent, request } from "node:https";

/** Credentials and address of one plane's API server, as the harness itself uses them. */
export interface ApiEndpoint {
  server: string;
  caFile: string;
  certFile: string;
  keyFile: string;
}

export interface ApiResponse {
  status: number;
  body: string;
  json: unknown;
}

/**
 * A minimal HTTPS client for the harness's own calls (readiness, CRD install, pod scripting).
 * Tests use @kubernetes/client-node instead; the harness keeps its own so that a client-library
 * quirk can never hide a control-plane failure.
 */
export class HarnessApi {
  private readonly agent: Agent;
  constructor(readonly endpoint: ApiEndpoint) {
    this.agent = new Agent({
      ca: readFileSync(endpoint.caFile),
      cert: readFileSync(endpoint.certFile),
      key: readFileSync(endpoint.keyFile),
      keepAlive: false,
    });
  }

  request(
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
    timeoutMs = 15_000,
  ): Promise<ApiResponse> {
    const url = new URL(path, this.endpoint.server);
    const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method,
          agent: this.agent,
          headers: {
            accept: "application/json",
            // content-length, not chunked: Node sends a DELETE body unframed otherwise, and the server drops it.
            ...(payload === undefined
              ? {}
              : { "content-type": contentType, "content-length": Buffer.byteLength(payload) }),
          },
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", reject);
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let json: unknown;
            try {
              json = text.length > 0 ? JSON.parse(text) : undefined;
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, body: text, json });
          });
        },
      );
      req.on("timeout", () => req.destroy(new Error(`${method} ${path} timed out after ${timeoutMs} ms`)));
      req.on("error", reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  async ok(method: string, path: string, body?: unknown, contentType?: string): Promise<unknown> {
    const res = await this.request(method, path, body, contentType);
    if (res.status < 200 || res.status >= 300) {
      throw new Error(`${method} ${path} -> HTTP ${res.status}: ${res.body.slice(0, 2000)}`);
    }
    return res.json;
  }

  /**
   * Streams watch events until the server closes the stream or `signal` aborts.
   * Resolves when the stream ends; rejects on connection errors.
   */
  watch(
    path: string,
    onEvent: (event: { type: string; object: Record<string, unknown> }) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const url = new URL(path, this.endpoint.server);
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        { method: "GET", agent: this.agent, headers: { accept: "application/json" }, signal },
        (res) => {
          if (res.statusCode !== 200) {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () =>
              reject(
                new Error(`watch ${path} -> HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString()}`),
              ),
            );
            return;
          }
          let buffered = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            buffered += chunk;
            let nl = buffered.indexOf("\n");
            while (nl >= 0) {
              const line = buffered.slice(0, nl).trim();
              buffered = buffered.slice(nl + 1);
              if (line.length > 0) onEvent(JSON.parse(line));
              nl = buffered.indexOf("\n");
            }
          });
          res.on("end", () => resolve());
          res.on("error", (err) => (signal.aborted ? resolve() : reject(err)));
        },
      );
      req.on("error", (err) => (signal.aborted ? resolve() : reject(err)));
      req.end();
    });
  }
}
