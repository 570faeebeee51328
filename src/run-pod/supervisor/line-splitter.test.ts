import { describe, expect, it } from "vitest";
import { LineSplitter } from "./line-splitter.js";

function split(chunks: string[], maxBytes = 1024): { lines: string[]; overflows: number[] } {
  const lines: string[] = [];
  const overflows: number[] = [];
  const splitter = new LineSplitter(
    (l) => lines.push(l),
    (max) => overflows.push(max),
    maxBytes,
  );
  for (const c of chunks) splitter.push(Buffer.from(c, "utf8"));
  splitter.end();
  return { lines, overflows };
}

describe("LineSplitter", () => {
  it.each<[string, string[], string[]]>([
    ["one line per newline", ["a\nb\n"], ["a", "b"]],
    ["empty lines skipped", ["\n\na\n\n\nb\n\n"], ["a", "b"]],
    ["a line across chunks", ['{"ty', 'pe":', '"x"}\n'], ['{"type":"x"}']],
    ["a final line without newline", ["a\nlast"], ["a", "last"]],
    ["a newline alone in its chunk", ["a", "\n", "b"], ["a", "b"]],
    ["only newlines", ["\n", "\n"], []],
    ["carriage returns are kept (only \\n splits)", ["a\r\nb\n"], ["a\r", "b"]],
  ])("%s", (_name, chunks, want) => {
    expect(split(chunks).lines).toEqual(want);
  });

  it("keeps a character whose bytes arrive in two chunks", () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((l) => lines.push(l));
    const bytes = Buffer.from("é\n", "utf8");
    splitter.push(bytes.subarray(0, 1));
    splitter.push(bytes.subarray(1));
    expect(lines).toEqual(["é"]);
  });

  it("accepts a line of exactly the limit", () => {
    expect(split(["x".repeat(8), "\n"], 8)).toEqual({ lines: ["x".repeat(8)], overflows: [] });
  });

  it("stops for good at a line longer than the limit, after forwarding the lines before it", () => {
    const { lines, overflows } = split(["ok\n", "x".repeat(5), "x".repeat(5), "\nafter\n"], 8);
    expect(lines).toEqual(["ok"]);
    expect(overflows).toEqual([8]);
  });

  it("stops at an over-long line that arrives in one chunk", () => {
    const { lines, overflows } = split([`${"y".repeat(20)}\nnever\n`], 8);
    expect(lines).toEqual([]);
    expect(overflows).toEqual([8]);
  });
});
