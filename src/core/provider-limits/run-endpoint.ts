/**
 * The endpoint and key one Agent's run spends its provider's limits on
 * (docs/provider-limits.md#one-limit-per-endpoint-and-key). A Job run is resolved from the env its
 * `agent` container gets (the Job builder's own list: the recipe's env and secrets, then the
 * Station's container env, then the installation's base URLs), so what is counted is what the CLI
 * will use. A batch run goes to the controller's batch API with the key its submit reads. With
 * the model gateway on, a Job run's pod holds only its own credential: its endpoint is the gateway
 * and its key the definition's entry the gateway sends upstream.
 * Apart from endpoint.ts because it builds the run's Job, which endpoint.ts's readers (admission)
 * must not depend on.
 */

import { effectiveModel, routeModel, VENDOR_CAPABILITIES } from "../cli/routing.js";
import type { ControllerSettings } from "../input.js";
import { executionOf } from "../policy/spec-checks.js";
import { buildJob, SECRET_NAME } from "../run-job/job.js";
import { vendorKeyEntry } from "../run-job/vendor-key.js";
import type { Agent, AgentDefinition, Station } from "../types.js";
import {
  BATCH_KEY_NAME,
  endpointFromEnv,
  type ProviderEndpoint,
  providerOfModel,
  withId,
} from "./endpoint.js";

/**
 * The endpoint and key this Agent's run uses; undefined when the run cannot be built (the Agent
 * fails for that anyway). A run whose provider is unknown (exec) is its own Station's.
 */
export function providerEndpointOf(
  agent: Agent,
  station: Station,
  definition: AgentDefinition,
  settings: ControllerSettings,
): ProviderEndpoint | undefined {
  const model = effectiveModel(agent, definition);
  const provider = providerOfModel(model);
  const execution = executionOf(definition);
  if (execution === "batch") {
    const batch = VENDOR_CAPABILITIES[routeModel(model)].batchProvider;
    if (batch) {
      const ref = definition.spec.resources?.secrets?.find((s) => s.name === BATCH_KEY_NAME[batch])?.ref;
      const e = {
        provider: batch,
        endpoint: "batch API",
        key: ref !== undefined ? `secret ${SECRET_NAME}/${ref}` : "no key",
      };
      return withId(e);
    }
  }
  if (!provider) {
    const e = {
      provider: "unknown" as const,
      endpoint: `Station ${station.metadata?.name ?? agent.spec.stationRef}`,
      key: "no key",
    };
    return withId(e);
  }
  const built = buildJob(
    agent,
    station,
    definition,
    settings,
    execution === "realtime" ? "realtime" : "interactive",
  );
  if (!built.ok) return undefined;
  if (settings.gateway) {
    // The pod holds a per-run credential; the limits belong to the key the gateway swaps it for,
    // the definition's entry for the vendor (docs/gateway.md#run-credentials).
    const ref = vendorKeyEntry(definition.spec, provider)?.ref;
    return withId({
      provider,
      endpoint: settings.gateway.url,
      key: ref !== undefined ? `secret ${SECRET_NAME}/${ref}` : "no key",
    });
  }
  const container = built.job.spec?.template.spec?.containers.find((c) => c.name === "agent");
  return endpointFromEnv(provider, container?.env ?? []);
}
