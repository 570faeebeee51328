/** Shared fixtures for the prompt API tests (not part of the controller build's API). */
import type { PromptApiLogger } from "../../src/prompt-api/logger.js";
import type { PromptApiAgent } from "../../src/prompt-api/session.js";

export const NS = "ai-agents";
export const API_TOKEN = "caller-api-token";
export const SIGNING_KEY = "s3cr3t-signing-key";
export const UID = "3f6b2a4e-8c1d-4e5f-9a7b-0c2d4e6f8a1b";
/** runToken(SIGNING_KEY, UID), computed with openssl (see run-token.test.ts). */
export const RUN_TOKEN = "e3dff239c339aa0e1c6c7c4a402ce4679185beda19d6f53e8c7c61d092df6fa1";
export const RUN_TOKEN_SHA256 = "e8c31f6bf3172e91f38c5a6e5b6399f3cc22bd890a4cf4fca0444b6bf44757c9";

export function runningAgent(name: string, status: PromptApiAgent["status"] = {}): PromptApiAgent {
  return {
    metadata: { name, namespace: NS, uid: UID, resourceVersion: "1" },
    status: { phase: "Running", jobName: `${name}-job`, ...status },
  };
}

export interface LogLine {
  level: "info" | "warn" | "error";
  message: string;
  fields?: Record<string, unknown>;
}

export function memoryLogger(): PromptApiLogger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (message, fields) => lines.push({ level: "info", message, fields }),
    warn: (message, fields) => lines.push({ level: "warn", message, fields }),
    error: (message, fields) => lines.push({ level: "error", message, fields }),
  };
}
