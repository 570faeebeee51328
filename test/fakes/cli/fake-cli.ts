/**
 * Fake `claude`, `codex`, `gemini` and `opencode` executables for run pods on the harness's pod
 * runner: one program, dispatched on the name it is called by, printing the CLI's own NDJSON for
 * the argv it gets (the lines docs/agent-clis.md records for each CLI; opencode's `run --format
 * json` shape follows opencode's event names). What it answers is scripted per test
 * through `FAKE_CLI_SCRIPT` (JSON, see FakeCliScript) on the agent container; every invocation is
 * journalled (argv, full environment, cwd) as one JSON line to the file named by `FAKE_CLI_JOURNAL`.
 *
 * Self-contained (node: imports only): install.ts compiles this file alone to CommonJS and places
 * it in the image bin dir the runner mounts over /usr/local/bin.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";

export type CliName = "claude" | "codex" | "gemini" | "opencode";
export const CLI_NAMES: readonly CliName[] = ["claude", "codex", "gemini", "opencode"];

/** What the fake does, from FAKE_CLI_SCRIPT. Every field is optional. */
export interface FakeCliScript {
  /** The answer text (default `Done.`). */
  answer?: string;
  /** Answer with the contents of this file (relative to the working directory) instead; "(missing)" if absent. */
  answerFromFile?: string;
  /** Exit code after the output (default 0). */
  exitCode?: number;
  /** Milliseconds to wait before printing the answer and terminal line (default 0). */
  durationMs?: number;
  /**
   * After the session line, allocate and touch memory 16 MiB at a time until killed (a container's
   * memory limit, enforced by the kernel's OOM killer on a real node).
   */
  hogMemory?: boolean;
  /**
   * Before answering, leave five short-lived orphans (double-forked `sleep 0.2`) and answer, 1 s
   * later, with how many zombies the process namespace holds: `zombies: <n>`. Whoever is PID 1
   * (the pod's reaper) must have reaped them.
   */
  countZombies?: boolean;
  /** Session id when the argv does not name one (default: a random UUID). */
  sessionId?: string;
  /** Files written before answering, paths relative to the working directory. */
  files?: Record<string, string>;
  /** Lines written to stderr. */
  stderr?: string[];
  /** Print the terminal line (`result` / `turn.completed`); default true. */
  terminal?: boolean;
  /** The run fails: claude `is_error: true`, codex `turn.failed`, gemini `status: "error"`. */
  fail?: boolean;
  /** Keep running on SIGTERM (the supervisor then has to SIGKILL). */
  ignoreSigterm?: boolean;
  /**
   * Gates: a run whose prompt contains `[gate <name>]` waits, before printing anything, until the
   * gate is open (polled every 50 ms): the file `<gates>/<name>` exists, or, when `gates` is an
   * http URL (a run pod on the real node sees no host file), `GET <gates>/<name>` answers 200. A test
   * opens a gate to let that turn end, so what piles up meanwhile never depends on speed.
   */
  gates?: string;
  /**
   * Keep a conversation as the real CLIs do, in the vendor's state directory under $HOME (see
   * TRANSCRIPT_DIRS; what a conversation save archives and a restore brings back): each run
   * appends its prompt to `<dir>/<session>.ndjson`; a run that resumes a session (claude
   * `--resume`, codex `exec resume`, gemini `--resume`) first reads that session's prompts and
   * fails like the real CLI (exit 1) when there is no such session.
   */
  transcript?: boolean;
}

/**
 * Where `transcript` keeps a session, under $HOME: inside each vendor's conversation state
 * directory (docs/templating-and-routing.md#what-each-vendor-can-do); opencode keeps none that is saved.
 */
export const TRANSCRIPT_DIRS: Readonly<Record<CliName, string>> = {
  claude: ".claude/projects/fake-cli",
  codex: ".codex/sessions/fake-cli",
  gemini: ".gemini/fake-cli",
  opencode: ".local/share/opencode/fake-cli",
};

/** The gate a prompt names with `[gate <name>]`, if any. */
export function gateOf(prompt: string): string | undefined {
  return /\[gate ([A-Za-z0-9_.-]+)\]/.exec(prompt)?.[1];
}

/**
 * The scripted answer with `{prompt}` replaced by this run's prompt and `{transcript}` by the
 * session's earlier prompts (joined by " | ", empty when there are none or no transcript is kept).
 */
export function answerText(template: string, prompt: string, earlier: readonly string[]): string {
  return template.replaceAll("{prompt}", prompt).replaceAll("{transcript}", earlier.join(" | "));
}

export interface Invocation {
  cli: CliName;
  prompt: string;
  model: string;
  /** The session/thread id the run reports. */
  sessionId: string;
  /** The session this run continues (claude `--resume`, also when forking; codex `exec resume`; gemini `--resume`). */
  resumedFrom?: string;
  /** A usage error the real CLI would print before doing anything (exit 1). */
  usageError?: string;
}

