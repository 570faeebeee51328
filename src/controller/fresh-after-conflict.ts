/**
 * The Agent a reconcile computes from once a write of it was refused with 409.
 *
 * A 409 on resourceVersion X says the API server holds a newer Agent than the one the write was
 * computed from. The watch brings that newer Agent, but not at once: until it does, the cache still
 * holds X, and a reconcile started meanwhile (by a Job event, a retry, the poll) would compute the
 * same write from the same stale object and send it with X again, to be refused again. The seed
 * (docs/controller.md#write-safety) has the next reconcile recompute from fresh state, so
 * while the cache still holds the conflicted version that reconcile reads the Agent from the API
 * server first. A write is never resent with a newer resourceVersion: it is computed again.
 */
import type { Agent } from "../core/types.js";

export interface FreshReadDeps {
  /** The resourceVersion a write of this Agent (by uid) was last refused on, if any. */
  conflictedAt: (uid: string) => string | undefined;
  /** The Agent as the API server holds it now; undefined when it is gone. */
  reread: (name: string) => Promise<Agent | undefined>;
  /** Puts a re-read Agent into the cache; returns what the cache then holds for its name. */
  store: (agent: Agent) => Agent | undefined;
}

/**
 * `cached` itself when no write of it was refused on its resourceVersion; else the Agent re-read
 * from the API server (and stored in the cache), or undefined when there is nothing newer to
 * compute from (it is gone, or was replaced by another Agent of the same name): the watch event
 * that brings the change reconciles it then.
 */
export async function agentAfterConflict(cached: Agent, d: FreshReadDeps): Promise<Agent | undefined> {
  const uid = cached.metadata.uid ?? "";
  const conflicted = d.conflictedAt(uid);
  if (conflicted === undefined || conflicted !== cached.metadata.resourceVersion) return cached;
  const fresh = await d.reread(cached.metadata.name ?? "");
  if (!fresh || fresh.metadata.uid !== uid) return undefined;
  const held = d.store(fresh);
  if (!held || held.metadata.uid !== uid || held.metadata.resourceVersion === conflicted) return undefined;
  return held;
}
