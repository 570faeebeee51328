/**
 * In-memory state the executor keeps between reconciles: per-Agent batch memory (keyed by uid)
 * and the Job creations / batch submits issued but not yet visible as Running in the cache, which
 * the core counts as Running so a lagging cache cannot over-admit a Station.
 */
import type { BatchMemory, JobCreateFailure } from "../core/input.js";
import type { Agent } from "../core/types.js";

export class RunMemory {
  private readonly batch = new Map<string, BatchMemory>();
  /** Agent name → Station name of an issued-but-unobserved creation. */
  private readonly issued = new Map<string, string>();
  /** Agent uid → its last failed Job creation, until one succeeds or the Agent leaves Pending. */
  private readonly jobCreate = new Map<string, JobCreateFailure>();
  /** Agent uid → the resourceVersion a write of it was refused on (409), until the cache moves past it. */
  private readonly conflicts = new Map<string, string>();

  jobCreateFailure(uid: string): JobCreateFailure | undefined {
    return this.jobCreate.get(uid);
  }

  setJobCreateFailure(uid: string, failure: JobCreateFailure | undefined): void {
    if (failure) this.jobCreate.set(uid, failure);
    else this.jobCreate.delete(uid);
  }

  /** A guarded write of this Agent, computed from `resourceVersion`, was refused with 409. */
  markConflict(uid: string, resourceVersion: string): void {
    if (uid && resourceVersion) this.conflicts.set(uid, resourceVersion);
  }

  /** The resourceVersion the Agent's last write was refused on, while the cache still holds it. */
  conflictedAt(uid: string): string | undefined {
    return this.conflicts.get(uid);
  }

  batchFor(uid: string): BatchMemory {
    let m = this.batch.get(uid);
    if (!m) {
      m = {};
      this.batch.set(uid, m);
    }
    return m;
  }

  peekBatch(uid: string): BatchMemory | undefined {
    return this.batch.get(uid);
  }

  markIssued(agentName: string, station: string): void {
    this.issued.set(agentName, station);
  }

  /** True when a creation was issued for this Agent and the cache does not show it Running yet. */
  isIssued(agentName: string): boolean {
    return this.issued.has(agentName);
  }

  /** Names issued for this Station whose Running status the cache does not show yet. */
  issuedFor(station: string): string[] {
    const out: string[] = [];
    for (const [name, s] of this.issued) if (s === station) out.push(name);
    return out;
  }

  get issuedCount(): number {
    return this.issued.size;
  }

  /** Called for every cache change of an Agent: forgets what the cache now shows. */
  observe(agent: Agent, deleted: boolean): void {
    const name = agent.metadata.name ?? "";
    const phase = agent.status?.phase ?? "Pending";
    if (deleted || phase !== "Pending") this.issued.delete(name);
    if ((deleted || phase !== "Pending") && agent.metadata.uid) this.jobCreate.delete(agent.metadata.uid);
    if (deleted && agent.metadata.uid) this.batch.delete(agent.metadata.uid);
    // The cache now holds another version than the one a write was refused on: reconciles read it.
    const uid = agent.metadata.uid ?? "";
    if (deleted || this.conflicts.get(uid) !== agent.metadata.resourceVersion) this.conflicts.delete(uid);
    // Once the Running patch carrying the batchId is visible, the remembered submit is redundant.
    const m = agent.metadata.uid ? this.batch.get(agent.metadata.uid) : undefined;
    if (m?.submitted && agent.status?.batchId) delete m.submitted;
  }
}
