/**
 * ai-agent-supervisor, the agent container's entrypoint (docs/supervisor.md, docs/supervisor.md#realtime-sessions):
 * `ai-agent-supervisor -- <argv…>`. It never exits the process itself; the run-pod dispatcher
 * (src/run-pod/main.ts) calls runSupervisor and exits with the code it returns.
 */
import type { Env } from "../common/run-env.js";
import { runInteractive } from "./interactive.js";
import { processIo, type SupervisorIo } from "./io.js";
import { runRealtime } from "./realtime.js";
import { type Execution, executionMode } from "./settings.js";

export const USAGE = "usage: ai-agent-supervisor -- <agent command> [<argument>...]";
export const USAGE_EXIT_CODE = 2;

/** A supervisor mode: what follows `--`, the environment, the process connections, the start time (epoch ms). */
export type SupervisorMode = (
  command: readonly string[],
  env: Env,
  io: SupervisorIo,
  startedAt: number,
) => Promise<number>;

const MODES: Readonly<Record<Execution, SupervisorMode>> = {
  interactive: runInteractive,
  realtime: runRealtime,
};

/** What follows the `--`, or what is wrong with the arguments. */
export function parseSupervisorArgs(argv: readonly string[]): { command: string[] } | { error: string } {
  const separator = argv.indexOf("--");
  if (separator < 0) return { error: "missing -- before the agent command" };
  if (separator > 0) return { error: `unexpected argument before --: ${JSON.stringify(argv[0])}` };
  return { command: argv.slice(separator + 1) };
}

/** argv: the process arguments after the program name; returns the exit code. */
export async function runSupervisor(argv: string[], env: Env): Promise<number> {
  // SIGPIPE must never kill the supervisor (a reader of its stdout went away); Node already
  // ignores it, the listener keeps it so whatever else is loaded.
  const ignore = () => {};
  process.on("SIGPIPE", ignore);
  try {
    return await runSupervisorWith(argv, env, processIo);
  } finally {
    process.off("SIGPIPE", ignore);
  }
}

export async function runSupervisorWith(
  argv: readonly string[],
  env: Env,
  io: SupervisorIo,
): Promise<number> {
  const startedAt = Date.now();
  const args = parseSupervisorArgs(argv);
  const mode = executionMode(env);
  if (typeof mode === "object") {
    io.stderr(
      `ai-agent-supervisor: AGENT_EXECUTION must be "interactive" or "realtime", got: "${mode.invalid}"`,
    );
    return USAGE_EXIT_CODE;
  }
  // A resumed realtime session has no initial prompt, so only interactive runs need a command.
  if ("error" in args || (mode === "interactive" && args.command.length === 0)) {
    io.stderr(`ai-agent-supervisor: ${"error" in args ? args.error : "no agent command after --"}`);
    io.stderr(USAGE);
    return USAGE_EXIT_CODE;
  }
  return MODES[mode](args.command, env, io, startedAt);
}
