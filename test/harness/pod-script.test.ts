import { describe, expect, it } from "vitest";
import {
  FINISH_ANNOTATION,
  FINISH_AT_ANNOTATION,
  goDurationMs,
  podScriptAnnotations,
  podScriptFromAnnotations,
  renderCriLog,
  resolvePodScript,
  SCRIPTED_ANNOTATION,
  scripterPatch,
  validatePodScript,
} from "./pod-script.js";

describe("podScriptAnnotations", () => {
  it("writes outcome and per-container logs as annotations and reads them back", () => {
    const script = {
      exitCode: 3,
      exitCodes: { init: 0, courier: 0 },
      runTime: "1500ms",
      logs: { agent: ["first", "second"], courier: "pr https://x\n" },
    };
    const annotations = podScriptAnnotations(script);
    expect(annotations).toEqual({
      "test.example/exit-code": "3",
      "test.example/exit-code.init": "0",
      "test.example/exit-code.courier": "0",
      "test.example/run-time": "1500ms",
      "test.example/logs.agent": "first\nsecond",
      "test.example/logs.courier": "pr https://x\n",
    });
    expect(podScriptFromAnnotations({ ...annotations, unrelated: "x" })).toEqual({
      ...script,
      logs: { agent: "first\nsecond", courier: "pr https://x\n" },
    });
  });

  it("refuses log files: a path names a file of the test's machine, only a rule carries one", () => {
    expect(() => podScriptAnnotations({ logFiles: { agent: "/tmp/big.log" } })).toThrow(
      "logFiles: only through a rule (scriptPods), not as pod annotations",
    );
  });

  it.each([
    [{ exitCode: 256 }, "exitCode must be an integer from 0 to 255, got 256"],
    [{ exitCode: -1 }, "exitCode must be an integer from 0 to 255, got -1"],
    [{ exitCode: 1.5 }, "exitCode must be an integer from 0 to 255, got 1.5"],
    [{ exitCodes: { agent: 300 } }, "exitCodes.agent must be an integer from 0 to 255, got 300"],
    [{ exitCodes: { Agent_1: 0 } }, 'exitCodes: "Agent_1" is not a valid container name'],
    [{ runTime: "2 seconds" }, 'runTime must be a Go duration such as "2s" or "1500ms", got "2 seconds"'],
    [{ logs: { "": "x" } }, 'logs: "" is not a valid container name'],
    [{ logFiles: { agent: "big.log" } }, 'logFiles.agent must be an absolute path, got "big.log"'],
    [{ logFiles: { "Agent!": "/tmp/x.log" } }, 'logFiles: "Agent!" is not a valid container name'],
  ])("rejects %j naming the field", (script, message) => {
    expect(() => validatePodScript(script)).toThrow(message);
  });
});

describe("resolvePodScript", () => {
  const rule = (name: string, order: number, matchLabels: Record<string, string>, script: object) => ({
    name,
    order,
    matchLabels,
    script,
  });

  it("merges matching rules oldest first, then lets pod annotations win", () => {
    const rules = [
      rule("late", 20, { app: "a" }, { exitCode: 2, logs: { agent: "late" } }),
      rule("early", 10, { app: "a" }, { exitCode: 1, runTime: "1s", logs: { init: "early" } }),
      rule("other", 30, { app: "b" }, { exitCode: 9 }),
    ];
    expect(resolvePodScript(rules, { app: "a", extra: "y" }, {})).toEqual({
      exitCode: 2,
      runTime: "1s",
      logs: { init: "early", agent: "late" },
    });
    expect(resolvePodScript(rules, { app: "a" }, { "test.example/exit-code": "0" }).exitCode).toBe(0);
  });

  it("merges log files per container, a later rule's file winning", () => {
    const rules = [
      rule("early", 10, { app: "a" }, { logFiles: { agent: "/a.log", courier: "/c.log" } }),
      rule("late", 20, { app: "a" }, { logFiles: { agent: "/b.log" } }),
    ];
    expect(resolvePodScript(rules, { app: "a" }, {})).toEqual({
      logFiles: { agent: "/b.log", courier: "/c.log" },
    });
  });

  it("ignores rules whose labels are not all present", () => {
    const rules = [rule("r", 1, { app: "a", tier: "x" }, { exitCode: 4 })];
    expect(resolvePodScript(rules, { app: "a" }, {})).toEqual({});
  });
});

