/** The real clock of the retry loop: wall time, Math.random, and waits a stop cuts short. */
import { longTimer } from "../long-timer.js";
import type { ProviderRetryClock } from "./attempts.js";

export function systemRetryClock(stop: AbortSignal): ProviderRetryClock {
  return {
    now: () => Date.now(),
    random: () => Math.random(),
    sleep: (ms) => {
      if (stop.aborted) return Promise.resolve(false);
      const timer = longTimer(ms);
      return new Promise<boolean>((resolve) => {
        const onStop = () => {
          timer.cancel();
          resolve(false);
        };
        stop.addEventListener("abort", onStop, { once: true });
        void timer.promise.then(() => {
          stop.removeEventListener("abort", onStop);
          resolve(true);
        });
      });
    },
  };
}
