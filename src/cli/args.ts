/**
 * `kubectl agent` argument parsing (pure): kubectl's global flags (-n/--namespace, --context,
 * --kubeconfig, -o/--output) may stand before or after the subcommand; each subcommand parses its
 * own flags strictly with node:util parseArgs, so a misspelt flag is an error, not a silent no-op.
 */
import { parseArgs } from "node:util";

export type OutputFormat = "json" | "yaml" | "name";

export interface GlobalFlags {
  namespace?: string;
  context?: string;
  kubeconfig?: string;
  output?: OutputFormat;
}

export interface PromptApiFlags {
  token?: string;
  apiUrl?: string;
}

export type Command =
  | {
      name: "run";
      station: string;
      parameters: Record<string, string>;
      model?: string;
      wait: boolean;
      follow: boolean;
      timeoutMs?: number;
    }
  | { name: "logs"; agent: string; follow: boolean; raw: boolean }
  | ({ name: "prompt"; agent: string; text: string } & PromptApiFlags)
  | ({ name: "close"; agent: string } & PromptApiFlags)
  | { name: "status"; agent?: string; station?: string }
  | { name: "validate"; files: string[]; recursive: boolean; schemaOnly: boolean }
  | { name: "completion"; shell: "bash" | "zsh" }
  | { name: "__complete"; words: string[] }
  | { name: "help"; topic?: string };

export type Parsed =
  | { ok: true; global: GlobalFlags; command: Command }
  | { ok: false; error: string; topic?: string };

type OptionSpec = { type: "string" | "boolean"; short?: string; multiple?: boolean };

const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  namespace: { type: "string", short: "n" },
  context: { type: "string" },
  kubeconfig: { type: "string" },
  output: { type: "string", short: "o" },
  help: { type: "boolean", short: "h" },
};

const PROMPT_API_OPTIONS: Record<string, OptionSpec> = {
  token: { type: "string" },
  "api-url": { type: "string" },
};

/** Each subcommand's own flags, and which -o formats it prints. */
export const COMMANDS: Readonly<
  Record<
    string,
    { options: Record<string, OptionSpec>; outputs: OutputFormat[]; summary: string; usage: string }
  >
> = {
  run: {
    options: {
      param: { type: "string", short: "p", multiple: true },
      model: { type: "string" },
      wait: { type: "boolean" },
      follow: { type: "boolean" },
      timeout: { type: "string" },
    },
    outputs: ["json", "yaml", "name"],
    summary: "Create an Agent on a Station and print its name",
    usage: "run STATION [-p key=value]... [--model M] [--wait] [--follow] [--timeout 10m]",
  },
  logs: {
    options: { follow: { type: "boolean", short: "f" }, raw: { type: "boolean" } },
    outputs: [],
    summary: "Print an Agent's output, rendered per vendor (--raw: the NDJSON as is)",
    usage: "logs AGENT [-f] [--raw]",
  },
  prompt: {
    options: PROMPT_API_OPTIONS,
    outputs: ["json", "yaml"],
    summary: "Send a prompt to a realtime session (TEXT - reads stdin)",
    usage: "prompt AGENT TEXT [--token T] [--api-url URL]",
  },
  close: {
    options: PROMPT_API_OPTIONS,
    outputs: ["json", "yaml"],
    summary: "Close a realtime session once its queued prompts ran",
    usage: "close AGENT [--token T] [--api-url URL]",
  },
  status: {
    options: { station: { type: "string" } },
    outputs: ["json", "yaml", "name"],
    summary: "Show one Agent, or a table of the namespace's (or a Station's) runs",
    usage: "status [AGENT] [--station S]",
  },
  validate: {
    options: {
      filename: { type: "string", short: "f", multiple: true },
      recursive: { type: "boolean", short: "R" },
      "schema-only": { type: "boolean" },
    },
    outputs: [],
    summary: "Validate Agent, Station and AgentDefinition manifests offline",
    usage: "validate -f FILE|DIR [-f ...] [-R] [--schema-only]",
  },
  completion: {
    options: {},
    outputs: [],
    summary: "Print a shell completion script (bash or zsh)",
    usage: "completion bash|zsh",
  },
};

/** Flags taking a value, as they may appear before the subcommand. */
const GLOBAL_VALUE_FLAGS = new Set(["-n", "--namespace", "--context", "--kubeconfig", "-o", "--output"]);

/** Index of the subcommand word: the first positional, skipping global flags and their values. */
function subcommandIndex(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--") return -1;
    if (GLOBAL_VALUE_FLAGS.has(a)) {
      i++;
      continue;
    }
    if (!a.startsWith("-")) return i;
  }
  return -1;
}

