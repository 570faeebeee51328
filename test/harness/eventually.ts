/**
 * The one way tests wait, with a deadline, for something another process writes when it gets to
 * it: the controller's Events (its recorder batches and rate-limits them), a status field written
 * in a later patch, a metric, a sink's delivery, a file a container writes. A single read of such a
 * thing passes on an idle machine and fails on a busy one; these poll it instead.
 *
 * - `eventually(what, check)`: polls `check` until it returns a value (anything but `undefined` or
 *   `false`) and resolves with it; at the deadline the error names `what` and the last error `check`
 *   threw.
 * - `eventuallyPasses(what, block)`: re-runs a block of `expect(...)` calls until all of them pass
 *   and resolves with what the block returns; at the deadline it throws the block's LAST error (an
 *   assertion error keeps its expected and received values, so the report still shows the diff),
 *   its message prefixed with `what` and the time waited.
 *
 * Neither uses vitest's `inject`: integration, own-node and unit tests import it alike. The
 * deadline is read from a monotonic clock, so a test that fakes `Date` does not move it.
 */
import { setTimeout as sleep } from "node:timers/promises";

/** Generous for a busy machine, and still under the integration project's 120 s per test. */
export const DEFAULT_TIMEOUT_MS = 90_000;
export const DEFAULT_INTERVAL_MS = 200;

type Awaitable<T> = T | Promise<T>;

/** Polls `check` until it returns a value other than undefined/false; the error names `what`. */
export async function eventually<T>(
  what: string,
  check: () => Awaitable<T | undefined | false>,
  timeoutMs = DEFAULT_TIMEOUT_MS,
  intervalMs = DEFAULT_INTERVAL_MS,
): Promise<T> {
  const outcome = await poll(check, (value) => value !== undefined && value !== false, timeoutMs, intervalMs);
  if (outcome.done) return outcome.value as T;
  const last = outcome.lastError;
  throw new Error(
    `timed out after ${seconds(timeoutMs)} waiting for ${what}` +
      (last === undefined ? "" : `; last error: ${messageOf(last)}`),
    last === undefined ? undefined : { cause: last },
  );
}

/**
 * Re-runs `block` (a few `expect(...)` calls) until it returns without throwing and resolves with
 * its result; at the deadline throws the last error it threw, as itself (an assertion error keeps
 * `expected`/`actual`), its message prefixed with `what` and the time waited.
 */
export async function eventuallyPasses<T>(
  what: string,
  block: () => Awaitable<T>,
  timeoutMs = DEFAULT_TIMEOUT_MS,
  intervalMs = DEFAULT_INTERVAL_MS,
): Promise<T> {
  const outcome = await poll(block, () => true, timeoutMs, intervalMs);
  if (outcome.done) return outcome.value as T;
  const last = outcome.lastError;
  const prefix = `${what}: still failing after ${seconds(timeoutMs)}`;
  if (last instanceof Error) {
    last.message = `${prefix}: ${last.message}`;
    throw last;
  }
  throw new Error(`${prefix}: ${messageOf(last)}`, { cause: last });
}

type Outcome<T> = { done: true; value: T } | { done: false; lastError: unknown };

/**
 * Calls `attempt` at once, then every `intervalMs` until `accept` takes its value; the last call is
 * made at the deadline.
 */
async function poll<T>(
  attempt: () => Awaitable<T>,
  accept: (value: T) => boolean,
  timeoutMs: number,
  intervalMs: number,
): Promise<Outcome<T>> {
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await attempt();
      if (accept(value)) return { done: true, value };
    } catch (err) {
      lastError = err;
    }
    const left = deadline - performance.now();
    if (left <= 0) return { done: false, lastError };
    await sleep(Math.min(intervalMs, left));
  }
}

function seconds(ms: number): string {
  return `${ms / 1000} s`;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
