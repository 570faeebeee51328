/**
 * Turns the supervisor's answer into the controller's answer (docs/decisions.md D-46). 202, 400, 409, 413 and 429
 * with a well-formed body pass through unchanged; a 503 means the supervisor is up but not taking
 * prompts yet, which the caller should retry like a pod that is not Ready; anything else — another
 * status, a body that is not the documented JSON — is the supervisor misbehaving: 502.
 */
import { msg } from "./messages.js";

export type SupervisorAction = "prompt" | "close";

export interface PromptAccepted {
  turn: number;
  queued: number;
  sessionId: string;
}

export interface CloseAccepted {
  queued: number;
}

export type Relayed =
  | { kind: "prompt-accepted"; status: 202; body: PromptAccepted }
  | { kind: "close-accepted"; status: 202; body: CloseAccepted }
  | { kind: "refused"; status: 400 | 409 | 413 | 429; body: { error: string } }
  | { kind: "not-serving"; status: 503; body: { error: string } }
  | { kind: "unexpected"; status: 502; body: { error: string }; detail: string };

const PASSED_THROUGH_ERRORS = new Set([400, 409, 413, 429]);

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const isCount = (v: unknown, min: number): v is number => Number.isSafeInteger(v) && (v as number) >= min;

export function relaySupervisorAnswer(action: SupervisorAction, status: number, text: string): Relayed {
  const unexpected = (detail: string): Relayed => ({
    kind: "unexpected",
    status: 502,
    body: { error: msg.unexpectedAnswer(status) },
    detail,
  });
  const body = parseObject(text);
  if (status === 202) {
    if (!body) return unexpected("202 body is not a JSON object");
    if (action === "prompt") {
      const { turn, queued, sessionId } = body;
      // Only the shape is checked, not the supervisor's arithmetic: the prompt is queued once the
      // supervisor said 202, and a 502 would invite the caller to send it twice. Turns count from 1.
      if (!isCount(turn, 1) || !isCount(queued, 0) || typeof sessionId !== "string") {
        return unexpected("202 body lacks turn, queued or sessionId");
      }
      return { kind: "prompt-accepted", status: 202, body: { turn, queued, sessionId } };
    }
    const { queued } = body;
    if (!isCount(queued, 0)) return unexpected("202 body lacks queued");
    return { kind: "close-accepted", status: 202, body: { queued } };
  }
  if (PASSED_THROUGH_ERRORS.has(status)) {
    if (!body || typeof body.error !== "string")
      return unexpected(`${status} body is not {"error": "<message>"}`);
    return { kind: "refused", status: status as 400 | 409 | 413 | 429, body: { error: body.error } };
  }
  if (status === 503) return { kind: "not-serving", status: 503, body: { error: msg.notServing } };
  return unexpected(`status ${status}`);
}
