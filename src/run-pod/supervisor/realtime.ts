/**
 * Realtime sessions (runtime.md §10: the prompt server on 8090, one CLI process per turn, turn
 * events) are not built yet. This is the seam main.ts dispatches AGENT_EXECUTION=realtime to; the
 * realtime supervisor replaces this body, reusing runChild (child-run.ts) per turn, the vendor
 * adapter (core/vendors.ts) for terminal lines and session ids, and the interactive run's file
 * events, conversation save and exit-code file.
 */
import type { Env } from "../common/run-env.js";
import type { SupervisorIo } from "./io.js";

/** `initialPrompt` is what follows `--` (empty for a resumed session, OQ-41). */
export async function runRealtime(
  _initialPrompt: readonly string[],
  _env: Env,
  io: SupervisorIo,
  _startedAt: number,
): Promise<number> {
  io.stderr(
    "ai-agent-supervisor: AGENT_EXECUTION=realtime: realtime sessions are not implemented in this build",
  );
  return 2;
}
