/**
 * The pure parts of the gateway benchmark (docs/gateway.md#benchmark): its flags, the send time
 * each paced event carries and the delay read from it, percentile summaries, and the check that
 * the gateway's metered usage equals what the fake provider's journal says it sent.
 */
import type { SseEvent } from "../../src/gateway/sse.js";
import { pct } from "../lib.js";

export interface GatewayBenchArgs {
  /** Concurrent streams of the latency phase (the targets are stated at 200). */
  streams: number;
  /** Concurrent streams of the memory phase (the RSS target is stated at 500). */
  rssStreams: number;
  /** Text deltas per stream. */
  events: number;
  /** Milliseconds between two deltas of one stream, as the fake provider sends them. */
  paceMs: number;
  /** Streams each concurrent client sends back to back; the first of each is a warm-up. */
  rounds: number;
  /** Every n-th stream is aborted by the client halfway (0: none). */
  abortEvery: number;
  /** KiB of conversation added to each request body (0: a one-line prompt), for the body parse's share of the first byte. */
  bodyKib: number;
}

export const DEFAULT_ARGS: Readonly<GatewayBenchArgs> = {
  streams: 200,
  rssStreams: 500,
  events: 100,
  paceMs: 20,
  rounds: 3,
  abortEvery: 10,
  bodyKib: 0,
};

const FLAGS: Readonly<Record<string, keyof GatewayBenchArgs>> = {
  "--streams": "streams",
  "--rss-streams": "rssStreams",
  "--events": "events",
  "--pace-ms": "paceMs",
  "--rounds": "rounds",
  "--abort-every": "abortEvery",
  "--body-kib": "bodyKib",
};

/** The bench's flags; a bad value is an error naming the flag. */
export function parseGatewayArgs(argv: readonly string[]): GatewayBenchArgs {
  const args: GatewayBenchArgs = { ...DEFAULT_ARGS };
  for (const [flag, field] of Object.entries(FLAGS)) {
    const i = argv.indexOf(flag);
    if (i < 0) continue;
    const raw = argv[i + 1];
    const n = Number(raw);
    const min = field === "abortEvery" || field === "bodyKib" ? 0 : field === "rounds" ? 2 : 1;
    if (raw === undefined || !/^[0-9]+$/.test(raw) || n < min) {
      throw new Error(`${flag} must be an integer of at least ${min}, got: ${JSON.stringify(raw ?? "")}`);
    }
    args[field] = n;
  }
  return args;
}

/**
 * The text of a paced delta: `@` and the fake's send time (ms on the shared clock, `clockMs`),
 * then filler so an event is about the size of a real one. The client reads the time back.
 */
export const stampedText = (sentAtMs: number) => `@${sentAtMs.toFixed(3)} lorem ipsum dolor sit`;

const STAMP = /"text":"@([0-9]+(?:\.[0-9]+)?) /;

/** The send time a delta event carries, or undefined for any other event. */
export function sentAtOf(e: SseEvent): number | undefined {
  if (e.event !== "content_block_delta") return undefined;
  const m = STAMP.exec(e.data);
  return m ? Number(m[1]) : undefined;
}

/**
 * Milliseconds, to the microsecond, on a clock every process of the bench shares: Node's hrtime is
 * the kernel's CLOCK_MONOTONIC on Linux, one clock for the whole machine, so the fake's send time
 * and the client's receive time subtract exactly across processes (`performance.now()` counts from
 * each process's own start and would not).
 */
export const clockMs = () => Number(process.hrtime.bigint() / 1000n) / 1000;

export interface Summary {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Nearest-rank p50, p99 and the maximum (bench/lib.ts `pct`), rounded to µs. */
export function summarize(xs: readonly number[]): Summary {
  if (xs.length === 0) return { n: 0, p50: Number.NaN, p99: Number.NaN, max: Number.NaN };
  let max = Number.NEGATIVE_INFINITY;
  for (const x of xs) if (x > max) max = x;
  return { n: xs.length, p50: round3(pct([...xs], 50)), p99: round3(pct([...xs], 99)), max: round3(max) };
}

/** What one path adds over the direct one: the difference of each percentile (the events are not paired). */
export function added(path: Summary, direct: Summary): { p50: number; p99: number } {
  return { p50: round3(path.p50 - direct.p50), p99: round3(path.p99 - direct.p99) };
}

/** Token counts in the gateway's four kinds (src/gateway/usage/reading.ts). */
export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** What the fake provider wrote on one stream: the latest value of each usage field it sent. */
export interface JournalStream {
  id: string;
  /** Undefined when not even `message_start` went out. */
  usage?: TokenCounts;
  /** Whether `message_stop` went out. */
  complete: boolean;
}

/** One gateway usage record, reduced to the stream it metered (the run name is the stream id). */
export interface MeteredStream {
  id: string;
  usage?: TokenCounts;
  clientAborted: boolean;
  complete: boolean;
}

export interface UsageCheck {
  /** Streams the journal holds (those the comparison covers). */
  streams: number;
  /** Streams whose metered usage equals the journal's in all four kinds. */
  equal: number;
  /** Of those, streams the client aborted. */
  equalAborted: number;
  abortedStreams: number;
  /** Metered, but with other counts than the journal's (or none). */
  mismatched: { id: string; journal?: TokenCounts; metered?: TokenCounts }[];
  /** In the journal, never metered. */
  unmetered: string[];
  /** Metered more than once, or metered without a journal entry. */
  unexpected: string[];
}

const KINDS: readonly (keyof TokenCounts)[] = [
  "inputTokens",
  "outputTokens",
  "cacheReadTokens",
  "cacheWriteTokens",
];

const sameCounts = (a: TokenCounts | undefined, b: TokenCounts | undefined) =>
  a === undefined || b === undefined ? a === b : KINDS.every((k) => a[k] === b[k]);

const countsOf = (u: TokenCounts | undefined): TokenCounts | undefined =>
  u && {
    inputTokens: u.inputTokens,
    outputTokens: u.outputTokens,
    cacheReadTokens: u.cacheReadTokens,
    cacheWriteTokens: u.cacheWriteTokens,
  };

/** Compares each journal stream with the one record metered for it. */
export function compareUsage(
  journal: readonly JournalStream[],
  metered: readonly MeteredStream[],
): UsageCheck {
  const byId = new Map<string, MeteredStream[]>();
  for (const m of metered) byId.set(m.id, [...(byId.get(m.id) ?? []), m]);
  const check: UsageCheck = {
    streams: journal.length,
    equal: 0,
    equalAborted: 0,
    abortedStreams: 0,
    mismatched: [],
    unmetered: [],
    unexpected: [],
  };
  const inJournal = new Set<string>();
  for (const j of journal) {
    inJournal.add(j.id);
    const records = byId.get(j.id) ?? [];
    const record = records[0];
    if (records.length > 1) check.unexpected.push(j.id);
    if (record?.clientAborted) check.abortedStreams++;
    if (record === undefined) check.unmetered.push(j.id);
    else if (sameCounts(j.usage, record.usage)) {
      check.equal++;
      if (record.clientAborted) check.equalAborted++;
    } else check.mismatched.push({ id: j.id, journal: countsOf(j.usage), metered: countsOf(record.usage) });
  }
  for (const id of byId.keys()) if (!inJournal.has(id)) check.unexpected.push(id);
  return check;
}
