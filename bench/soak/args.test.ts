import { describe, expect, it } from "vitest";
import { parseArgs, parseDuration } from "./args.js";

describe("the soak's command line (docs/soak.md#running-it)", () => {
  it.each([
    ["90s", 90_000],
    ["90", 90_000],
    ["10m", 600_000],
    ["1.5h", 5_400_000],
  ])("--duration %s is %d ms", (text, ms) => {
    expect(parseDuration("--duration", text)).toBe(ms);
  });

  it("a seed replays; without one a seed is drawn; ten minutes unless a duration or a count is given", () => {
    expect(parseArgs(["--seed", "42", "--agents", "30", "--faults", "5", "--drain", "4m"])).toEqual({
      seed: 42,
      drainMs: 240_000,
      rate: 20,
      namespace: "ai-agents",
      agents: 30,
      faults: 5,
    });
    const drawn = parseArgs([]);
    expect(drawn.seed).toBeGreaterThanOrEqual(0);
    expect(drawn.durationMs).toBe(600_000);
  });

  it.each([
    [["--seed", "-1"], '--seed must be an integer from 0 to 4294967295, got: "-1"'],
    [["--agents", "0"], "--agents must be an integer from 1"],
    [["--rate", "x"], "--rate must be an integer from 1 to"],
    [["--duration", "ten"], '--duration must be a duration like 90s, 10m or 2h, got: "ten"'],
    [["--kubeconfig", "/k"], "--kubeconfig needs --exec-image"],
  ])("refuses %j, naming the flag", (argv, message) => {
    expect(() => parseArgs(argv)).toThrow(message);
  });
});