/** A Go-style duration: `90s`, `10m`, `1h30m`, `500ms`. */
export function parseDuration(text: string): number | undefined {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let match = re.exec(text); match; match = re.exec(text)) {
    total += Number(match[1]) * (units[match[2] as string] as number);
    consumed = re.lastIndex;
  }
  return consumed === text.length && text.length > 0 ? Math.round(total) : undefined;
}

function parameterMap(values: readonly string[]): Record<string, string> | string {
  const out: Record<string, string> = {};
  for (const v of values) {
    const eq = v.indexOf("=");
    if (eq <= 0) return `-p ${JSON.stringify(v)} is not key=value`;
    out[v.slice(0, eq)] = v.slice(eq + 1);
  }
  return out;
}

/**
 * The kubeconfig, context and namespace a command line being completed names (`--flag value` or
 * `--flag=value`), so `kubectl agent status -n team <TAB>` lists that namespace's Agents, as
 * kubectl's own completion does. `words` excludes the word being completed. Never fails.
 */
export function completionGlobals(words: readonly string[]): GlobalFlags {
  const names: Record<string, "namespace" | "context" | "kubeconfig"> = {
    "-n": "namespace",
    "--namespace": "namespace",
    "--context": "context",
    "--kubeconfig": "kubeconfig",
  };
  const out: GlobalFlags = {};
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string;
    const eq = w.indexOf("=");
    const key = names[eq > 0 ? w.slice(0, eq) : w];
    if (key === undefined) continue;
    const value = eq > 0 ? w.slice(eq + 1) : words[++i];
    if (value) out[key] = value;
  }
  return out;
}

const fail = (error: string, topic?: string): Parsed => ({ ok: false, error, ...(topic ? { topic } : {}) });

