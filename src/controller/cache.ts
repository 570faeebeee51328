/**
 * One in-memory store per resource kind, keyed by object name (the controller serves a single
 * namespace). The watch applies events; the poll and re-lists replace the whole set.
 *
 * A LIST snapshot can be older than an event the watch already applied (the watch runs while the
 * poll's LIST is in flight), so a replace never moves an object backwards: when both resource
 * versions are integers (etcd's are) the newer one wins, and an object missing from the LIST but
 * newer than the LIST's own resourceVersion was created after it and is kept.
 */

export interface KubeObject {
  metadata?: { name?: string; resourceVersion?: string };
}

export type ChangeType = "upsert" | "delete";

export interface Change<T> {
  type: ChangeType;
  name: string;
  object: T;
}

function rvNumber(rv: string | undefined): bigint | undefined {
  if (!rv || !/^[0-9]+$/.test(rv)) return undefined;
  return BigInt(rv);
}

/** True when `a` is known to be older than `b`. Unknown ordering counts as "not older". */
export function isOlder(a: string | undefined, b: string | undefined): boolean {
  const x = rvNumber(a);
  const y = rvNumber(b);
  return x !== undefined && y !== undefined && x < y;
}

export class ObjectCache<T extends KubeObject> {
  private readonly items = new Map<string, T>();

  get(name: string): T | undefined {
    return this.items.get(name);
  }

  values(): IterableIterator<T> {
    return this.items.values();
  }

  get size(): number {
    return this.items.size;
  }

  /** Removes an object without reporting a change. */
  evict(name: string): void {
    this.items.delete(name);
  }

  /** Applies one watch event; returns the change, or undefined when it changed nothing. */
  apply(type: "ADDED" | "MODIFIED" | "DELETED", object: T): Change<T> | undefined {
    const name = object.metadata?.name;
    if (!name) return undefined;
    const existing = this.items.get(name);
    if (type === "DELETED") {
      if (!existing) return undefined;
      this.items.delete(name);
      return { type: "delete", name, object };
    }
    if (existing && isOlder(object.metadata?.resourceVersion, existing.metadata?.resourceVersion))
      return undefined;
    if (existing?.metadata?.resourceVersion === object.metadata?.resourceVersion && existing)
      return undefined;
    this.items.set(name, object);
    return { type: "upsert", name, object };
  }

  /**
   * Replaces the contents with a LIST taken at `listResourceVersion`; returns what changed
   * (upserts for new or newer objects, deletes for objects gone from the LIST).
   */
  replace(list: T[], listResourceVersion: string): Change<T>[] {
    const changes: Change<T>[] = [];
    const seen = new Set<string>();
    for (const obj of list) {
      const name = obj.metadata?.name;
      if (!name) continue;
      seen.add(name);
      const existing = this.items.get(name);
      if (existing && isOlder(obj.metadata?.resourceVersion, existing.metadata?.resourceVersion)) continue;
      // The same version is the same object: the cached one stays (readers may hold on to it).
      if (existing?.metadata?.resourceVersion === obj.metadata?.resourceVersion && existing) continue;
      changes.push({ type: "upsert", name, object: obj });
      this.items.set(name, obj);
    }
    for (const [name, obj] of this.items) {
      if (seen.has(name)) continue;
      if (isOlder(listResourceVersion, obj.metadata?.resourceVersion)) continue;
      this.items.delete(name);
      changes.push({ type: "delete", name, object: obj });
    }
    return changes;
  }
}
