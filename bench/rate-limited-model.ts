/**
 * The benchmark's model provider and its runs (`npm run bench -- --provider-limits`):
 *
 * - `RateLimitedModel`: a local Anthropic Messages endpoint (POST /v1/messages) that enforces a
 *   requests-per-minute and a tokens-per-minute limit over a sliding minute, the way the providers
 *   document theirs: a request past either limit is answered 429 with a `retry-after` (whole seconds
 *   until enough of the minute has passed for it) and counts nothing; an accepted one is charged its
 *   tokens at once and answered after `latencyMs`.
 * - `simulateRun`: what one run's agent does against it, standing in for the supervisor that rides
 *   out a 429 by waiting the provider's retry-after and continuing the same session (a resumed turn
 *   sends the request again, nothing is restarted), until its pod is gone. It reports what the run
 *   pod reports in status.providerRetries.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ModelLimits {
  requestsPerMinute: number;
  tokensPerMinute: number;
  /** Time an accepted request takes to answer. */
  latencyMs: number;
}

export interface ModelCounts {
  accepted: number;
  throttled: number;
  tokens: number;
}

export class RateLimitedModel {
  readonly counts: ModelCounts = { accepted: 0, throttled: 0, tokens: 0 };
  /** Accepted requests of the last minute: [time, tokens], oldest first. */
  private readonly window: [number, number][] = [];
  private windowTokens = 0;
  private server: Server | undefined;
  origin = "";

  constructor(private readonly limits: ModelLimits) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        let tokens = 0;
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
            input_tokens?: number;
            max_tokens?: number;
          };
          tokens = (body.input_tokens ?? 0) + (body.max_tokens ?? 0);
        } catch {
          res.writeHead(400).end();
          return;
        }
        const wait = this.admit(tokens, Date.now());
        if (wait > 0) {
          this.counts.throttled++;
          res.writeHead(429, { "content-type": "application/json", "retry-after": String(wait) });
          res.end(
            JSON.stringify({
              type: "error",
              error: {
                type: "rate_limit_error",
                message: "Number of request tokens has exceeded your per-minute rate limit",
              },
            }),
          );
          return;
        }
        setTimeout(() => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ type: "message", usage: { input_tokens: tokens } }));
        }, this.limits.latencyMs);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** 0 when the request is accepted (and charged), else the whole seconds to wait. */
  private admit(tokens: number, now: number): number {
    while (this.window.length > 0 && (this.window[0] as [number, number])[0] <= now - 60_000) {
      this.windowTokens -= (this.window.shift() as [number, number])[1];
    }
    const { requestsPerMinute: rpm, tokensPerMinute: tpm } = this.limits;
    if (this.window.length + 1 <= rpm && this.windowTokens + tokens <= tpm) {
      this.window.push([now, tokens]);
      this.windowTokens += tokens;
      this.counts.accepted++;
      this.counts.tokens += tokens;
      return 0;
    }
    // When enough of the minute will have passed: the request slot and the tokens it needs.
    let freeAt = now;
    if (this.window.length + 1 > rpm) {
      freeAt = Math.max(freeAt, (this.window[this.window.length - rpm] as [number, number])[0] + 60_000);
    }
    let over = this.windowTokens + tokens - tpm;
    for (const [at, t] of this.window) {
      if (over <= 0) break;
      over -= t;
      freeAt = Math.max(freeAt, at + 60_000);
    }
    return Math.max(1, Math.ceil((freeAt - now) / 1000));
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

export interface RunShape {
  /** Model requests one run makes, one after the other. */
  requests: number;
  /** Input tokens per request. */
  inputTokens: number;
  /** Output tokens per request. */
  outputTokens: number;
}

/** What the run pod reports of its provider retries (status.providerRetries). */
export interface RunRetries {
  count: number;
  waitedMs: number;
  last?: { status: number; at: number; retryAfterSeconds?: number };
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });

/** One run's requests, riding out every 429 after its retry-after; true when all were answered. */
export async function simulateRun(
  origin: string,
  shape: RunShape,
  retries: RunRetries,
  signal: AbortSignal,
  random: () => number = Math.random,
): Promise<boolean> {
  for (let i = 0; i < shape.requests; i++) {
    for (;;) {
      if (signal.aborted) return false;
      let res: Response;
      try {
        res = await fetch(`${origin}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ input_tokens: shape.inputTokens, max_tokens: shape.outputTokens }),
          signal,
        });
        await res.arrayBuffer();
      } catch {
        if (signal.aborted) return false;
        await sleep(1000, signal);
        continue;
      }
      if (res.status === 200) break;
      const after = Number(res.headers.get("retry-after") ?? "");
      const waitMs = (Number.isFinite(after) && after > 0 ? after * 1000 : 2000) + Math.floor(random() * 250);
      retries.count++;
      retries.waitedMs += waitMs;
      retries.last = {
        status: res.status,
        at: Date.now(),
        ...(Number.isFinite(after) && after > 0 ? { retryAfterSeconds: after } : {}),
      };
      await sleep(waitMs, signal);
    }
  }
  return true;
}