/** The value of `flag` given as `flag value` or `flag=value` (the real CLIs take both). */
function flagValue(argv: readonly string[], flag: string): string | undefined {
  for (const [i, arg] of argv.entries()) {
    if (arg === flag) return argv[i + 1];
    if (arg.startsWith(`${flag}=`)) return arg.slice(flag.length + 1);
  }
  return undefined;
}

/** Reads what the real CLI would take from this argv (docs/agent-clis.md#compatibility). */
export function parseInvocation(cli: CliName, argv: readonly string[], fallbackSession: string): Invocation {
  const dashdash = argv.indexOf("--");
  const afterDashDash = dashdash >= 0 ? (argv[dashdash + 1] ?? "") : undefined;
  const model = flagValue(argv, "--model") ?? "";
  switch (cli) {
    case "claude": {
      const pin = flagValue(argv, "--session-id");
      const resume = flagValue(argv, "--resume");
      const fork = argv.includes("--fork-session");
      const sessionId = pin ?? (resume && !fork ? resume : fallbackSession);
      const usageError =
        argv.includes("--print") &&
        flagValue(argv, "--output-format") === "stream-json" &&
        !argv.includes("--verbose")
          ? "Error: When using --print, --output-format=stream-json requires --verbose"
          : undefined;
      return {
        cli,
        prompt: afterDashDash ?? argv.at(-1) ?? "",
        model,
        sessionId,
        ...(resume ? { resumedFrom: resume } : {}),
        ...(usageError ? { usageError } : {}),
      };
    }
    case "codex": {
      const resume = argv[0] === "exec" && argv[1] === "resume" ? argv[2] : undefined;
      return {
        cli,
        prompt: afterDashDash ?? argv.at(-1) ?? "",
        model,
        sessionId: resume ?? fallbackSession,
        ...(resume ? { resumedFrom: resume } : {}),
        ...(argv[0] !== "exec" ? { usageError: "error: the fake codex only supports `codex exec`" } : {}),
      };
    }
    case "gemini": {
      const promptArg = argv.find((a) => a.startsWith("--prompt="));
      const resume = flagValue(argv, "--resume");
      return {
        cli,
        prompt: promptArg ? promptArg.slice("--prompt=".length) : (flagValue(argv, "--prompt") ?? ""),
        model,
        sessionId: resume ?? fallbackSession,
        ...(resume ? { resumedFrom: resume } : {}),
      };
    }
    case "opencode":
      return {
        cli,
        prompt: afterDashDash ?? argv.at(-1) ?? "",
        model,
        sessionId: fallbackSession.startsWith("ses_")
          ? fallbackSession
          : `ses_${fallbackSession.replace(/-/g, "")}`,
        ...(argv[0] !== "run" ? { usageError: "error: the fake opencode only supports `opencode run`" } : {}),
      };
  }
}

