import { describe, expect, it } from "vitest";
import { LogMeter, type LogMeterPlan, MAX_LINE_BYTES, meterText } from "./log-meter.js";
import { capOutput } from "./output.js";

const j = (o: unknown) => JSON.stringify(o);
const result = j({ type: "result", total_cost_usd: 0.1, usage: { input_tokens: 1000, output_tokens: 10 } });
const claude: LogMeterPlan = {
  vendor: "claude",
  usage: { vendor: "claude", execution: "interactive", model: "claude-opus-5-5" },
  keepBytes: 64,
};

function meter(text: string, chunk: number, plan: LogMeterPlan = claude) {
  const m = new LogMeter(plan);
  for (let i = 0; i < text.length; i += chunk) m.feed(text.slice(i, i + chunk));
  return m.end();
}

describe("LogMeter: one pass over the whole log, fixed memory", () => {
  it.each([1, 3, 1000])(
    "a short log is kept whole and read the same, whatever the chunk size (%i)",
    (chunk) => {
      const text = `hello\n${result}\nbye\n`;
      const m = meter(text, chunk, { ...claude, keepBytes: 256 });
      expect(m.text).toBe(text);
      expect(m.droppedBytes).toBe(0);
      expect(m.facts.usage).toMatchObject({ costUsd: 0.1, costSource: "reported" });
      expect(m.facts.totalBytes).toBe(Buffer.byteLength(text));
    },
  );

  it.each([1, 7, 4096])(
    "the output is the log's truncated tail, as if capped whole (chunks of %i)",
    (chunk) => {
      const text = `${"héllo wörld\n".repeat(500)}${result}\n${"the end\n".repeat(20)}`;
      const m = meter(text, chunk, { ...claude, keepBytes: 300 });
      expect(Buffer.byteLength(m.text)).toBeGreaterThanOrEqual(300);
      expect(m.droppedBytes + Buffer.byteLength(m.text)).toBe(Buffer.byteLength(text));
      expect(capOutput(m.text, 300, m.droppedBytes)).toBe(capOutput(text, 300));
      // The result line is far from the tail, and still counted.
      expect(m.facts.usage?.costUsd).toBe(0.1);
    },
  );

  it("M2: junk usage lines either side of the real result and a forged tiny figure at the end hide nothing", () => {
    const junk = `${j({ type: "result", usage: { input_tokens: 0 } })}\n`.repeat(20_000);
    const real = j({
      type: "result",
      total_cost_usd: 8.7,
      usage: { input_tokens: 1_000_000, output_tokens: 200_000 },
    });
    const forged = j({ type: "result", total_cost_usd: 0.000001, usage: { input_tokens: 1 } });
    const m = meter(`${junk}${real}\n${junk}${forged}\n`, 65536);
    expect(m.facts.usage?.costUsd).toBeGreaterThanOrEqual(8.7);
  });

  it("the session id is the last session event's; gemini's only one is its first init line", () => {
    const claudeLog = [
      j({ type: "system", subtype: "init", session_id: "a" }),
      j({ type: "result", session_id: "b" }),
      "noise",
    ].join("\n");
    expect(meter(claudeLog, 5).facts.sessionId).toBe("b");
    const geminiLog = [
      j({ type: "init", session_id: "g-1", model: "gemini-3.1-pro" }),
      ...Array.from({ length: 100 }, () => j({ type: "message", role: "assistant", content: "x" })),
      j({ type: "result", status: "success", stats: {} }),
    ].join("\n");
    expect(meter(geminiLog, 13, { vendor: "gemini", keepBytes: 10 }).facts.sessionId).toBe("g-1");
  });

  it("the pull request URL and a delivery failure come from the courier's last delivery event", () => {
    const courier = [
      j({ kind: "delivery", status: "opened", url: "https://github.com/o/r/pull/1" }),
      j({ kind: "delivery", status: "failed", reason: "push refused" }),
    ].join("\n");
    const f = meter(courier, 9, { vendor: "claude", keepBytes: 10 }).facts;
    expect(f.pullRequestUrl).toBe("https://github.com/o/r/pull/1");
    expect(f.deliveryFailure).toBe("push refused");
  });

  it("a line longer than MAX_LINE_BYTES is skipped unread and counted; the lines around it are read", () => {
    const huge = `{"type":"result","x":"${"z".repeat(MAX_LINE_BYTES + 10)}"}`;
    const m = meter(`${result}\n${huge}\n${result}\n`, 64 * 1024);
    expect(m.facts.unreadLines).toBe(1);
    expect(m.facts.usage?.costUsd).toBeCloseTo(0.2, 9);
    // A line without end at all is counted when the log ends.
    expect(meter("z".repeat(MAX_LINE_BYTES + 1), 1 << 20).facts.unreadLines).toBe(1);
  });

  it("says whether the supervisor's agent/started and closing events were read (a rotated log lacks the first)", () => {
    const started = j({ kind: "lifecycle", phase: "agent", status: "started" });
    const ended = j({ kind: "lifecycle", phase: "agent", status: "succeeded", exitCode: 0 });
    expect(meter(`${started}\n${result}\n${ended}\n`, 10).facts).toMatchObject({
      started: true,
      ended: true,
    });
    expect(meter(`${result}\n${ended}\n`, 10).facts).toMatchObject({ started: false, ended: true });
  });

  it("provider-limit events are tallied; a malformed one is not", () => {
    const wait = j({
      kind: "provider-limit",
      provider: "openai",
      status: 503,
      retry: 1,
      waitSeconds: 4,
      at: "2026-01-01T00:00:00.000Z",
      reason: "overloaded",
      message: "x",
    });
    const forged = j({ kind: "provider-limit", provider: "openai", status: "lots" });
    const f = meterText(`${"filler\n".repeat(50)}${wait}\n${forged}\n`, { ...claude, runSeconds: 100 }).facts;
    expect(f.providerRetries).toMatchObject({ count: 1, waitedSeconds: 4 });
    expect(f.providerAnswer).toBe("openai 503: x");
  });

  it("the CLI's last error: its own error line first, else its last stderr line, flattened and capped", () => {
    const log = `[agent] first\n[agent] ${"long  text ".repeat(200)}\n`;
    const f = meter(log, 17).facts;
    expect(f.cliError.length).toBe(512);
    expect(f.cliError.startsWith("long text long text")).toBe(true);
  });
});
