import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { capOutput, lastCliError, lastPullRequestUrl, lastSessionId } from "./output.js";

describe("capOutput (tail-preserving, never splits UTF-8)", () => {
  it("returns short text unchanged", () => {
    expect(capOutput("hello", 5)).toBe("hello");
  });
  it("keeps the tail and marks the cut, marker included in the cap", () => {
    // The marker for a 40-byte text is sized for "truncated 40 bytes" (27 bytes): 3 bytes of tail fit in 30.
    const text = "0123456789".repeat(4);
    expect(capOutput(text, 30)).toBe("...[truncated 37 bytes]...\n789");
  });
  it("moves past a split multi-byte character", () => {
    // 1 + 32 × 2 = 65 bytes; a 27-byte marker leaves 5 bytes, which start mid-character.
    const text = `a${"é".repeat(32)}`;
    expect(capOutput(text, 32)).toBe(`...[truncated 61 bytes]...\n${"é".repeat(2)}`);
  });
  it("a cap smaller than the marker keeps the bare tail", () => {
    expect(capOutput("0123456789", 4)).toBe("6789");
  });
  it("never exceeds maxBytes and keeps a valid suffix, for any text", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 200 }),
        fc.integer({ min: 0, max: 96 }),
        (text, max) => {
          const out = capOutput(text, max);
          if (Buffer.byteLength(text) <= max) return out === text;
          if (Buffer.byteLength(out) > max || out.includes("\uFFFD")) return false;
          const m = /^\.\.\.\[truncated (\d+) bytes\]\.\.\.\n/s.exec(out);
          const kept = m ? out.slice(m[0].length) : out;
          return (
            text.endsWith(kept) && (!m || Number(m[1]) + Buffer.byteLength(kept) === Buffer.byteLength(text))
          );
        },
      ),
    );
  });
});

describe("lastSessionId (docs/decisions.md D-53, docs/agent-clis.md)", () => {
  const claude = [
    '{"type":"system","subtype":"init","session_id":"s-1","model":"claude-sonnet-4-6"}',
    '{"type":"assistant","message":{"content":[]},"session_id":"ignored"}',
    '{"type":"result","is_error":false,"session_id":"s-2"}',
  ].join("\n");
  it.each([
    ["claude", claude, "s-2"],
    ["claude", '{"type":"system","subtype":"init","session_id":"s-1"}\nnot json\n', "s-1"],
    ["codex", '{"type":"thread.started","thread_id":"t-1"}\n{"type":"turn.started"}', "t-1"],
    ["codex", claude, ""],
    [
      "gemini",
      '{"type":"init","session_id":"g-1","model":"gemini-3.1-flash-lite"}\n{"type":"result"}',
      "g-1",
    ],
    ["opencode", claude, ""],
    ["exec", claude, ""],
  ] as const)("%s log → %j", (vendor, log, want) => {
    expect(lastSessionId(vendor, log)).toBe(want);
  });
});

describe("lastPullRequestUrl (docs/events.md#delivery-events)", () => {
  it.each([
    ["", ""],
    ['{"kind":"delivery","status":"skipped","reason":"no-changes"}', ""],
    [
      '{"kind":"delivery","status":"succeeded","url":"https://github.com/o/r/pull/1"}\n{"kind":"delivery","status":"failed","reason":"push"}',
      "https://github.com/o/r/pull/1",
    ],
    [
      '{"kind":"delivery","status":"succeeded","url":"https://github.com/o/r/pull/1"}\n{"kind":"delivery","status":"succeeded","url":"https://github.com/o/r/pull/2"}',
      "https://github.com/o/r/pull/2",
    ],
    ['{"type":"result","url":"https://not-a-delivery"}', ""],
  ])("%j → %j", (log, want) => {
    expect(lastPullRequestUrl(log)).toBe(want);
  });
});

describe("lastCliError", () => {
  it.each([
    [
      "claude result with is_error: its result text",
      "claude" as const,
      '{"type":"system","subtype":"init","session_id":"s"}\n{"type":"result","is_error":true,"result":"Invalid API key · Fix external API key"}',
      "Invalid API key · Fix external API key",
    ],
    ["claude success: none", "claude" as const, '{"type":"result","is_error":false,"result":"ok"}', ""],
    [
      "the last of several, whitespace flattened",
      "exec" as const,
      '{"type":"result","is_error":true,"result":"first"}\n{"type":"result","is_error":true,"result":"second\\n  line"}',
      "second line",
    ],
    ["opencode without an adapter rule: none", "opencode" as const, '{"type":"error"}', ""],
  ])("%s", (_name, vendor, log, want) => {
    expect(lastCliError(vendor, log)).toBe(want);
  });

  it.each([
    [
      "a CLI that says why only on stderr: its last stderr line",
      "gemini" as const,
      '{"kind":"lifecycle","phase":"agent","status":"started"}\n[agent] Loaded cached credentials.\n[agent] Please set an Auth method in your settings.json\n{"kind":"lifecycle","phase":"agent","status":"failed","exitCode":41}',
      "Please set an Auth method in your settings.json",
    ],
    [
      "an error on an output line wins over later stderr",
      "claude" as const,
      '{"type":"result","is_error":true,"result":"Invalid API key"}\n[agent] some trailing warning',
      "Invalid API key",
    ],
    ["an empty stderr line is no reason", "codex" as const, "[agent] \nplain text", ""],
    [
      "a CLI that never ran: the supervisor's error diagnostic",
      "claude" as const,
      '{"level":"info","msg":"installing","component":"supervisor"}\n{"level":"error","msg":"claude setup failed: npm error 404 No match found for version 9.9.9","component":"supervisor"}\n{"kind":"lifecycle","phase":"agent","status":"failed","reason":"setup"}',
      "claude setup failed: npm error 404 No match found for version 9.9.9",
    ],
    [
      "the CLI's stderr wins over the supervisor's diagnostic",
      "gemini" as const,
      '[agent] Please set an Auth method\n{"level":"error","msg":"something later","component":"supervisor"}',
      "Please set an Auth method",
    ],
  ])("%s", (_name, vendor, log, want) => {
    expect(lastCliError(vendor, log)).toBe(want);
  });

  it("cuts a long message to 512 characters", () => {
    const log = JSON.stringify({ type: "result", is_error: true, result: "x".repeat(2000) });
    expect(lastCliError("claude", log)).toHaveLength(512);
  });
});
