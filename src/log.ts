/** The structured logger the controller's components share: one JSON object per line on stderr. */
export interface JsonLineLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A logger whose lines carry `component`, so one controller log can be filtered by part. */
export function jsonLineLogger(component: string): JsonLineLogger {
  const write = (level: string, msg: string, fields?: Record<string, unknown>) =>
    process.stderr.write(`${JSON.stringify({ level, msg, component, ...fields })}\n`);
  return {
    info: (message, fields) => write("info", message, fields),
    warn: (message, fields) => write("warn", message, fields),
    error: (message, fields) => write("error", message, fields),
  };
}
