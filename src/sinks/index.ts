/** Controller-side event sinks: the public surface the executor uses. */

export { batchDisabledEvents, batchEndEvents, batchStartEvents, batchTimeoutEvents } from "./batch-events.js";
export {
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  DEFAULT_MAX_QUEUED,
  type DeliveryRequest,
  type SecretKeyReader,
  SinkDispatcher,
  type SinkDispatcherOptions,
  type SinkItem,
  type SinkOutcome,
} from "./dispatcher.js";
export { batchRunSource, type Envelope, type EventSource, parseLine, wrap } from "./envelope.js";
export { parseHeaderBlock } from "./headers.js";
export {
  BATCH_REASONS,
  batchDisabled,
  batchFailed,
  batchStarted,
  batchSucceeded,
  batchTimedOut,
  canonicalLifecycle,
  type LifecycleEvent,
  lifecycleEvent,
} from "./lifecycle.js";
export { DEFAULT_RETRY, type RetrySettings, retryFromEnv } from "./retry.js";
export { AGENT_SECRETS, agentSecretsReader, type SecretGetter } from "./secrets.js";
export { classifyLine, passesSelect } from "./select.js";
export type { HttpPost, HttpPostRequest, SinkLogger, Sleep } from "./transport.js";
