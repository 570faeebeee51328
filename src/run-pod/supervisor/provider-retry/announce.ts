/**
 * What a user sees while a run waits for its provider (docs/provider-limits.md#what-a-user-sees):
 * the `provider-limit` event on the run's stdout (the pod log `kubectl agent logs -f` shows, and
 * `kubectl agent status` reads while the run waits) and in every sink, and a line in the
 * supervisor's log naming the provider, its answer and the wait.
 */
import type { ProviderAnswer } from "../../../core/provider-limits/index.js";
import { providerLimitEvent } from "../../../core/provider-limits/retry-event.js";
import type { JsonLineLogger } from "../../../log.js";
import type { RunEmitter } from "../../common/emitter.js";
import type { RetryWait } from "./attempts.js";

/** `anthropic answered 429 (rate_limited)` / `openai gave no answer (connection)`. */
export function describeAnswer(answer: ProviderAnswer): string {
  return answer.status === 0
    ? `${answer.provider} gave no answer (${answer.kind})`
    : `${answer.provider} answered ${answer.status} (${answer.kind})`;
}

export function announceWait(
  emitter: Pick<RunEmitter, "event">,
  log: JsonLineLogger,
  wait: RetryWait,
  how: { resumed: string; turn?: number },
): void {
  const { answer, retry, waitMs, at } = wait;
  emitter.event(providerLimitEvent(answer, retry, waitMs, at, how.turn));
  const asked = answer.retryAfterSeconds !== undefined ? " (the wait the provider asked for)" : "";
  log.warn(
    `${how.turn !== undefined ? `turn ${how.turn}: ` : ""}provider limit: ${describeAnswer(answer)}; retry ${retry} in ${Math.ceil(waitMs / 1000)} s${asked}, ${how.resumed}`,
    { provider: answer.provider, status: answer.status, retry, waitMs, message: answer.message },
  );
}

export function announceGiveUp(
  log: JsonLineLogger,
  why: string,
  answer: ProviderAnswer,
  turn?: number,
): void {
  log.error(
    `${turn !== undefined ? `turn ${turn}: ` : ""}provider limit: ${describeAnswer(answer)}; not retried: ${why}`,
    { provider: answer.provider, status: answer.status, message: answer.message },
  );
}
