import { describe, expect, it } from "vitest";
import {
  added,
  compareUsage,
  DEFAULT_ARGS,
  type JournalStream,
  type MeteredStream,
  parseGatewayArgs,
  sentAtOf,
  stampedText,
  summarize,
  type TokenCounts,
} from "./report.js";

describe("parseGatewayArgs: the gateway bench's flags (docs/gateway.md#benchmark)", () => {
  it("defaults to the figures the targets are stated at", () => {
    expect(parseGatewayArgs(["--gateway"])).toEqual(DEFAULT_ARGS);
    expect(DEFAULT_ARGS.streams).toBe(200);
    expect(DEFAULT_ARGS.rssStreams).toBe(500);
  });

  it("reads each flag", () => {
    expect(
      parseGatewayArgs([
        "--gateway",
        "--streams",
        "10",
        "--rss-streams",
        "20",
        "--events",
        "5",
        "--pace-ms",
        "2",
        "--rounds",
        "4",
        "--abort-every",
        "0",
        "--body-kib",
        "64",
      ]),
    ).toEqual({ streams: 10, rssStreams: 20, events: 5, paceMs: 2, rounds: 4, abortEvery: 0, bodyKib: 64 });
  });

  it.each([
    [["--streams", "0"], '--streams must be an integer of at least 1, got: "0"'],
    [["--events", "x"], '--events must be an integer of at least 1, got: "x"'],
    [["--pace-ms"], '--pace-ms must be an integer of at least 1, got: ""'],
    [["--rounds", "1"], '--rounds must be an integer of at least 2, got: "1"'],
    [["--abort-every", "-1"], '--abort-every must be an integer of at least 0, got: "-1"'],
  ])("refuses %j naming the flag", (argv, message) => {
    expect(() => parseGatewayArgs(argv)).toThrow(message);
  });
});

describe("sentAtOf: the send time a paced delta carries", () => {
  const delta = (text: string) => ({
    event: "content_block_delta",
    data: JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }),
  });

  it("reads back the time stampedText wrote", () => {
    expect(sentAtOf(delta(stampedText(1765120000123.125)))).toBe(1765120000123.125);
  });

  it("is undefined for other events and for deltas without a stamp", () => {
    expect(sentAtOf({ event: "message_start", data: '{"text":"@12 x"}' })).toBeUndefined();
    expect(sentAtOf(delta("plain text"))).toBeUndefined();
    expect(sentAtOf({ data: '{"text":"@12 x"}' })).toBeUndefined();
  });
});

describe("summarize and added", () => {
  it("gives nearest-rank percentiles and the maximum", () => {
    const xs = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1, unsorted
    expect(summarize(xs)).toEqual({ n: 100, p50: 50, p99: 99, max: 100 });
    expect(summarize([3])).toEqual({ n: 1, p50: 3, p99: 3, max: 3 });
  });

  it("is NaN for no samples rather than zero", () => {
    const s = summarize([]);
    expect(s.n).toBe(0);
    expect(s.p50).toBeNaN();
  });

  it("added is the difference of each percentile", () => {
    expect(added({ n: 9, p50: 1.25, p99: 9, max: 10 }, { n: 9, p50: 1, p99: 4.5, max: 5 })).toEqual({
      p50: 0.25,
      p99: 4.5,
    });
  });
});

describe("compareUsage: metered usage against the fake provider's journal", () => {
  const u = (input: number, output: number): TokenCounts => ({
    inputTokens: input,
    outputTokens: output,
    cacheReadTokens: 7,
    cacheWriteTokens: 3,
  });
  const j = (id: string, usage?: TokenCounts): JournalStream => ({
    id,
    complete: true,
    ...(usage ? { usage } : {}),
  });
  const m = (id: string, usage?: TokenCounts, clientAborted = false): MeteredStream => ({
    id,
    clientAborted,
    complete: true,
    ...(usage ? { usage } : {}),
  });

  it("counts every stream equal when each was metered once with the journal's counts, aborted ones included", () => {
    const check = compareUsage(
      [j("a", u(10, 20)), j("b", u(11, 1))],
      [m("b", u(11, 1), true), m("a", u(10, 20))],
    );
    expect(check).toEqual({
      streams: 2,
      equal: 2,
      equalAborted: 1,
      abortedStreams: 1,
      mismatched: [],
      unmetered: [],
      unexpected: [],
    });
  });

  it("names a stream metered with other counts, one never metered, and records without a journal entry", () => {
    const check = compareUsage(
      [j("a", u(10, 20)), j("b", u(11, 21)), j("c", u(12, 22))],
      [m("a", u(10, 19)), m("c", { ...u(12, 22), cacheReadTokens: 8 }), m("z", u(1, 1))],
    );
    expect(check.equal).toBe(0);
    expect(check.mismatched.map((x) => x.id)).toEqual(["a", "c"]);
    expect(check.mismatched[0]).toEqual({ id: "a", journal: u(10, 20), metered: u(10, 19) });
    expect(check.unmetered).toEqual(["b"]);
    expect(check.unexpected).toEqual(["z"]);
  });

  it("a stream metered twice is unexpected; usage on one side only is a mismatch; none on both is equal", () => {
    const check = compareUsage(
      [j("a", u(1, 1)), j("b"), j("c", u(2, 2))],
      [m("a", u(1, 1)), m("a", u(1, 1)), m("b"), m("c")],
    );
    expect(check.unexpected).toEqual(["a"]);
    expect(check.equal).toBe(2);
    expect(check.mismatched).toEqual([{ id: "c", journal: u(2, 2), metered: undefined }]);
  });

  it("ignores fields beyond the four kinds (the one-hour cache and reasoning parts)", () => {
    const check = compareUsage(
      [j("a", u(1, 1))],
      [m("a", { ...u(1, 1), cacheWrite1hTokens: 3 } as TokenCounts)],
    );
    expect(check.equal).toBe(1);
  });
});
