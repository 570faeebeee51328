export { createPromptApi, DEFAULT_FORWARD_TIMEOUT_MS, type PromptApiDeps } from "./app.js";
export { type Forward, type ForwardRequest, type ForwardResponse, undiciForward } from "./forward.js";
export { jsonLogger, type PromptApiLogger } from "./logger.js";
export {
  MAX_PROMPT_BYTES,
  MAX_QUEUED_PROMPTS,
  MAX_REQUEST_BYTES,
  msg,
  RETRY_AFTER_SECONDS,
} from "./messages.js";
export { runToken, sha256Hex } from "./run-token.js";
export { DEFAULT_PROMPT_API_PORT, type PromptApiServer, startPromptApiServer } from "./server.js";
export {
  type PromptApiAgent,
  type RunPodState,
  runPodStateFrom,
  SUPERVISOR_PORT,
  supervisorBaseUrl,
} from "./session.js";
