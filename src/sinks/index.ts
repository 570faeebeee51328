/**
 * Controller-side event sinks: what the controller's wiring (and the integration tests' planes)
 * build the batch runs' delivery from, with the types that name its options and requests. The
 * events themselves come from the reconcile core's emitSinkEvents actions (src/core/actions.ts);
 * the run pod's programs import the modules of this folder directly.
 */

export type { SinkItem } from "../core/actions.js";
export {
  type DeliveryRequest,
  type SecretKeyReader,
  SinkDispatcher,
  type SinkDispatcherOptions,
  type SinkOutcome,
} from "./dispatcher.js";
export type { EventSource } from "./envelope.js";
export { type RetrySettings, retryFromEnv } from "./retry.js";
export { agentSecretsReader, type SecretGetter } from "./secrets.js";
export type { HttpPost, HttpPostRequest, SinkLogger, Sleep } from "./transport.js";
