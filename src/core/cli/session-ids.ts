/**
 * The shape of a session id each resumable CLI accepts (docs/agent-clis.md): claude, codex and
 * gemini all name sessions by UUID. An id reaches an argv position that a CLI's option parser
 * reads (`--resume <id>`, `codex exec resume <id>`), so anything else, `--yolo` above all, is
 * refused before it gets there: at Pending for `spec.resumeSession`, in the supervisor for
 * AGENT_RESUME_SESSION and for the ids the CLIs announce.
 */
import type { Vendor } from "./routing.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Why `id` cannot be one of `vendor`'s session ids, or undefined when it can. */
export function sessionIdProblem(vendor: Vendor, id: string): string | undefined {
  switch (vendor) {
    case "claude":
    case "codex":
    case "gemini":
      return UUID.test(id) ? undefined : `is not a ${vendor} session id (a UUID)`;
    case "opencode":
    case "exec":
      return `${vendor} has no sessions to resume`;
  }
}

/** An id as it may appear in a message: JSON-quoted (control characters escaped), at most 80 characters. */
export function quotedId(id: string): string {
  return JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id);
}
