/** An API server answer other than 2xx, with the Status reason when it sent one. */
export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    /** The Status object's own message (what the API server said), without the request line. */
    readonly detail: string = message,
    /** The Retry-After the server sent, in ms. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = "KubeApiError";
  }
}

export function isStatus(err: unknown, status: number): boolean {
  return err instanceof KubeApiError && err.status === status;
}

/**
 * True when repeating the same request cannot succeed: a 4xx other than 408 (timeout), 409
 * (conflict) and 429 (throttled), e.g. an invalid field, a quota or RBAC Forbidden, an admission
 * webhook's denial. 5xx, 408, 429 and errors without an answer (network, timeout) are transient.
 */
export function isPermanent(err: unknown): boolean {
  return (
    err instanceof KubeApiError &&
    err.status >= 400 &&
    err.status < 500 &&
    ![408, 409, 429].includes(err.status)
  );
}

/** `Retry-After` as ms: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === "") return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
