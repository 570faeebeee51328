/**
 * What the executor writes when the API server refuses a terminal status patch (422 Invalid): the
 * same status without the fields it named, else only the fields that end the run. A run must never
 * stay Running because a value it reported (its cost, its output) does not pass the CRD's schema:
 * the next reconcile would compute the same refused patch forever. Pure.
 */

/** The fields a terminal status cannot do without: the phase and why it was reached. */
const ESSENTIAL = new Set(["phase", "exitCode", "completedAt", "failureReason", "jobName", "conditions"]);

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
 * The fallback for attempt 1 (without the named fields, when the message named any that are not
 * essential) and attempt 2 (the essential fields only, a failureReason cut short in case it was
 * the refused one); undefined when there is nothing left to try.
 */
export function statusFallback(
  status: Record<string, unknown>,
  apiMessage: string,
  attempt: number,
): StatusFallback | undefined {
  if (attempt === 1) {
    const named = refusedStatusFields(apiMessage).filter((f) => f in status && !ESSENTIAL.has(f));
    if (named.length > 0) return without(status, (f) => named.includes(f));
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
