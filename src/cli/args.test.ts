import { describe, expect, it } from "vitest";
import { parseCommandLine, parseDuration } from "./args.js";

describe("parseCommandLine", () => {
  it.each([
    [
      "run with parameters, model and wait",
      ["run", "writer", "-p", "topic=GC", "--param", "audience=on-call", "--model", "gpt-5", "--wait"],
      {
        global: {},
        command: {
          name: "run",
          station: "writer",
          parameters: { topic: "GC", audience: "on-call" },
          model: "gpt-5",
          wait: true,
          follow: false,
        },
      },
    ],
    [
      "a parameter value keeps its own = signs",
      ["run", "s", "-p", "query=a=b"],
      {
        global: {},
        command: { name: "run", station: "s", parameters: { query: "a=b" }, wait: false, follow: false },
      },
    ],
    [
      "--follow implies waiting; --timeout is a duration",
      ["run", "s", "--follow", "--timeout", "1m30s"],
      {
        global: {},
        command: { name: "run", station: "s", parameters: {}, wait: true, follow: true, timeoutMs: 90_000 },
      },
    ],
    [
      "global flags before the subcommand",
      ["-n", "team-a", "--context", "prod", "--kubeconfig", "/tmp/kc", "status", "run-1"],
      {
        global: { namespace: "team-a", context: "prod", kubeconfig: "/tmp/kc" },
        command: { name: "status", agent: "run-1" },
      },
    ],
    [
      "global flags after the subcommand, = form",
      ["status", "--namespace=team-b", "-o", "yaml", "--station", "writer"],
      { global: { namespace: "team-b", output: "yaml" }, command: { name: "status", station: "writer" } },
    ],
    [
      "logs -f --raw",
      ["logs", "run-1", "-f", "--raw"],
      { global: {}, command: { name: "logs", agent: "run-1", follow: true, raw: true } },
    ],
    [
      "prompt with token and API URL",
      ["prompt", "run-1", "go on", "--token", "t0k", "--api-url", "http://127.0.0.1:8082"],
      {
        global: {},
        command: {
          name: "prompt",
          agent: "run-1",
          text: "go on",
          token: "t0k",
          apiUrl: "http://127.0.0.1:8082",
        },
      },
    ],
    ["close", ["close", "run-1"], { global: {}, command: { name: "close", agent: "run-1" } }],
    [
      "validate several -f, recursive",
      ["validate", "-f", "a.yaml", "--filename", "dir", "-R"],
      {
        global: {},
        command: { name: "validate", files: ["a.yaml", "dir"], recursive: true, schemaOnly: false },
      },
    ],
    ["completion zsh", ["completion", "zsh"], { global: {}, command: { name: "completion", shell: "zsh" } }],
    ["no arguments is help", [], { global: {}, command: { name: "help" } }],
    ["--help of a subcommand", ["logs", "--help"], { global: {}, command: { name: "help", topic: "logs" } }],
    [
      "__complete passes the words through",
      ["__complete", "logs", ""],
      { global: {}, command: { name: "__complete", words: ["logs", ""] } },
    ],
    [
      "__complete takes the cluster flags of the line, not from the word being completed",
      ["__complete", "status", "--kubeconfig", "/k", "-n", "team", "--context=dev", "--namespace"],
      {
        global: { kubeconfig: "/k", namespace: "team", context: "dev" },
        command: {
          name: "__complete",
          words: ["status", "--kubeconfig", "/k", "-n", "team", "--context=dev", "--namespace"],
        },
      },
    ],
    [
      "__complete: a flag whose value is being typed is not used",
      ["__complete", "logs", "-n", "te"],
      { global: {}, command: { name: "__complete", words: ["logs", "-n", "te"] } },
    ],
  ])("%s", (_name, argv, expected) => {
    expect(parseCommandLine(argv)).toEqual({ ok: true, ...expected });
  });

  it.each([
    ["unknown command", ["launch"], 'unknown command "launch" for "kubectl agent"'],
    ["run without a Station", ["run"], "run needs STATION"],
    ["run with two positionals", ["run", "a", "b"], 'run takes STATION; unexpected "b"'],
    ["a parameter without =", ["run", "s", "-p", "topic"], '-p "topic" is not key=value'],
    ["an empty parameter key", ["run", "s", "-p", "=x"], '-p "=x" is not key=value'],
    [
      "a bad duration",
      ["run", "s", "--wait", "--timeout", "10"],
      '--timeout "10" is not a duration such as 90s, 10m or 1h',
    ],
    ["--timeout without waiting", ["run", "s", "--timeout", "10s"], "--timeout needs --wait or --follow"],
    ["an unknown flag", ["logs", "a", "--tail", "5"], "Unknown option '--tail'"],
    ["a flag of another subcommand", ["status", "--raw"], "Unknown option '--raw'"],
    [
      "an output format the command cannot print",
      ["prompt", "a", "t", "-o", "name"],
      'unable to match a printer suitable for the output format "name", allowed formats are: json,yaml',
    ],
    [
      "-o where nothing is printed as objects",
      ["logs", "a", "-o", "json"],
      "logs does not support -o/--output",
    ],
    ["prompt without TEXT", ["prompt", "a"], "prompt needs AGENT and TEXT"],
    [
      "status with AGENT and --station",
      ["status", "a", "--station", "s"],
      "status takes either AGENT or --station, not both",
    ],
    ["validate without -f", ["validate"], "validate needs at least one -f FILE|DIR"],
    [
      "validate with a bare path",
      ["validate", "x.yaml"],
      'validate takes files with -f; unexpected "x.yaml"',
    ],
    ["completion for fish", ["completion", "fish"], 'completion supports bash and zsh, not "fish"'],
    ["an empty namespace", ["status", "-n", ""], "--namespace must not be empty"],
  ])("refuses %s", (_name, argv, error) => {
    const parsed = parseCommandLine(argv);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toBe(error);
  });
});

describe("parseDuration", () => {
  it.each([
    ["500ms", 500],
    ["90s", 90_000],
    ["10m", 600_000],
    ["1h30m", 5_400_000],
    ["1.5s", 1500],
  ])("%s is %d ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
  it.each(["", "10", "5 m", "1d", "m5"])("%j is not a duration", (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});