/** The NDJSON lines the CLI prints for `inv` (without the trailing newlines). */
export function outputLines(inv: Invocation, script: FakeCliScript, now: Date, durationMs: number): string[] {
  const answer = script.answer ?? "Done.";
  const terminal = script.terminal !== false;
  const fail = script.fail === true;
  const ts = now.toISOString();
  const lines: unknown[] = [];
  switch (inv.cli) {
    case "claude": {
      const model = inv.model || "claude-sonnet-4-6";
      lines.push({
        type: "system",
        subtype: "init",
        cwd: process.cwd(),
        session_id: inv.sessionId,
        tools: ["Task", "Bash", "Read", "Edit"],
        mcp_servers: [],
        model,
        permissionMode: "default",
        slash_commands: [],
        apiKeySource: "none",
        claude_code_version: "2.1.292",
        output_style: "default",
        uuid: randomUUID(),
      });
      lines.push({
        type: "assistant",
        message: {
          id: `msg_${randomUUID().replace(/-/g, "").slice(0, 24)}`,
          type: "message",
          role: "assistant",
          model,
          content: [{ type: "text", text: answer }],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: 4,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: 7,
          },
        },
        parent_tool_use_id: null,
        session_id: inv.sessionId,
        uuid: randomUUID(),
      });
      if (terminal) {
        lines.push({
          type: "result",
          subtype: "success",
          is_error: fail,
          duration_ms: durationMs,
          duration_api_ms: durationMs,
          num_turns: 1,
          result: answer,
          stop_reason: "end_turn",
          session_id: inv.sessionId,
          total_cost_usd: 0.0106,
          usage: {
            input_tokens: 4,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: 7,
          },
          modelUsage: {
            [model]: {
              inputTokens: 4,
              outputTokens: 7,
              cacheReadInputTokens: 0,
              cacheCreationInputTokens: 0,
              webSearchRequests: 0,
              costUSD: 0.0106,
              contextWindow: 200000,
              maxOutputTokens: 64000,
            },
          },
          permission_denials: [],
          uuid: randomUUID(),
          terminal_reason: "completed",
        });
      }
      break;
    }
    case "codex": {
      lines.push({ type: "thread.started", thread_id: inv.sessionId });
      lines.push({ type: "turn.started" });
      if (fail) {
        lines.push({ type: "error", message: answer });
        if (terminal) lines.push({ type: "turn.failed", error: { message: answer } });
      } else {
        lines.push({ type: "item.completed", item: { id: "item_0", type: "agent_message", text: answer } });
        if (terminal) {
          lines.push({
            type: "turn.completed",
            usage: { input_tokens: 24, cached_input_tokens: 0, output_tokens: 12 },
          });
        }
      }
      break;
    }
    case "gemini": {
      const model = inv.model || "gemini-2.5-pro";
      lines.push({ type: "init", timestamp: ts, session_id: inv.sessionId, model });
      lines.push({ type: "message", timestamp: ts, role: "user", content: inv.prompt });
      lines.push({ type: "message", timestamp: ts, role: "assistant", content: answer, delta: true });
      const stats = {
        total_tokens: 61,
        input_tokens: 48,
        output_tokens: 13,
        cached: 0,
        input: 48,
        duration_ms: durationMs,
        tool_calls: 0,
        models: { [model]: { total_tokens: 61, input_tokens: 48, output_tokens: 13, cached: 0, input: 48 } },
      };
      if (terminal) {
        lines.push(
          fail
            ? {
                type: "result",
                timestamp: ts,
                status: "error",
                error: { type: "FatalToolExecutionError", message: answer },
                stats: { ...stats, duration_ms: 0 },
              }
            : { type: "result", timestamp: ts, status: "success", stats },
        );
      }
      break;
    }
    case "opencode": {
      const at = now.getTime();
      const messageID = `msg_${randomUUID().replace(/-/g, "").slice(0, 24)}`;
      const part = (type: string, extra: Record<string, unknown>) => ({
        id: `prt_${randomUUID().replace(/-/g, "").slice(0, 24)}`,
        sessionID: inv.sessionId,
        messageID,
        type,
        ...extra,
      });
      lines.push({
        type: "step_start",
        timestamp: at,
        sessionID: inv.sessionId,
        part: part("step-start", {}),
      });
      lines.push({
        type: "text",
        timestamp: at,
        sessionID: inv.sessionId,
        part: part("text", { text: answer, time: { start: at, end: at } }),
      });
      if (terminal) {
        lines.push({
          type: "step_finish",
          timestamp: at,
          sessionID: inv.sessionId,
          part: part("step-finish", {
            reason: fail ? "error" : "stop",
            cost: 0,
            tokens: { input: 48, output: 13, reasoning: 0, cache: { read: 0, write: 0 } },
          }),
        });
      }
      break;
    }
  }
  return lines.map((l) => JSON.stringify(l));
}

