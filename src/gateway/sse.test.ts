import { describe, expect, it } from "vitest";
import { type SseEvent, SseReader } from "./sse.js";

const STREAM =
  'event: message_start\ndata: {"a":1}\n\n' +
  ": a comment\r\n" +
  "event: ping\r\ndata: {}\r\n\r\n" +
  "data: line one\rdata: line two\r\r" +
  "data:no-space\n\n" +
  "id: 7\nretry: 10\ndata: héllo ✓\n\n";

const EXPECTED: SseEvent[] = [
  { event: "message_start", data: '{"a":1}' },
  { event: "ping", data: "{}" },
  { event: undefined, data: "line one\nline two" },
  { event: undefined, data: "no-space" },
  { event: undefined, data: "héllo ✓" },
];

function readAll(chunks: Uint8Array[], reader = new SseReader()): SseEvent[] {
  return [...chunks.flatMap((c) => reader.push(c)), ...reader.end()];
}

describe("the SSE reader (docs/gateway.md#metering)", () => {
  it("reads LF, CRLF and CR line ends, comments, multi-line data and other fields", () => {
    expect(readAll([Buffer.from(STREAM)])).toEqual(EXPECTED);
  });

  it("gives the same events for every split of the bytes, inside a CRLF and a UTF-8 character too", () => {
    const bytes = Buffer.from(STREAM);
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(readAll([bytes.subarray(0, cut), bytes.subarray(cut)]), `cut at ${cut}`).toEqual(EXPECTED);
    }
    expect(readAll([...bytes].map((b) => Uint8Array.of(b)))).toEqual(EXPECTED);
  });

  it("does not dispatch a last event without its blank line", () => {
    expect(readAll([Buffer.from("data: done\n\ndata: cut off")])).toEqual([
      { event: undefined, data: "done" },
    ]);
  });

  it("drops an event larger than the bound and counts it, then reads on", () => {
    const reader = new SseReader(10);
    const events = readAll([Buffer.from(`data: ${"x".repeat(20)}\n\ndata: ok\n\n`)], reader);
    expect(events).toEqual([{ event: undefined, data: "ok" }]);
    expect(reader.dropped).toBe(1);
    const split = new SseReader(10);
    const parts = [`data: ${"y".repeat(8)}`, "y".repeat(8), "\n\n", "data: ok\n\n"].map((s) =>
      Buffer.from(s),
    );
    expect(readAll(parts, split)).toEqual([{ event: undefined, data: "ok" }]);
    expect(split.dropped).toBe(1);
  });
});
