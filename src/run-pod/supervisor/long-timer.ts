/**
 * A timer for any delay: setTimeout fires at once for delays over 2^31 - 1 ms (about 24.8 days,
 * reached by deadlineMinutes ≥ 35,792), so longer waits are re-armed in steps.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface LongTimer {
  /** Resolves when the delay has passed (never, once cancelled). */
  promise: Promise<void>;
  cancel(): void;
}

export function longTimer(ms: number): LongTimer {
  let handle: NodeJS.Timeout | undefined;
  const promise = new Promise<void>((resolve) => {
    const arm = (left: number) => {
      handle = setTimeout(
        () => (left > MAX_TIMER_MS ? arm(left - MAX_TIMER_MS) : resolve()),
        Math.min(left, MAX_TIMER_MS),
      );
    };
    arm(Math.max(0, ms));
  });
  return { promise, cancel: () => clearTimeout(handle) };
}
