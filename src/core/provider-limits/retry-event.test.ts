import { describe, expect, it } from "vitest";
import { providerAnswer } from "./answer.js";
import {
  lastProviderAnswer,
  MAX_EVENT_MESSAGE,
  parseProviderLimitEvent,
  providerLimitEvent,
  providerRetriesOf,
} from "./retry-event.js";

const AT = Date.parse("2026-12-05T08:00:00.000Z");
const event = (status: number, waitMs: number, retry: number, retryAfter?: number, turn?: number) =>
  JSON.stringify(
    providerLimitEvent(
      providerAnswer("anthropic", status, `said ${status}`, retryAfter),
      retry,
      waitMs,
      AT,
      turn,
    ),
  );

describe("the provider-limit event", () => {
  it("names the provider, the status, the retry, the wait and the provider's words, in wire order", () => {
    expect(event(429, 2_400, 1, 2, 3)).toBe(
      '{"kind":"provider-limit","provider":"anthropic","status":429,"retry":1,"waitSeconds":3,"retryAfterSeconds":2,"turn":3,"at":"2026-12-05T08:00:00.000Z","reason":"rate_limited","message":"said 429"}',
    );
    expect(JSON.parse(event(0, 5_000, 2))).toMatchObject({ status: 0, reason: "connection", waitSeconds: 5 });
    expect(JSON.parse(event(0, 5_000, 2))).not.toHaveProperty("retryAfterSeconds");
  });

  it("caps the provider's words", () => {
    const long = providerLimitEvent(providerAnswer("openai", 503, "x".repeat(5000)), 1, 1000, AT);
    expect(long.message).toHaveLength(MAX_EVENT_MESSAGE);
    expect(long.message.endsWith("…")).toBe(true);
  });

  it("reads back only well-formed events", () => {
    expect(parseProviderLimitEvent(event(529, 1000, 1))).toMatchObject({ status: 529, retry: 1 });
    for (const bad of [
      '{"kind":"provider-limit","provider":"a","status":-1,"retry":1,"waitSeconds":1,"at":"2026-12-05T08:00:00Z"}',
      '{"kind":"provider-limit","provider":"a","status":429,"retry":1,"waitSeconds":1.5,"at":"2026-12-05T08:00:00Z"}',
      '{"kind":"provider-limit","provider":"a","status":429,"retry":1,"waitSeconds":1,"at":"yesterday"}',
      '{"kind":"provider-limit","status":429,"retry":1,"waitSeconds":1,"at":"2026-12-05T08:00:00Z"}',
      '{"kind":"lifecycle","phase":"agent","status":"started"}',
      "provider-limit",
    ]) {
      expect(parseProviderLimitEvent(bad), bad).toBeUndefined();
    }
  });
});

describe("status.providerRetries from a run's log", () => {
  const log = [
    '{"type":"system","subtype":"init","session_id":"s"}',
    event(429, 2_000, 1, 2),
    '{"type":"result","is_error":true}',
    event(529, 7_300, 2),
    '{"kind":"lifecycle","phase":"agent","status":"succeeded","exitCode":0}',
  ].join("\n");

  it("counts the retries, sums the waits and keeps the last answer", () => {
    expect(providerRetriesOf(log)).toEqual({
      count: 2,
      waitedSeconds: 10,
      last: { provider: "anthropic", status: 529, at: "2026-12-05T08:00:00.000Z" },
    });
    expect(providerRetriesOf(event(429, 1_000, 1, 1))?.last).toEqual({
      provider: "anthropic",
      status: 429,
      at: "2026-12-05T08:00:00.000Z",
      retryAfterSeconds: 1,
    });
  });

  it("is absent for a run that took none", () => {
    expect(providerRetriesOf('{"type":"result"}\n')).toBeUndefined();
  });

  it("a forged line claims no more than the run lasted", () => {
    const forged = Array.from({ length: 500 }, (_, i) => event(429, 3_600_000, i + 1)).join("\n");
    expect(providerRetriesOf(forged, 90)).toMatchObject({ count: 90, waitedSeconds: 90 });
  });

  it.each([
    ["in the year 9999: the run's end", "9999-12-31T23:59:59Z", "2026-12-05T08:01:00.000Z"],
    [
      "at the last time a Date holds: the run's end",
      "+275760-09-13T00:00:00.000Z",
      "2026-12-05T08:01:00.000Z",
    ],
    ["before the run started: its start", "1970-01-01T00:00:00Z", "2026-12-05T07:59:00.000Z"],
    ["within the run: as it came", "2026-12-05T08:00:00.000Z", "2026-12-05T08:00:00.000Z"],
  ])("a forged answer time %s", (_, at, kept) => {
    const line = JSON.stringify({ ...JSON.parse(event(429, 1000, 1, 3_000_000)), at });
    const lifetime = { from: AT - 60_000, to: AT + 60_000 };
    expect(providerRetriesOf(line, 120, lifetime)?.last).toEqual({
      provider: "anthropic",
      status: 429,
      at: kept,
      retryAfterSeconds: 3_000_000,
    });
  });

  it("the last answer in words, for a failure reason", () => {
    expect(lastProviderAnswer(log)).toBe("anthropic 529: said 529");
    expect(lastProviderAnswer(event(0, 1000, 1))).toBe("anthropic no answer (connection dropped): said 0");
    expect(lastProviderAnswer("")).toBeUndefined();
  });

  it.each([
    [
      "a drop after answers: the answer, then the drop",
      [429, 0, 0],
      "anthropic 429: said 429; after it: no answer (connection dropped): said 0",
    ],
    ["an answer after a drop: the answer alone", [0, 529], "anthropic 529: said 529"],
    ["drops only", [0, 0], "anthropic no answer (connection dropped): said 0"],
  ])("%s", (_, statuses, words) => {
    const lines = statuses.map((s, i) => event(s, 1000, i + 1)).join("\n");
    expect(lastProviderAnswer(lines)).toBe(words);
  });
});
