/**
 * The HTTP client that carries a prompt or close to the run pod. Injectable so the app can be
 * tested without sockets; the default uses undici.
 */
import { timedPost } from "../http-post.js";

export interface ForwardRequest {
  /** `http://<podIP>:8090/v1/prompt` or `/v1/close`. */
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Whole-exchange budget; past it the pod counts as unreachable (docs/decisions.md D-45: 10 s). */
  timeoutMs: number;
}

export interface ForwardResponse {
  status: number;
  /** The response body as text, cut at the reader's limit (a cut body is not valid JSON). */
  body: string;
}

/** Resolves with the supervisor's answer; rejects on a connection error or timeout. */
export type Forward = (req: ForwardRequest) => Promise<ForwardResponse>;

/** The supervisor's answers are a few dozen bytes; anything past this is not one of them. */
export const MAX_SUPERVISOR_ANSWER_BYTES = 64 * 1024;

export const undiciForward: Forward = ({ url, headers, body, timeoutMs }) =>
  timedPost({ url, headers, body, timeoutMs, readBodyUpTo: MAX_SUPERVISOR_ANSWER_BYTES });
