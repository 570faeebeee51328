import { describe, expect, it } from "vitest";
import { isUsageLine, LogMeter } from "./log-meter.js";

const result = JSON.stringify({ type: "result", total_cost_usd: 0.1, usage: { input_tokens: 1 } });

function meter(text: string, chunk: number, limits = { headBytes: 64, tailLines: 3, usageBytes: 1024 }) {
  const m = new LogMeter(limits);
  for (let i = 0; i < text.length; i += chunk) m.feed(text.slice(i, i + chunk));
  return m.end();
}

describe("LogMeter: one pass over the whole log", () => {
  it.each([1, 3, 1000])("a short log is kept whole, whatever the chunk size (%i)", (chunk) => {
    const text = `hello\n${result}\nbye\n`;
    const m = meter(text, chunk, { headBytes: 256, tailLines: 3, usageBytes: 1024 });
    expect(m.text).toBe(text);
    expect(m.usageLines).toBe(result);
    expect(m.totalBytes).toBe(Buffer.byteLength(text));
  });

  it("past the head bound, the output keeps the head and the last lines; the usage line is kept wherever it was", () => {
    const text = `${"h".repeat(60)}\n${"filler\n".repeat(50)}${result}\n${"after\n".repeat(10)}`;
    const m = meter(text, 5);
    expect(m.text.startsWith("h".repeat(60))).toBe(true);
    expect(m.text.endsWith("after\nafter\nafter\n")).toBe(true);
    expect(m.text).not.toContain(result);
    expect(m.usageLines).toBe(result);
  });

  it("the supervisor's provider-limit events are kept with the usage lines, wherever they were; a malformed one is not", () => {
    const wait =
      '{"kind":"provider-limit","provider":"openai","status":503,"retry":1,"waitSeconds":4,"at":"2026-01-01T00:00:00.000Z","reason":"overloaded","message":"x"}';
    const forged = '{"kind":"provider-limit","provider":"openai","status":"lots"}';
    const text = `${"h".repeat(60)}\n${"filler\n".repeat(50)}${wait}\n${forged}\n${"filler\n".repeat(50)}${result}\n`;
    const m = meter(text, 7, { headBytes: 256, tailLines: 3, usageBytes: 4096 });
    expect(m.text).not.toContain(wait);
    expect(m.usageLines).toBe(`${wait}\n${result}`);
  });

  it("a line that never ends is taken as it is (memory stays bounded)", () => {
    const m = meter("z".repeat(500), 10);
    expect(m.text.length).toBeLessThanOrEqual(500);
    expect(m.usageLines).toBe("");
  });

  it("more usage lines than the bound: the first and the last are kept, and it says so", () => {
    const lines = Array.from({ length: 100 }, (_, i) => JSON.stringify({ type: "result", n: i }));
    const m = meter(`${lines.join("\n")}\n`, 13, { headBytes: 64, tailLines: 3, usageBytes: 600 });
    expect(m.usageTruncated).toBe(true);
    const kept = m.usageLines.split("\n");
    expect(kept[0]).toBe(lines[0]);
    expect(kept.at(-1)).toBe(lines[99]);
    expect(Buffer.byteLength(m.usageLines)).toBeLessThanOrEqual(600);
  });
});

describe("isUsageLine", () => {
  it.each([
    [result, true],
    ['{"type":"system","subtype":"init","model":"claude-opus-5-5"}', true],
    ['{"type":"turn.completed","usage":{}}', true],
    ['{"type":"step_finish","part":{}}', true],
    ['{"type":"assistant","message":{"usage":{}}}', true],
    ['{"type":"user"}', false],
    ['plain text with a "type" word', false],
    ['{"type": "result"', false],
  ])("%s → %s", (line, want) => {
    expect(isUsageLine(line)).toBe(want);
  });
});
