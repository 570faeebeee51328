import { describe, expect, it } from "vitest";
import { dispatch, usage } from "./dispatch.js";

const PROGRAMS = ["init", "supervisor", "courier"] as const;

describe("dispatch", () => {
  // [case, argv0, argv, program, args]
  it.each([
    [
      "hard link, bare name",
      "ai-agent-init",
      ["/usr/local/bin/ai-agent-init", "ai-agent-init", "-x"],
      "init",
      ["-x"],
    ],
    [
      "hard link, path",
      "/agent/bin/ai-agent-supervisor",
      ["/agent/bin/ai-agent-supervisor", "/agent/bin/ai-agent-supervisor", "--", "claude", "-p"],
      "supervisor",
      ["--", "claude", "-p"],
    ],
    ["courier link", "ai-agent-courier", ["/x/ai-agent-courier", "ai-agent-courier"], "courier", []],
    [
      "explicit form",
      "ai-agent",
      ["/usr/local/bin/ai-agent", "ai-agent", "supervisor", "--", "true"],
      "supervisor",
      ["--", "true"],
    ],
    ["through node/tsx", "node", ["/usr/bin/node", "/work/src/run-pod/main.ts", "init", "a"], "init", ["a"]],
    ["through node, bundle", "node", ["/usr/bin/node", "dist/agent/ai-agent.cjs", "courier"], "courier", []],
    [
      "a program name as argument does not override the link's name",
      "ai-agent-init",
      ["/b/ai-agent-init", "ai-agent-init", "supervisor"],
      "init",
      ["supervisor"],
    ],
  ])("%s", (_case, argv0, argv, program, args) => {
    expect(dispatch(PROGRAMS, argv0, argv)).toEqual({ kind: "run", program, args });
  });

  it.each([
    [
      "unknown link name",
      "ai-agent-foo",
      ["/b/ai-agent-foo", "ai-agent-foo", "init"],
      'cannot tell the program from the name "ai-agent-foo"',
    ],
    [
      "another name",
      "/tmp/agent",
      ["/tmp/agent", "/tmp/agent"],
      'cannot tell the program from the name "agent"',
    ],
    ["explicit form without a program", "ai-agent", ["/b/ai-agent", "ai-agent"], "no program given"],
    [
      "explicit form, unknown program",
      "ai-agent",
      ["/b/ai-agent", "ai-agent", "deploy"],
      'unknown program "deploy"',
    ],
    [
      "through node, unknown program",
      "node",
      ["/usr/bin/node", "main.ts", "--help"],
      'unknown program "--help"',
    ],
  ])("usage: %s", (_case, argv0, argv, why) => {
    expect(dispatch(PROGRAMS, argv0, argv)).toEqual({ kind: "usage", message: usage(PROGRAMS, why) });
  });

  it("usage names the reason, the explicit form and each link", () => {
    expect(usage(["init", "supervisor"], "no program given")).toBe(
      [
        "ai-agent: no program given",
        "usage: ai-agent <init|supervisor> [args…]",
        "   or: invoke it as ai-agent-init | ai-agent-supervisor [args…]",
      ].join("\n"),
    );
  });

  it("does not run a program the executable was built without", () => {
    const result = dispatch(["init"], "ai-agent-courier", ["/b/ai-agent-courier", "ai-agent-courier"]);
    expect(result.kind).toBe("usage");
  });
});
