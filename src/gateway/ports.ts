/**
 * What the gateway needs from the rest of the cluster, as interfaces the process wires up
 * (docs/gateway.md#what-is-injected): whether a run may still call its model, the vendor key it
 * calls with, and where its metered usage goes. The gateway holds no Kubernetes client itself.
 */
import type { RunRef } from "../core/run-job/gateway-credential.js";
import type { MeteredUsage } from "./usage/reading.js";
import type { GatewayVendor } from "./vendors.js";

export type RunState =
  | { state: "active" }
  /** The Agent reached a terminal phase (Succeeded, Failed, …): its credential no longer works. */
  | { state: "terminal"; phase: string }
  /** No Agent of that namespace, name and uid exists (deleted, or recreated under a new uid). */
  | { state: "deleted" }
  /** The credential names a namespace other than the one this gateway serves (its agent-secrets). */
  | { state: "foreign"; served: string };

/**
 * The lookup could not tell whether the run may go on (the API server did not answer, or refused
 * the gateway's read) and had no recent answer to stand in: the request is refused, never let
 * through (fail closed). The message says why, for the refusal the CLI prints.
 */
export class RunUnconfirmedError extends Error {
  override name = "RunUnconfirmedError";
}

export interface RunLookup {
  runState(run: RunRef): Promise<RunState>;
  /** The Station of an active run (its Agent's spec.stationRef), for the metrics; undefined when unknown. */
  stationOf(run: RunRef): Promise<string | undefined>;
}

/** The vendor key for a run, or why there is none (said to the CLI after "no <vendor> API key for <Agent>: "). */
export type ProviderKey = { key: string } | { missing: string };

export interface KeySource {
  /**
   * The vendor's real API key for this run: the agent-secrets entry its definition's
   * `resources.secrets` names (definition-keys.ts), or one fixed file per vendor (adapters.ts).
   * Throws only when it cannot tell (the API server did not answer): a 503, not a refusal.
   */
  keyFor(run: RunRef, vendor: GatewayVendor): Promise<ProviderKey>;
}

/** One metered model call, as the provider's own answer reported it. */
export interface UsageRecord {
  run: RunRef;
  vendor: GatewayVendor;
  /** The route's name (`messages`, `responses`, `stream_generate_content`, …). */
  route: string;
  /** The model the request named (body `model`, or the Gemini path). */
  requestedModel?: string;
  /** The model the answer named. */
  model?: string;
  /** The upstream's HTTP status. */
  status: number;
  /** Undefined when the answer carried no usage (an error answer, a stream cut before its first event). */
  usage?: MeteredUsage;
  /** Whether the provider's final event arrived. */
  complete: boolean;
  /** The client went away before the answer ended (the gateway read the upstream to its end anyway). */
  clientAborted: boolean;
  /** Why the answer was forwarded but not read: a JSON body over the bound, or an encoded one. */
  unreadable?: "oversized" | "encoded";
  /** Why the upstream answer ended early, when it did (a reset, an idle timeout). */
  upstreamError?: string;
  /** What the call cost at the gateway's built-in prices (its Station's budget in flight counts it). */
  costUsd?: number;
  /** The worst case reserved for the call before it was forwarded, released by this record. */
  reservedUsd?: number;
  startedAt: Date;
  endedAt: Date;
}

export interface UsageStore {
  /**
   * A metered call of the run has started: it counts as in flight until its record, so the
   * controller waits for it before it prices the run (docs/gateway.md#metering).
   */
  started(run: RunRef, vendor: GatewayVendor): void;
  /** The call's record; resolves once it is durable (the proxy waits a bounded time for it). */
  record(entry: UsageRecord): Promise<void>;
}
