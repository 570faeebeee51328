export interface PromptApiLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** One JSON object per line on stderr, the controller's log format. */
export const jsonLogger: PromptApiLogger = {
  info: (message, fields) => writeLog("info", message, fields),
  warn: (message, fields) => writeLog("warn", message, fields),
  error: (message, fields) => writeLog("error", message, fields),
};

function writeLog(level: string, msg: string, fields?: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify({ level, msg, component: "prompt-api", ...fields })}\n`);
}
