/**
 * Every status message of the prompt API (the specification's wording, docs/prompt-api.md#status-codes). Black-box tests match these byte
 * for byte, so they live in one place and are pinned by tests. Note the straight apostrophe in
 * "the session's pod cannot be reached": the seed spells it that way.
 */

/** Largest request body the controller reads: 200 KiB (seed). One byte more is refused. */
export const MAX_REQUEST_BYTES = 200 * 1024;

/** Largest decoded prompt the supervisor accepts: 100 KiB (seed). Enforced in the pod, not here. */
export const MAX_PROMPT_BYTES = 102400;

/** The supervisor's waiting-prompt limit; the running turn does not count (seed). */
export const MAX_QUEUED_PROMPTS = 16;

/** Seconds a caller should wait after a 503 (seed). */
export const RETRY_AFTER_SECONDS = 2;

export const msg = {
  notFound: "not found",
  /** Wording derived from the seed's description of 401; the seed gives no literal. */
  unauthorized: "the bearer token is missing or wrong",
  /** Wording derived from the seed's description of 400; the seed gives no literal. */
  badBody: "the body is not JSON with a non-empty prompt string",
  wrongNamespace: (servedNamespace: string) => `this controller serves namespace ${servedNamespace}`,
  agentNotFound: (name: string) => `Agent ${name} not found`,
  notRunning: (name: string, phase: string) => `Agent ${name} is ${phase}, not a running session`,
  notRealtime: (name: string) => `Agent ${name} is not a realtime run`,
  sessionEnding: "the session is ending",
  bodyTooLarge: "request body too large",
  promptTooLarge: `prompt exceeds ${MAX_PROMPT_BYTES} bytes`,
  tooManyQueued: "too many queued prompts",
  notServing: "the session is not serving yet",
  unreachable: "the session's pod cannot be reached",
  /** docs/decisions.md D-46. */
  unexpectedAnswer: (status: number) => `unexpected answer from the session's supervisor (${status})`,
  internal: "internal error",
} as const;
