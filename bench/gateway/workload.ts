/**
 * The streaming workload of one phase (docs/gateway.md#benchmark): `concurrency` clients, each
 * sending `rounds` streamed Messages requests back to back over its own kept-alive connection,
 * their first starts spread over one stream's length so requests do not arrive in lockstep. Each
 * delta's delay is its receive time minus the send time it carries; the time to first byte runs
 * from the request's start to the first body byte. The first stream of each client (a new
 * connection) is a warm-up, left out of both; every n-th stream is aborted halfway.
 */
import { Pool } from "undici";
import { SseReader } from "../../src/gateway/sse.js";
import { clockMs, sentAtOf } from "./report.js";

export interface Target {
  name: "direct" | "passthrough" | "gateway";
  origin: string;
  /** The request headers for one stream (the gateway's carry that stream's own run credential). */
  headers(streamId: string): Record<string, string>;
}

export interface PhaseOptions {
  /** The phase's number within the run, so no two phases send the same stream id. */
  phase: number;
  concurrency: number;
  events: number;
  paceMs: number;
  rounds: number;
  abortEvery: number;
  bodyKib: number;
}

export interface PhaseResult {
  delaysMs: number[];
  ttfbMs: number[];
  streams: number;
  aborted: number;
  /** Stream ids of the streams that ended otherwise than planned, with why. */
  failures: string[];
  wallSeconds: number;
}

/**
 * The stream ids a phase sends, `<target>-p<phase>-<round>-<client>`: DNS labels (run names),
 * unique across the run's phases (the memory phase may have as many streams as the latency one).
 */
export const streamId = (target: string, phase: number, round: number, client: number) =>
  `${target}-p${phase}-${round}-${client}`;

export async function runPhase(target: Target, o: PhaseOptions): Promise<PhaseResult> {
  const pool = new Pool(target.origin, { connections: o.concurrency, keepAliveTimeout: 60_000 });
  const result: PhaseResult = {
    delaysMs: [],
    ttfbMs: [],
    streams: 0,
    aborted: 0,
    failures: [],
    wallSeconds: 0,
  };
  const started = clockMs();
  const spreadMs = (o.events * o.paceMs) / o.concurrency;
  // Earlier turns of a conversation, as a CLI resends them: what the gateway's body parse reads.
  const history = Array.from({ length: o.bodyKib }, (_, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content: "x".repeat(1000),
  }));
  try {
    await Promise.all(
      Array.from({ length: o.concurrency }, async (_, client) => {
        await new Promise((r) => setTimeout(r, client * spreadMs));
        for (let round = 0; round < o.rounds; round++) {
          const n = round * o.concurrency + client;
          const abort = o.abortEvery > 0 && n % o.abortEvery === o.abortEvery - 1;
          await oneStream(pool, target, streamId(target.name, o.phase, round, client), {
            events: o.events,
            history,
            abortAfter: abort ? Math.ceil(o.events / 2) : undefined,
            measured: round > 0,
            result,
          });
        }
      }),
    );
  } finally {
    await pool.close();
  }
  result.wallSeconds = (clockMs() - started) / 1000;
  return result;
}

async function oneStream(
  pool: Pool,
  target: Target,
  id: string,
  s: {
    events: number;
    history: unknown[];
    abortAfter: number | undefined;
    measured: boolean;
    result: PhaseResult;
  },
): Promise<void> {
  const body = JSON.stringify({
    model: "claude-sonnet-4-6",
    max_tokens: 4096,
    stream: true,
    metadata: { user_id: id },
    messages: [
      ...s.history,
      { role: "user", content: "Summarise the repository's README in three sentences." },
    ],
  });
  const controller = new AbortController();
  const t0 = clockMs();
  let deltas = 0;
  s.result.streams++;
  try {
    const res = await pool.request({
      path: "/v1/messages?beta=true",
      method: "POST",
      headers: {
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
        ...target.headers(id),
      },
      body,
      signal: controller.signal,
    });
    if (res.statusCode !== 200) {
      s.result.failures.push(`${id}: status ${res.statusCode}: ${(await res.body.text()).slice(0, 200)}`);
      return;
    }
    const reader = new SseReader();
    let first = true;
    for await (const chunk of res.body) {
      const now = clockMs();
      if (first) {
        first = false;
        if (s.measured) s.result.ttfbMs.push(now - t0);
      }
      for (const e of reader.push(chunk as Uint8Array)) {
        const sentAt = sentAtOf(e);
        if (sentAt === undefined) continue;
        deltas++;
        if (s.measured) s.result.delaysMs.push(now - sentAt);
      }
      if (s.abortAfter !== undefined && deltas >= s.abortAfter) {
        s.result.aborted++;
        controller.abort();
        return;
      }
    }
    if (deltas !== s.events) s.result.failures.push(`${id}: ${deltas} of ${s.events} deltas arrived`);
  } catch (err) {
    if (controller.signal.aborted) return;
    s.result.failures.push(`${id}: ${(err as Error).message}`);
  }
}
