/**
 * Typed errors of the prompt API (docs/prompt-api.md, "Status codes"): one class per documented
 * status, each carrying the server's `error` message, so a caller can `catch` by class instead of
 * comparing numbers. Also the error a client-side validation failure throws.
 */
import type { ValidationIssue } from "../validation/index.js";

/** Any non-202 answer of the prompt API. `message` is the server's `error` text when it sent one. */
export class PromptApiError extends Error {
  constructor(
    readonly status: number,
    /** The server's `{"error": …}` message, or a description of the unexpected answer. */
    readonly serverMessage: string,
    /** What was asked, e.g. `POST /v1/namespaces/ns/agents/a/prompt`. */
    readonly request: string,
  ) {
    super(`${request}: ${status} ${serverMessage}`);
    this.name = new.target.name;
  }
}

/** 400: the body is not JSON with a non-empty prompt string. */
export class PromptBadRequestError extends PromptApiError {}
/** 401: the bearer token is missing or wrong. */
export class PromptUnauthorizedError extends PromptApiError {}
/** 404: wrong namespace, no such Agent, or not one of the two routes. */
export class PromptNotFoundError extends PromptApiError {}
/** 409: the Agent is not a running realtime session, or the session is ending. */
export class PromptConflictError extends PromptApiError {}
/** 413: the request body or the decoded prompt is too large. */
export class PromptTooLargeError extends PromptApiError {}
/** 429: 16 prompts are already waiting. */
export class PromptQueueFullError extends PromptApiError {}
/** 502: the session's supervisor answered something unexpected. */
export class PromptBadGatewayError extends PromptApiError {}
/** 503: the session is not serving (yet), or its pod cannot be reached; retried before it is thrown. */
export class PromptUnavailableError extends PromptApiError {
  constructor(
    status: number,
    serverMessage: string,
    request: string,
    /** The server's Retry-After in ms, when it sent one. */
    readonly retryAfterMs: number | undefined,
    /** How many requests were made in all, the first one included. */
    readonly attempts: number,
  ) {
    super(status, serverMessage, request);
  }
}

type PlainErrorClass = new (status: number, serverMessage: string, request: string) => PromptApiError;

const BY_STATUS: Readonly<Record<number, PlainErrorClass>> = {
  400: PromptBadRequestError,
  401: PromptUnauthorizedError,
  404: PromptNotFoundError,
  409: PromptConflictError,
  413: PromptTooLargeError,
  429: PromptQueueFullError,
  502: PromptBadGatewayError,
};

/** The typed error for a non-503 status; PromptApiError itself for undocumented ones (e.g. 500). */
export function promptApiError(status: number, serverMessage: string, request: string): PromptApiError {
  const Class = BY_STATUS[status] ?? PromptApiError;
  return new Class(status, serverMessage, request);
}

/** An object refused by the ajv validators before anything was sent; `issues` name each field. */
export class AgentValidationError extends Error {
  constructor(
    readonly kind: string,
    readonly issues: readonly ValidationIssue[],
  ) {
    super(`invalid ${kind}, nothing was sent:\n${issues.map((i) => `  ${i.message}`).join("\n")}`);
    this.name = "AgentValidationError";
  }
}

/** waitForTerminal gave up: the timeout passed or the signal aborted. */
export class WaitTimeoutError extends Error {
  constructor(
    readonly agent: string,
    readonly lastPhase: string,
    readonly timeoutMs: number | undefined,
  ) {
    super(
      timeoutMs === undefined
        ? `stopped waiting for Agent ${agent} (last phase ${lastPhase})`
        : `Agent ${agent} is still ${lastPhase} after ${timeoutMs} ms`,
    );
    this.name = "WaitTimeoutError";
  }
}
