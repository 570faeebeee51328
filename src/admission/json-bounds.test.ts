import { describe, expect, it } from "vitest";
import { exceedsJsonBounds } from "./json-bounds.js";

const bounds = { maxDepth: 4, maxValues: 10 };
const check = (text: string) => exceedsJsonBounds(Buffer.from(text), bounds);

describe("exceedsJsonBounds", () => {
  it.each([
    ['{"a":{"b":[1,2,{"c":"d"}]}}', undefined],
    ['{"a":{"b":[[[1]]]}}', "it is nested deeper than 4 levels"],
    ["[1,2,3,4,5,6,7,8,9,10]", "it holds more than 10 JSON values"],
    // Brackets, commas and escaped quotes inside strings are text, not structure.
    ['{"s":"[[[[[[,,,,,,,,,,,\\"[[[[[["}', undefined],
    ['{"s":"\\\\"}', undefined],
  ])("%s → %s", (text, why) => {
    expect(check(text)).toBe(why);
  });

  it("lets a long string through as one value", () => {
    expect(check(JSON.stringify({ prompt: "x,".repeat(100_000) }))).toBeUndefined();
  });
});
