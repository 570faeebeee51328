/**
 * What the executor writes when the API server refuses a terminal status patch, 422 Invalid (a
 * value outside the CRD's schema) or 413 (the patch is too large): the same status without the
 * fields it named (422) or without the oversized ones (413), else only the fields that end the
 * run. A run must never stay Running because a value it reported (its cost, a session id) does not
 * pass: the next reconcile would compute the same refused patch forever. `output` is always kept:
 * it is capped at MAX_OUTPUT_BYTES already, and the seed forbids leaving it silently empty. Pure.
 */

/** The fields a terminal status cannot do without: the phase, why it was reached, and the output. */
const ESSENTIAL = new Set([
  "phase",
  "exitCode",
  "completedAt",
  "failureReason",
  "jobName",
  "conditions",
  "output",
]);

/** A field of a refused (413) patch larger than this, serialised, is dropped first. */
export const OVERSIZED_FIELD_BYTES = 16 * 1024;

/** The API server's refusals the fallback answers. */
export type Refusal = { status: 422 | 413; message: string };

/** `status.costUSD`, `status.usage.inputTokens`… as named in a 422's message, reduced to top-level status fields. */
export function refusedStatusFields(apiMessage: string): string[] {
  const fields = new Set<string>();
  for (const m of apiMessage.matchAll(/\bstatus\.([A-Za-z][A-Za-z0-9]*)/g)) fields.add(m[1] as string);
  return [...fields];
}

export interface StatusFallback {
  status: Record<string, unknown>;
  /** The status fields left out, for the Event that says so. */
  dropped: string[];
}

/**
 * The fallback for attempt 1 (without the fields a 422 named, or the non-essential fields over
 * OVERSIZED_FIELD_BYTES of a 413, when there are any) and attempt 2 (the essential fields only, a
 * failureReason cut short in case it was the refused one); undefined when there is nothing left
 * to try.
 */
export function statusFallback(
  status: Record<string, unknown>,
  refusal: Refusal,
  attempt: number,
): StatusFallback | undefined {
  if (attempt === 1) {
    const first =
      refusal.status === 413
        ? Object.keys(status).filter(
            (f) =>
              !ESSENTIAL.has(f) && Buffer.byteLength(JSON.stringify(status[f]) ?? "") > OVERSIZED_FIELD_BYTES,
          )
        : refusedStatusFields(refusal.message).filter((f) => f in status && !ESSENTIAL.has(f));
    if (first.length > 0) return without(status, (f) => first.includes(f));
    attempt = 2;
  }
  if (attempt === 2) {
    const out = without(status, (f) => !ESSENTIAL.has(f));
    if (typeof out.status.failureReason === "string" && out.status.failureReason.length > 1024) {
      out.status.failureReason = `${out.status.failureReason.slice(0, 1021)}...`;
    }
    return out.dropped.length > 0 || out.status.failureReason !== status.failureReason ? out : undefined;
  }
  return undefined;
}

function without(status: Record<string, unknown>, drop: (field: string) => boolean): StatusFallback {
  const kept: Record<string, unknown> = {};
  const dropped: string[] = [];
  for (const [k, v] of Object.entries(status)) {
    if (drop(k)) dropped.push(k);
    else kept[k] = v;
  }
  return { status: kept, dropped };
}

export function isTerminalStatus(status: Record<string, unknown>): boolean {
  return status.phase === "Succeeded" || status.phase === "Failed";
}
