/**
 * A paced Anthropic Messages provider for the gateway benchmark (docs/gateway.md#benchmark):
 * `POST /v1/messages` with `stream: true` answers the documented event sequence (`message_start`
 * with usage, `content_block_start`, text deltas, `content_block_stop`, `message_delta` with the
 * cumulative output count, `message_stop`), one delta every `paceMs`, each carrying its send time
 * (report.ts `stampedText`). The request's `metadata.user_id` names the stream; the journal keeps,
 * per stream, the usage the provider actually sent, so a stream the client (or the gateway)
 * cut short is journaled with what went out before the cut.
 *
 * The event shapes and the SSE writer are the ones of test/fakes/models (the CLI tests' Anthropic
 * fake), which answers at once rather than at a pace.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { sse, startSse } from "../../test/fakes/models/base.js";
import { clockMs, type JournalStream, stampedText, type TokenCounts } from "./report.js";

export interface PacedProviderOptions {
  events: number;
  paceMs: number;
}

export interface PacedProvider {
  origin: string;
  journal(): JournalStream[];
  close(): Promise<void>;
}

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>);
      } catch {
        resolve({});
      }
    });
    req.on("error", () => resolve({}));
  });
}

/** Distinct, deterministic counts per stream, so a record metered for the wrong stream shows. */
function plannedUsage(n: number, events: number): TokenCounts {
  return {
    inputTokens: 1000 + (n % 977),
    cacheReadTokens: 20_000 + ((n * 7) % 1009),
    cacheWriteTokens: 500 + ((n * 13) % 331),
    outputTokens: events * 3 + (n % 17),
  };
}

export async function startPacedProvider(options: PacedProviderOptions): Promise<PacedProvider> {
  const streams: JournalStream[] = [];
  let count = 0;
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readJson(req);
    const id = String((body.metadata as { user_id?: unknown } | undefined)?.user_id ?? `anonymous-${count}`);
    if (req.method !== "POST" || !req.url?.startsWith("/v1/messages") || body.stream !== true) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: "bench fake" } }));
      return;
    }
    const n = count++;
    const planned = plannedUsage(n, options.events);
    const entry: JournalStream = { id, complete: false };
    streams.push(entry);
    const model = typeof body.model === "string" ? body.model : "claude-sonnet-4-6";
    startSse(res, { "request-id": `req_bench${n}` });
    sse(
      res,
      {
        type: "message_start",
        message: {
          id: `msg_bench${n}`,
          type: "message",
          role: "assistant",
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: planned.inputTokens,
            cache_creation_input_tokens: planned.cacheWriteTokens,
            cache_read_input_tokens: planned.cacheReadTokens,
            output_tokens: 1,
          },
        },
      },
      "message_start",
    );
    entry.usage = { ...planned, outputTokens: 1 };
    sse(
      res,
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      "content_block_start",
    );
    let sent = 0;
    const timer = setInterval(() => {
      if (res.destroyed) return;
      if (sent < options.events) {
        sent++;
        sse(
          res,
          {
            type: "content_block_delta",
            index: 0,
            delta: { type: "text_delta", text: stampedText(clockMs()) },
          },
          "content_block_delta",
        );
        return;
      }
      clearInterval(timer);
      sse(res, { type: "content_block_stop", index: 0 }, "content_block_stop");
      sse(
        res,
        {
          type: "message_delta",
          delta: { stop_reason: "end_turn", stop_sequence: null },
          usage: { output_tokens: planned.outputTokens },
        },
        "message_delta",
      );
      entry.usage = planned;
      sse(res, { type: "message_stop" }, "message_stop");
      entry.complete = true;
      res.end();
    }, options.paceMs);
    // A cut answer (the client or the hop before it went away) stops sending; the journal keeps
    // what went out before.
    res.on("close", () => clearInterval(timer));
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    journal: () => streams.map((s) => ({ ...s })),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
