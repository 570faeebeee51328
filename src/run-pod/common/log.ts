/**
 * Diagnostics of a run-pod program: one JSON object per line on stderr, the same shape as the
 * controller's log (src/log.ts), written synchronously so the last lines before an exit survive.
 * stdout is never used for diagnostics: it is the run's record (status.output).
 */
import type { JsonLineLogger } from "../../log.js";
import { type LineWriter, stderrWriter } from "./emitter.js";

export function runPodLogger(component: string, write: LineWriter = stderrWriter): JsonLineLogger {
  const line = (level: string, msg: string, fields?: Record<string, unknown>) =>
    write(JSON.stringify({ level, msg, component, ...fields }));
  return {
    info: (message, fields) => line("info", message, fields),
    warn: (message, fields) => line("warn", message, fields),
    error: (message, fields) => line("error", message, fields),
  };
}
