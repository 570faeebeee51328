/**
 * The I/O half of a review: reads the object's neighbours from the API server (not a cache: the
 * webhook runs on every replica, leader or not) and hands them to the pure checks in warnings.ts.
 *
 * What a warning reveals is bounded (docs/security.md#admission-webhook): a neighbour is looked
 * up only when the review's user may `get` it (LocalSubjectAccessReview), every API read takes a
 * token from a per-process bucket, and found objects are remembered for a few seconds.
 */
import type { V1Secret } from "@kubernetes/client-node";
import { SECRET_NAME } from "../core/run-job/job.js";
import type { Agent, AgentDefinition, Station } from "../core/types.js";
import type { KubeClient } from "../kube/client.js";
import { KubeApiError } from "../kube/errors.js";
import { AGENT_DEFINITIONS, type Resource, SECRETS, STATIONS } from "../kube/resources.js";
import { type MayRead, namesNobody } from "./access.js";
import { TokenBucket, TtlCache } from "./budget.js";
import { found, type Lookup, unknown } from "./facts.js";
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

/** The per-process bounds on lookups; one instance shared by every review. */
export interface LookupLimits {
  bucket: TokenBucket;
  /** Found objects (for agent-secrets: its key names only, never values). */
  found: TtlCache<unknown>;
  /** Access answers per user and object. */
  access: TtlCache<boolean>;
}

/**
 * 30 reads at once, 10 a second after that: a review takes at most 6 (3 access checks, 3
 * objects), and the cache makes repeats of the same names free for 10 s. At most 256 objects of
 * at most MAX_CACHED_CHARS each are kept, so the cache stays under ~16 MiB whatever exists.
 */
export function lookupLimits(now: () => number = Date.now): LookupLimits {
  return {
    bucket: new TokenBucket(30, 10, now),
    found: new TtlCache(10_000, 256, now),
    access: new TtlCache(10_000, 1000, now),
  };
}

export interface AdmissionChecks {
  /** The namespace this controller serves; requests for others get no warnings. */
  namespace: string;
  modes: ControllerModes;
  reader: Pick<KubeClient, "get">;
  /** May the review's user read an object a warning would describe (subjectAccessReviewer). */
  mayRead: MayRead;
  /** Budget for all lookups of one review, well inside the webhook's timeoutSeconds. */
  lookupTimeoutMs: number;
  /** Shared by every review of the process; the server makes one when not given. */
  limits?: LookupLimits;
  /** The clock the budget warning is judged by (default Date.now). */
  now?: () => number;
}

export const MSG_LOOKUPS_EXHAUSTED = "the webhook is making too many lookups right now";
/** A larger object (a definition with a huge prompt) is used but not kept. */
const MAX_CACHED_CHARS = 64 * 1024;

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
  const limits = c.limits ?? lookupLimits();
  const signal = AbortSignal.timeout(c.lookupTimeoutMs);
  const user = req.userInfo;

  /**
   * The object as `keep` makes it; undefined when the user may not read it (the warning then
   * says nothing about it), unknown when it could not be looked up.
   */
  const lookup = async <T>(
    r: Resource,
    name: string,
    keep: (v: unknown) => T,
  ): Promise<Lookup<T> | undefined> => {
    if (namesNobody(user)) return undefined;
    const accessKey = JSON.stringify([user, r.group, r.plural, name]);
    let allowed = limits.access.get(accessKey);
    if (allowed === undefined) {
      if (!limits.bucket.take()) return unknown(MSG_LOOKUPS_EXHAUSTED);
      try {
        allowed = await c.mayRead(user, { group: r.group, resource: r.plural, name }, signal);
      } catch (err) {
        return unknown(`cannot tell whether the requesting user may read it: ${describeFailure(err)}`);
      }
      limits.access.set(accessKey, allowed);
    }
    if (!allowed) return undefined;
    const objectKey = `${r.group}/${r.plural}/${name}`;
    const cached = limits.found.get(objectKey);
    if (cached !== undefined) return found(cached as T);
    if (!limits.bucket.take()) return unknown(MSG_LOOKUPS_EXHAUSTED);
    try {
      const v = await c.reader.get<unknown>(r, c.namespace, name, signal);
      if (v === undefined) return { state: "missing" };
      const kept = keep(v);
      if (JSON.stringify(kept).length <= MAX_CACHED_CHARS) limits.found.set(objectKey, kept);
      return found(kept);
    } catch (err) {
      return unknown(describeFailure(err));
    }
  };
  // Only what the checks read is kept (no managedFields, annotations or the rest of the status):
  // a budgeted Station's spend entries (at most 256, a few KiB) for the budget warning.
  const station = (v: unknown): Station => {
    const st = v as Station;
    const budget = st.spec.budget;
    return {
      metadata: { name: st.metadata?.name },
      spec: { agentDefRef: st.spec.agentDefRef, ...(budget ? { budget } : {}) },
      ...(budget && st.status?.spend ? { status: { spend: st.status.spend } } : {}),
    } as Station;
  };
  const definition = (v: unknown): AgentDefinition => {
    const d = v as AgentDefinition;
    return { metadata: { name: d.metadata?.name }, spec: d.spec } as AgentDefinition;
  };
  // Key names only: no Secret value is kept past this line.
  const secretKeys = () =>
    lookup(
      SECRETS,
      SECRET_NAME,
      (s) => new Set(Object.keys((s as V1Secret).data ?? {})) as ReadonlySet<string>,
    );

  if (kind === "Agent") {
    const agent = req.object as Agent;
    const st = await lookup(STATIONS, agent.spec.stationRef, station);
    const def =
      st?.state === "found"
        ? await lookup(AGENT_DEFINITIONS, st.value.spec.agentDefRef, definition)
        : undefined;
    const refs = agentRunSecretKeys(agent, def?.state === "found" ? def.value : undefined);
    const keys = refs.length > 0 ? await secretKeys() : undefined;
    return agentWarnings(agent, c.namespace, c.modes, {
      now: (c.now ?? Date.now)(),
      ...(st ? { station: st } : {}),
      ...(def ? { definition: def } : {}),
      ...(keys ? { secretKeys: keys } : {}),
    });
  }
  if (kind === "Station") {
    const object = req.object as Station;
    const def = await lookup(AGENT_DEFINITIONS, object.spec.agentDefRef, definition);
    return stationWarnings(object, c.namespace, c.modes, def ? { definition: def } : {});
  }
  const object = req.object as AgentDefinition;
  const keys = definitionSecretKeys(object).length > 0 ? await secretKeys() : undefined;
  return definitionWarnings(object, c.namespace, c.modes, keys ? { secretKeys: keys } : {});
}