export function parseCommandLine(argv: readonly string[]): Parsed {
  const at = subcommandIndex(argv);
  const word = at >= 0 ? (argv[at] as string) : undefined;
  if (word === "__complete") {
    const words = argv.slice(at + 1);
    return {
      ok: true,
      global: completionGlobals([...argv.slice(0, at), ...words.slice(0, -1)]),
      command: { name: "__complete", words },
    };
  }
  if (word === "help") {
    const topic = argv[at + 1];
    return { ok: true, global: {}, command: { name: "help", ...(topic ? { topic } : {}) } };
  }
  if (word !== undefined && !(word in COMMANDS)) {
    return fail(`unknown command "${word}" for "kubectl agent"`);
  }
  const spec = word === undefined ? undefined : COMMANDS[word];
  const rest = at >= 0 ? [...argv.slice(0, at), ...argv.slice(at + 1)] : [...argv];
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...GLOBAL_OPTIONS, ...(spec?.options ?? {}) },
      allowPositionals: true,
      strict: true,
    }) as { values: Record<string, unknown>; positionals: string[] };
  } catch (err) {
    return fail((err as Error).message.replace(/\. To specify a positional argument.*$/s, ""), word);
  }
  const { values: v, positionals: pos } = parsed;
  if (word === undefined || v.help === true) {
    return { ok: true, global: {}, command: { name: "help", ...(word ? { topic: word } : {}) } };
  }
  const global: GlobalFlags = {};
  for (const key of ["namespace", "context", "kubeconfig"] as const) {
    const value = v[key];
    if (typeof value === "string") {
      if (value === "") return fail(`--${key} must not be empty`, word);
      global[key] = value;
    }
  }
  if (typeof v.output === "string") {
    const allowed = (spec as { outputs: OutputFormat[] }).outputs;
    if (allowed.length === 0) return fail(`${word} does not support -o/--output`, word);
    if (!allowed.includes(v.output as OutputFormat)) {
      return fail(
        `unable to match a printer suitable for the output format "${v.output}", allowed formats are: ${allowed.join(",")}`,
        word,
      );
    }
    global.output = v.output as OutputFormat;
  }
  const str = (name: string) => (typeof v[name] === "string" ? (v[name] as string) : undefined);
  const flag = (name: string) => v[name] === true;
  const expect = (min: number, max: number, names: string): string | undefined => {
    if (pos.length < min) return `${word} needs ${names}`;
    if (pos.length > max) return `${word} takes ${names}; unexpected ${JSON.stringify(pos[max])}`;
    return undefined;
  };
  const promptApi = (): PromptApiFlags => ({
    ...(str("token") !== undefined ? { token: str("token") } : {}),
    ...(str("api-url") !== undefined ? { apiUrl: str("api-url") } : {}),
  });

  switch (word) {
    case "run": {
      const problem = expect(1, 1, "STATION");
      if (problem) return fail(problem, word);
      const parameters = parameterMap((v.param as string[] | undefined) ?? []);
      if (typeof parameters === "string") return fail(parameters, word);
      const timeout = str("timeout");
      const timeoutMs = timeout === undefined ? undefined : parseDuration(timeout);
      if (timeout !== undefined && timeoutMs === undefined) {
        return fail(`--timeout ${JSON.stringify(timeout)} is not a duration such as 90s, 10m or 1h`, word);
      }
      if (timeout !== undefined && !flag("wait") && !flag("follow")) {
        return fail("--timeout needs --wait or --follow", word);
      }
      return {
        ok: true,
        global,
        command: {
          name: "run",
          station: pos[0] as string,
          parameters,
          ...(str("model") !== undefined ? { model: str("model") } : {}),
          wait: flag("wait") || flag("follow"),
          follow: flag("follow"),
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        },
      };
    }
    case "logs": {
      const problem = expect(1, 1, "AGENT");
      if (problem) return fail(problem, word);
      return {
        ok: true,
        global,
        command: { name: "logs", agent: pos[0] as string, follow: flag("follow"), raw: flag("raw") },
      };
    }
    case "prompt": {
      const problem = expect(2, 2, "AGENT and TEXT");
      if (problem) return fail(problem, word);
      if (pos[1] === "") return fail("prompt TEXT must not be empty", word);
      return {
        ok: true,
        global,
        command: { name: "prompt", agent: pos[0] as string, text: pos[1] as string, ...promptApi() },
      };
    }
    case "close": {
      const problem = expect(1, 1, "AGENT");
      if (problem) return fail(problem, word);
      return { ok: true, global, command: { name: "close", agent: pos[0] as string, ...promptApi() } };
    }
    case "status": {
      const problem = expect(0, 1, "at most one AGENT");
      if (problem) return fail(problem, word);
      if (pos[0] !== undefined && str("station") !== undefined) {
        return fail("status takes either AGENT or --station, not both", word);
      }
      return {
        ok: true,
        global,
        command: {
          name: "status",
          ...(pos[0] !== undefined ? { agent: pos[0] } : {}),
          ...(str("station") !== undefined ? { station: str("station") } : {}),
        },
      };
    }
    case "validate": {
      const files = (v.filename as string[] | undefined) ?? [];
      if (pos.length > 0)
        return fail(`validate takes files with -f; unexpected ${JSON.stringify(pos[0])}`, word);
      if (files.length === 0) return fail("validate needs at least one -f FILE|DIR", word);
      return {
        ok: true,
        global,
        command: { name: "validate", files, recursive: flag("recursive"), schemaOnly: flag("schema-only") },
      };
    }
    case "completion": {
      const problem = expect(1, 1, "a shell (bash or zsh)");
      if (problem) return fail(problem, word);
      if (pos[0] !== "bash" && pos[0] !== "zsh") {
        return fail(`completion supports bash and zsh, not ${JSON.stringify(pos[0])}`, word);
      }
      return { ok: true, global, command: { name: "completion", shell: pos[0] } };
    }
    default:
      return fail(`unknown command "${word}" for "kubectl agent"`);
  }
}

export function usageText(topic?: string): string {
  const spec = topic === undefined ? undefined : COMMANDS[topic];
  const globalFlags = [
    "  -n, --namespace NS    namespace (default: the kubeconfig context's)",
    "      --context NAME    kubeconfig context to use",
    "      --kubeconfig FILE kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)",
    "  -o, --output FORMAT   json, yaml or name, where the command prints objects",
  ].join("\n");
  if (spec) {
    const flags = Object.entries(spec.options)
      .map(
        ([name, o]) =>
          `  ${o.short ? `-${o.short}, ` : "    "}--${name}${o.type === "string" ? " VALUE" : ""}`,
      )
      .join("\n");
    return `${spec.summary}.\n\nUsage:\n  kubectl agent ${spec.usage}\n${flags ? `\nFlags:\n${flags}\n` : ""}\nGlobal flags:\n${globalFlags}\n`;
  }
  const commands = Object.entries(COMMANDS)
    .map(([name, c]) => `  ${name.padEnd(11)} ${c.summary}`)
    .join("\n");
  return `Run and inspect AI coding agents (agents.re-cinq.com).\n\nUsage:\n  kubectl agent COMMAND [flags]\n\nCommands:\n${commands}\n\nGlobal flags:\n${globalFlags}\n\nUse "kubectl agent COMMAND --help" for a command's flags.\n`;
}
