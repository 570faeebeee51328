/**
 * The I/O half of a review: reads the object's neighbours from the API server (not a cache: the
 * webhook runs on every replica, leader or not) and hands them to the pure checks in warnings.ts.
 */
import type { V1Secret } from "@kubernetes/client-node";
import type { KubeClient } from "../controller/kube/client.js";
import { KubeApiError } from "../controller/kube/errors.js";
import { AGENT_DEFINITIONS, type Resource, SECRETS, STATIONS } from "../controller/kube/resources.js";
import { SECRET_NAME } from "../core/job-builder.js";
import type { Agent, AgentDefinition, Station } from "../core/types.js";
import { found, type Lookup, missing, unknown } from "./facts.js";
import { type AdmissionRequest, kindToCheck } from "./review.js";
import { definitionSecretKeys } from "./secret-refs.js";
import {
  agentRunSecretKeys,
  agentWarnings,
  type ControllerModes,
  definitionWarnings,
  schemaWarnings,
  stationWarnings,
} from "./warnings.js";

export interface AdmissionChecks {
  /** The namespace this controller serves; requests for others get no warnings. */
  namespace: string;
  modes: ControllerModes;
  reader: Pick<KubeClient, "get">;
  /** Budget for all lookups of one review, well inside the webhook's timeoutSeconds. */
  lookupTimeoutMs: number;
}

function describeFailure(err: unknown): string {
  if (err instanceof KubeApiError) return `${err.status} ${err.reason}: ${err.detail}`;
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) {
    return "the API server did not answer in time";
  }
  return err instanceof Error ? err.message : String(err);
}

/** All warnings for one AdmissionRequest; never throws for a lookup that fails (it becomes a warning). */
export async function reviewWarnings(req: AdmissionRequest, c: AdmissionChecks): Promise<string[]> {
  const kind = kindToCheck(req, c.namespace);
  if (kind === undefined) return [];
  const schema = schemaWarnings(kind, req.object);
  // An object ajv rejects has no trustworthy shape to look its references up by.
  if (schema.length > 0) return schema;

  const signal = AbortSignal.timeout(c.lookupTimeoutMs);
  const lookup = async <T>(r: Resource, name: string): Promise<Lookup<T>> => {
    try {
      const v = await c.reader.get<T>(r, c.namespace, name, signal);
      return v === undefined ? missing : found(v);
    } catch (err) {
      return unknown(describeFailure(err));
    }
  };
  const secretKeys = async (): Promise<Lookup<ReadonlySet<string>>> => {
    const s = await lookup<V1Secret>(SECRETS, SECRET_NAME);
    return s.state === "found" ? found(new Set(Object.keys(s.value.data ?? {}))) : s;
  };

  if (kind === "Agent") {
    const agent = req.object as Agent;
    const station = await lookup<Station>(STATIONS, agent.spec.stationRef);
    const definition =
      station.state === "found"
        ? await lookup<AgentDefinition>(AGENT_DEFINITIONS, station.value.spec.agentDefRef)
        : undefined;
    const refs = agentRunSecretKeys(agent, definition?.state === "found" ? definition.value : undefined);
    return agentWarnings(agent, c.namespace, c.modes, {
      station,
      ...(definition ? { definition } : {}),
      ...(refs.length > 0 ? { secretKeys: await secretKeys() } : {}),
    });
  }
  if (kind === "Station") {
    const station = req.object as Station;
    const definition = await lookup<AgentDefinition>(AGENT_DEFINITIONS, station.spec.agentDefRef);
    return stationWarnings(station, c.namespace, c.modes, { definition });
  }
  const def = req.object as AgentDefinition;
  const refs = definitionSecretKeys(def);
  return definitionWarnings(
    def,
    c.namespace,
    c.modes,
    refs.length > 0 ? { secretKeys: await secretKeys() } : {},
  );
}
