import { describe, expect, it } from "vitest";
import { parseHeaderBlock } from "./headers.js";
import { backoffMs, backoffSchedule, DEFAULT_RETRY, retryFromEnv } from "./retry.js";

describe("sink retry settings", () => {
  it.each([
    [{}, { attempts: 3, baseMs: 200, maxMs: 5000 }],
    [{ AGENT_SINK_RETRY_ATTEMPTS: "5" }, { attempts: 5, baseMs: 200, maxMs: 5000 }],
    [{ AGENT_SINK_RETRY_ATTEMPTS: "0" }, { attempts: 1, baseMs: 200, maxMs: 5000 }],
    [{ AGENT_SINK_RETRY_ATTEMPTS: "-4" }, { attempts: 1, baseMs: 200, maxMs: 5000 }],
    [{ AGENT_SINK_RETRY_ATTEMPTS: "three" }, { attempts: 3, baseMs: 200, maxMs: 5000 }],
    [{ AGENT_SINK_RETRY_ATTEMPTS: "2.5" }, { attempts: 3, baseMs: 200, maxMs: 5000 }],
    [
      { AGENT_SINK_RETRY_BASE_MS: "50", AGENT_SINK_RETRY_MAX_MS: "120" },
      { attempts: 3, baseMs: 50, maxMs: 120 },
    ],
    [
      { AGENT_SINK_RETRY_BASE_MS: "", AGENT_SINK_RETRY_MAX_MS: "x" },
      { attempts: 3, baseMs: 200, maxMs: 5000 },
    ],
  ])("%j → %j", (env, expected) => {
    expect(retryFromEnv(env)).toEqual(expected);
  });

  it("defaults wait 200 ms then 400 ms", () => {
    expect(backoffSchedule(DEFAULT_RETRY)).toEqual([200, 400]);
  });

  it("doubles up to the ceiling", () => {
    const s = { attempts: 8, baseMs: 200, maxMs: 5000 };
    expect(backoffSchedule(s)).toEqual([200, 400, 800, 1600, 3200, 5000, 5000]);
    expect(backoffMs(s, 1)).toBe(200);
    expect(backoffSchedule({ attempts: 1, baseMs: 200, maxMs: 5000 })).toEqual([]);
  });
});

describe("header block", () => {
  it.each([
    ["Authorization: Bearer abc", [["Authorization", "Bearer abc"]]],
    [
      "  X-A :  1 \n\n X-B: two: parts \r\n",
      [
        ["X-A", "1"],
        ["X-B", "two: parts"],
      ],
    ],
    ["no colon here\n: empty name\nX-C:", [["X-C", ""]]],
    ["", []],
    [undefined, []],
  ])("%j", (block, expected) => {
    expect(parseHeaderBlock(block)).toEqual(expected);
  });
});
