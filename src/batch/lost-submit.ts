/**
 * What the three vendors share when a submit's answer was lost (docs/batch-runs.md#a-submit-whose-answer-was-lost):
 * how far around the attempt a listing looks, how many pages it reads at most, and how a reply
 * the client cannot read still counts as an acted-on create.
 */
import { BatchProviderError } from "./provider.js";

/**
 * Around the lost attempt's send and failure times: the provider stamps a batch with its own
 * clock, and a request may be processed a little after the client gave up on it.
 */
export const LOST_SUBMIT_SLACK_MS = 60_000;

/** Pages of a batch (or file) listing read before the search is left for a later attempt. */
export const LOST_SUBMIT_MAX_PAGES = 50;

/** Items per listing page asked for (each vendor's documented maximum is at least this). */
export const LOST_SUBMIT_PAGE_SIZE = 100;

/**
 * Reads a create's 2xx answer with `read`; a body it cannot read still means the batch exists,
 * so the error says the provider may have acted.
 */
export function readCreated<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof BatchProviderError) err.mayHaveActed = true;
    throw err;
  }
}

/** True when `createdMs` (the provider's clock) may belong to the attempt sent in [since, until]. */
export function inLostWindow(createdMs: number, since: number, until: number): boolean {
  return createdMs >= since - LOST_SUBMIT_SLACK_MS && createdMs <= until + LOST_SUBMIT_SLACK_MS;
}

export function undecidedAfterPages(vendor: string, what: string) {
  return {
    state: "undecided" as const,
    reason: `${vendor}: ${what} not found in the first ${LOST_SUBMIT_MAX_PAGES} pages of the listing`,
  };
}
