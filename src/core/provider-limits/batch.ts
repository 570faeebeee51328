/**
 * The provider's answer in a batch API's error (src/batch/http.ts: every non-2xx answer or
 * transport failure of a submit, poll or cleanup call). Pure: it takes the error's parts, so the
 * batch clients and the controller read the same table as the run pods.
 */
import type { ProviderAnswer, ProviderName } from "./answer.js";
import { providerAnswer } from "./answer.js";

export interface BatchErrorParts {
  /** The HTTP status; undefined when the request failed before an answer (timeout, refused). */
  status?: number;
  /** `<vendor> <METHOD> <path>: HTTP <status>: <type>: <message>` or `…: request failed: …`. */
  message: string;
  /** retry-after / retry-after-ms of the answer, seconds. */
  retryAfterSeconds?: number;
}

export function batchAnswer(provider: ProviderName, error: BatchErrorParts): ProviderAnswer {
  const { status, message, retryAfterSeconds } = error;
  // A 2xx whose body could not be read is the provider's fault and may pass later.
  if (status !== undefined && status < 400) {
    return { ...providerAnswer(provider, 500, message, retryAfterSeconds), status, kind: "server_error" };
  }
  return providerAnswer(provider, status ?? 0, message, retryAfterSeconds);
}