const NOW = new Date("2026-01-01T00:00:00.000Z");

describe("scripterPatch", () => {
  it.each([
    [
      "Job pod without outcome ends at once",
      {},
      true,
      {
        [SCRIPTED_ANNOTATION]: "true",
        [FINISH_ANNOTATION]: "true",
        [FINISH_AT_ANNOTATION]: "2026-01-01T00:00:00.000Z",
      },
    ],
    [
      "Job pod with a run time ends that long after being scripted",
      { runTime: "1m30.5s" },
      true,
      {
        [SCRIPTED_ANNOTATION]: "true",
        [FINISH_ANNOTATION]: "true",
        [FINISH_AT_ANNOTATION]: "2026-01-01T00:01:30.500Z",
        "test.example/run-time": "1m30.5s",
      },
    ],
    ["bare pod without outcome keeps running", {}, false, { [SCRIPTED_ANNOTATION]: "true" }],
    [
      "bare pod with an exit code ends",
      { exitCode: 1 },
      false,
      {
        [SCRIPTED_ANNOTATION]: "true",
        [FINISH_ANNOTATION]: "true",
        [FINISH_AT_ANNOTATION]: "2026-01-01T00:00:00.000Z",
        "test.example/exit-code": "1",
      },
    ],
  ])("%s", (_name, script, ownedByJob, expected) => {
    expect(scripterPatch(script, {}, ownedByJob, NOW)).toEqual(expected);
  });

  it("does not repeat annotations the pod already has and never copies logs", () => {
    const patch = scripterPatch(
      { exitCode: 1, logs: { agent: "x" } },
      { "test.example/exit-code": "1" },
      true,
      NOW,
    );
    expect(patch).toEqual({
      [SCRIPTED_ANNOTATION]: "true",
      [FINISH_ANNOTATION]: "true",
      [FINISH_AT_ANNOTATION]: "2026-01-01T00:00:00.000Z",
    });
  });
});

describe("renderCriLog", () => {
  const at = new Date("2026-01-02T03:04:05.678Z");
  it.each([
    ["", ""],
    ["one", "2026-01-02T03:04:05.678000000Z stdout F one\n"],
    ["a\nb\n", "2026-01-02T03:04:05.678000000Z stdout F a\n2026-01-02T03:04:05.678000000Z stdout F b\n"],
    [
      "a\n\nb",
      "2026-01-02T03:04:05.678000000Z stdout F a\n2026-01-02T03:04:05.678000000Z stdout F \n2026-01-02T03:04:05.678000000Z stdout F b\n",
    ],
  ])("renders %j", (text, expected) => {
    expect(renderCriLog(text, at)).toBe(expected);
  });
  it("renders an array as one entry per element", () => {
    expect(renderCriLog(['{"type":"x"}', "y"], at)).toBe(
      '2026-01-02T03:04:05.678000000Z stdout F {"type":"x"}\n2026-01-02T03:04:05.678000000Z stdout F y\n',
    );
  });
});

describe("goDurationMs", () => {
  it.each([
    ["0s", 0],
    ["1500ms", 1500],
    ["2s", 2000],
    ["1m30s", 90_000],
    ["1h", 3_600_000],
    ["250us", 0.25],
  ])("%s is %d ms", (text, ms) => {
    expect(goDurationMs(text)).toBe(ms);
  });
  it("rejects text that is not a Go duration", () => {
    expect(() => goDurationMs("5")).toThrow('not a Go duration: "5"');
  });
});
