import { type JsonLineLogger, jsonLineLogger } from "../log.js";

export type PromptApiLogger = JsonLineLogger;

/** One JSON object per line on stderr, the controller's log format. */
export const jsonLogger: PromptApiLogger = jsonLineLogger("prompt-api");
