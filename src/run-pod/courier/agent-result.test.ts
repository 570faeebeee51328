import { describe, expect, it } from "vitest";
import { parseExitCode } from "./agent-result.js";

describe("parseExitCode", () => {
  it.each([
    ["0\n", { state: "exited", code: 0 }],
    [" 124 ", { state: "exited", code: 124 }],
    ["-1", { state: "exited", code: -1 }],
    ["", { state: "unreadable", content: "" }],
    ["0x1", { state: "unreadable", content: "0x1" }],
    ["1 2", { state: "unreadable", content: "1 2" }],
  ])("%j", (content, expected) => {
    expect(parseExitCode(content)).toEqual(expected);
  });
});
