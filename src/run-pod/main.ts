/**
 * Entry point of the run-pod executable (`npm run build:agent` makes it dist/agent/ai-agent, with
 * hard links ai-agent-init, ai-agent-supervisor, ai-agent-courier). Picks the program from the
 * invoked name or the first argument (dispatch.ts), runs it, and exits with its code.
 *
 * The exit is explicit because a program may leave handles open (a sink's keep-alive socket, a
 * timer); its returned code is the contract, not an empty event loop.
 */
import { exitAfterFlush } from "../process-exit.js";
import type { Env } from "./common/run-env.js";
import { runCourier } from "./courier/main.js";
import { dispatch } from "./dispatch.js";
import { runInit } from "./init/main.js";
import { runSupervisor } from "./supervisor/main.js";
import { runWitness } from "./witness/main.js";

type Program = (argv: string[], env: Env) => Promise<number>;

const PROGRAMS: Readonly<Record<"init" | "supervisor" | "courier" | "witness", Program>> = {
  init: runInit,
  supervisor: runSupervisor,
  courier: runCourier,
  witness: runWitness,
};

async function main(): Promise<number> {
  const choice = dispatch(Object.keys(PROGRAMS) as (keyof typeof PROGRAMS)[], process.argv0, process.argv);
  if (choice.kind === "usage") {
    process.stderr.write(`${choice.message}\n`);
    return 2;
  }
  return PROGRAMS[choice.program](choice.args, process.env);
}

main().then(exitAfterFlush, (err: unknown) => {
  process.stderr.write(
    `ai-agent: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  exitAfterFlush(1);
});