/** FAKE_CLI_SCRIPT, or an error naming what is wrong with it. */
export function parseScript(raw: string | undefined): FakeCliScript {
  if (raw === undefined || raw.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw new Error(`FAKE_CLI_SCRIPT is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error("FAKE_CLI_SCRIPT must be a JSON object");
  }
  return value as FakeCliScript;
}

/** FakeCliScript.countZombies: orphans, a second, then the zombies among /proc's processes. */
const ZOMBIE_COUNT = `for i in 1 2 3 4 5; do (sleep 0.2 &); done; sleep 1
z=0; for s in /proc/[0-9]*/stat; do st=$(cut -d')' -f2 "$s" 2>/dev/null | cut -d' ' -f2); [ "$st" = Z ] && z=$((z+1)); done
echo "$z"`;

/** Entry point of the installed executables. */
export function main(): void {
  const name = basename(process.argv[1] ?? "");
  const cli = CLI_NAMES.find((c) => c === name);
  if (!cli) {
    process.stderr.write(
      `fake CLI: called as ${JSON.stringify(name)}; expected one of ${CLI_NAMES.join(", ")}\n`,
    );
    process.exit(2);
  }
  const argv = process.argv.slice(2);
  if (argv.length === 1 && argv[0] === "--version") {
    // What the supervisor asks a CLI it finds on PATH; not journaled (it is not a run).
    process.stdout.write(`0.0.0-fake (${cli} stand-in, test/fakes/cli)\n`);
    process.exit(0);
  }
  const journal = process.env.FAKE_CLI_JOURNAL;
  if (journal) {
    const entry = {
      cli,
      argv,
      env: { ...process.env },
      cwd: process.cwd(),
      uid: process.getuid?.(),
      time: new Date(),
    };
    const line = `${JSON.stringify(entry)}\n`;
    if (!/^https?:\/\//.test(journal)) appendFileSync(journal, line);
    else {
      // A run pod on the real node journals to the test's listener; the run starts once it is kept.
      fetch(journal, { method: "POST", body: line }).then(
        (res) => (res.ok ? proceed(cli, argv) : fail(`journal ${journal}: HTTP ${res.status}`)),
        (err: Error) => fail(`journal ${journal}: ${err.message}`),
      );
      return;
    }
  }
  proceed(cli, argv);
}

function fail(message: string): void {
  process.stderr.write(`fake CLI: ${message}\n`);
  process.exit(2);
}

/** The invocation after it was journalled. */
function proceed(cli: CliName, argv: string[]): void {
  let script: FakeCliScript;
  try {
    script = parseScript(process.env.FAKE_CLI_SCRIPT);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(2);
  }
  const inv = parseInvocation(cli, argv, script.sessionId ?? randomUUID());
  if (inv.usageError) {
    process.stderr.write(`${inv.usageError}\n`);
    process.exit(1);
  }
  if (script.ignoreSigterm) process.on("SIGTERM", () => process.stderr.write("fake CLI: ignoring SIGTERM\n"));
  const gate = script.gates !== undefined ? gateOf(inv.prompt) : undefined;
  if (gate === undefined) {
    run(cli, inv, script);
    return;
  }
  const gates = script.gates as string;
  const open = /^https?:\/\//.test(gates)
    ? () =>
        fetch(`${gates.replace(/\/$/, "")}/${encodeURIComponent(gate)}`).then(
          (res) => res.status === 200,
          () => false,
        )
    : () => Promise.resolve(existsSync(join(gates, gate)));
  const poll = async (): Promise<void> => {
    if (await open()) run(cli, inv, script);
    else setTimeout(poll, 50);
  };
  void poll();
}

/** What a run does once its gate (if any) is open. */
function run(cli: CliName, inv: Invocation, scripted: FakeCliScript): void {
  let script = scripted;
  if (script.countZombies) {
    const zombies = execFileSync("/bin/sh", ["-c", ZOMBIE_COUNT], { encoding: "utf8" }).trim();
    script = { ...script, answer: `zombies: ${zombies}` };
  }
  let earlier: string[] = [];
  if (script.transcript) {
    const dir = join(process.env.HOME || "/", TRANSCRIPT_DIRS[cli]);
    if (inv.resumedFrom !== undefined) {
      try {
        earlier = readFileSync(join(dir, `${inv.resumedFrom}.ndjson`), "utf8")
          .split("\n")
          .filter((l) => l !== "")
          .map((l) => JSON.parse(l) as string);
      } catch {
        process.stderr.write(
          cli === "claude"
            ? `No conversation found with session ID: ${inv.resumedFrom}\n`
            : `${cli}: no saved session ${inv.resumedFrom} under ${dir}\n`,
        );
        process.exit(1);
      }
    }
    mkdirSync(dir, { recursive: true });
    const own = join(dir, `${inv.sessionId}.ndjson`);
    // A fork (claude --resume A --session-id B) starts B with A's prompts.
    if (inv.resumedFrom !== undefined && inv.resumedFrom !== inv.sessionId) {
      writeFileSync(own, earlier.map((p) => `${JSON.stringify(p)}\n`).join(""));
    }
    appendFileSync(own, `${JSON.stringify(inv.prompt)}\n`);
  }
  if (script.answerFromFile !== undefined) {
    let content = "(missing)";
    try {
      content = readFileSync(resolve(process.cwd(), script.answerFromFile), "utf8");
    } catch {}
    script = { ...script, answer: content };
  } else if (script.answer !== undefined) {
    script = { ...script, answer: answerText(script.answer, inv.prompt, earlier) };
  }
  for (const line of script.stderr ?? []) process.stderr.write(`${line}\n`);
  for (const [path, content] of Object.entries(script.files ?? {})) {
    const target = resolve(process.cwd(), path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
  const started = Date.now();
  const lines = outputLines(inv, script, new Date(), script.durationMs ?? 0);
  // The session line comes at once, as from the real CLIs; the answer after the scripted duration.
  process.stdout.write(`${lines[0]}\n`);
  if (script.hogMemory) {
    const held: Buffer[] = [];
    setInterval(() => held.push(Buffer.alloc(16 * 1024 * 1024, 1)), 20);
    return;
  }
  const finish = () => {
    const rest = outputLines(inv, script, new Date(), Date.now() - started).slice(1);
    process.stdout.write(rest.map((l) => `${l}\n`).join(""), () => process.exit(script.exitCode ?? 0));
  };
  const duration = script.durationMs ?? 0;
  if (duration > 0) setTimeout(finish, duration);
  else finish();
}
