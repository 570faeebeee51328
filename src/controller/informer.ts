/**
 * List + watch for one resource kind, feeding an ObjectCache.
 *
 * A paginated LIST seeds the cache and the cursor; the watch then resumes from the last
 * resourceVersion seen (bookmarks keep it fresh even when nothing changes), so a reconnect never
 * replays the collection. 410 Gone, as an HTTP status or as an ERROR event in the stream, means
 * the history was compacted past the cursor: the cursor is dropped and the next pass re-lists.
 * The server ends each watch after timeoutSeconds, which bounds how long a silently dead socket
 * can hold us. Real errors back off exponentially with jitter.
 */

import type { KubeClient, WatchEvent } from "../kube/client.js";
import { KubeApiError } from "../kube/errors.js";
import type { Resource } from "../kube/resources.js";
import { Backoff } from "./backoff.js";
import { type Change, isOlder, type KubeObject, ObjectCache } from "./cache.js";

export interface InformerOptions<T extends KubeObject> {
  client: Pick<KubeClient, "list" | "watch" | "get">;
  resource: Resource;
  namespace: string;
  labelSelector?: string;
  pageSize: number;
  /** Page size of a LIST of whole objects, when smaller than `pageSize` (big objects). */
  fullPageSize?: number;
  watchTimeoutSeconds: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  random: () => number;
  now: () => number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  onChanges: (changes: Change<T>[]) => void;
  /** Applied to every object before it is cached (e.g. to drop fields the controller never reads). */
  transform?: (obj: T) => T;
  /**
   * Which (transformed) objects the cache holds at all; one that fails is treated as absent: a
   * LIST leaves it out and a watch event evicts it, without reporting a change. It must decide from
   * `metadata` alone (the poll's LIST carries nothing else).
   */
  keep?: (obj: T) => boolean;
  onList?: () => void;
  onReconnect?: () => void;
  log?: (msg: string) => void;
  /**
   * What an earlier informer of the same kind held (its cache and watch cursor): this one brings
   * that cache up to date with the poll's cheap resync instead of a LIST of whole objects, reports
   * every object as a change, and resumes the watch from that cursor, counting it as a reconnect.
   */
  resume?: InformerState<T>;
}

/** An informer's cache and watch cursor, handed to the next informer of the same kind. */
export interface InformerState<T extends KubeObject> {
  cache: ObjectCache<T>;
  resourceVersion: string;
}

class GoneError extends Error {}

export class Informer<T extends KubeObject> {
  readonly cache: ObjectCache<T>;
  /** The watch cursor; empty means "re-list before watching". */
  resourceVersion = "";
  synced = false;
  private readonly backoff: Backoff;
  /** Resumed from an earlier informer and not yet brought up to date. */
  private resumed: boolean;
  /** `run` has not returned yet. */
  private running = false;
  /** The cache belongs to the next informer of this kind now (`handOn`). */
  private handedOn = false;

  constructor(private readonly o: InformerOptions<T>) {
    this.backoff = new Backoff({ baseMs: o.backoffBaseMs, maxMs: o.backoffMaxMs, random: o.random });
    this.cache = o.resume?.cache ?? new ObjectCache<T>();
    this.resourceVersion = o.resume?.resourceVersion ?? "";
    this.resumed = o.resume !== undefined && this.resourceVersion !== "";
  }

  /**
   * Hands the cache and cursor on to the next informer of this kind, once `run` has returned
   * (undefined while it runs, and before the first sync). One resumed from an earlier term that was
   * stopped before it caught up (leadership lost again while the API server was slow) still holds
   * that term's cache and cursor: they are handed on as they are, for the next term to catch up
   * from, rather than dropped for a re-list. From then on the cache is the next term's: what this
   * term's in-flight reconciles still write to it (`observe`, `forget`, `sweep`) is ignored, so a
   * stop that waits on them need not finish before its caches are handed on.
   */
  handOn(): InformerState<T> | undefined {
    if (this.running || !(this.synced || this.resumed) || !this.resourceVersion) return undefined;
    this.handedOn = true;
    return { cache: this.cache, resourceVersion: this.resourceVersion };
  }

  /** A full paginated LIST that refreshes the cache; returns the LIST's resourceVersion. */
  async list(signal?: AbortSignal): Promise<string> {
    const refused: string[] = [];
    const res = await this.o.client.list<T>(this.o.resource, this.o.namespace, {
      labelSelector: this.o.labelSelector,
      limit: Math.min(this.o.pageSize, this.o.fullPageSize ?? this.o.pageSize),
      signal,
      // Page by page, so only one page of whole objects is ever held.
      map: (obj) => {
        const kept = this.admit(obj);
        if (kept === undefined && obj.metadata?.name) refused.push(obj.metadata.name);
        return kept;
      },
    });
    this.o.onList?.();
    for (const name of refused) this.cache.evict(name);
    const changes = this.cache.replace(res.items, res.resourceVersion);
    this.synced = true;
    if (changes.length > 0) this.o.onChanges(changes);
    return res.resourceVersion;
  }

  /**
   * The poll's refresh: a paginated LIST of metadata only (names and resourceVersions, whatever
   * size the objects are: an Agent's status.output alone may be 256 KiB), then a GET of each object
   * whose listed version the cache does not hold yet. Deletions are applied as by `list()`. The
   * result is the cache a full LIST would leave; when more objects changed than the full LIST has
   * pages, it is that LIST instead. Returns the LIST's resourceVersion.
   */
  async resync(signal?: AbortSignal): Promise<string> {
    const stale: string[] = [];
    const listed = new Set<string>();
    // Each item is compared with the cache as its page arrives and then dropped: nothing of the
    // LIST outlives its page but the names, so a poll's garbage dies young instead of being
    // promoted (a poll's CPU was mostly the garbage collector's and the JSON parse).
    const res = await this.o.client.list<T>(this.o.resource, this.o.namespace, {
      labelSelector: this.o.labelSelector,
      limit: this.o.pageSize,
      signal,
      metadataOnly: true,
      map: (meta) => {
        const name = meta.metadata?.name;
        if (!name) return undefined;
        listed.add(name);
        const cached = this.cache.get(name);
        if (cached && !isOlder(cached.metadata?.resourceVersion, meta.metadata?.resourceVersion))
          return undefined;
        // Not held because it fails `keep`: nothing to fetch.
        if (!cached && this.o.keep && !this.o.keep(this.o.transform ? this.o.transform(meta) : meta))
          return undefined;
        stale.push(name);
        return undefined;
      },
    });
    if (stale.length > Math.max(10, Math.ceil(listed.size / this.o.pageSize))) return this.list(signal);
    this.o.onList?.();
    const changes: Change<T>[] = [];
    for (const name of stale) {
      const obj = await this.o.client.get<T>(this.o.resource, this.o.namespace, name, signal);
      const held = this.cache.get(name);
      const t = obj && this.admit(obj);
      let change: Change<T> | undefined;
      if (t !== undefined) change = this.cache.apply("MODIFIED", t);
      else if (obj)
        this.cache.evict(name); // refused by `keep`
      else if (held) change = this.cache.apply("DELETED", held); // deleted since the LIST
      if (change) changes.push(change);
    }
    for (const obj of [...this.cache.values()]) {
      const name = obj.metadata?.name;
      if (!name || listed.has(name) || isOlder(res.resourceVersion, obj.metadata?.resourceVersion)) continue;
      const change = this.cache.apply("DELETED", obj);
      if (change) changes.push(change);
    }
    this.synced = true;
    if (changes.length > 0) this.o.onChanges(changes);
    return res.resourceVersion;
  }

  /** Runs until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    this.running = true;
    try {
      await this.loop(signal);
    } finally {
      this.running = false;
    }
  }

  private async loop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let events = 0;
      // Only a watch that was opened ends in a reconnect: a failed LIST or catch-up opened none.
      let watching = false;
      const started = this.o.now();
      try {
        if (!this.resourceVersion) {
          this.resumed = false;
          this.resourceVersion = await this.list(signal);
        } else if (this.resumed) await this.catchUp(signal);
        watching = true;
        await this.o.client.watch<T>(
          this.o.resource,
          this.o.namespace,
          {
            resourceVersion: this.resourceVersion,
            timeoutSeconds: this.o.watchTimeoutSeconds,
            labelSelector: this.o.labelSelector,
            signal,
          },
          (e) => {
            events++;
            this.handle(e);
          },
        );
        if (signal.aborted) break;
        this.o.onReconnect?.();
        // A stream that ends at once with nothing in it is not progress; don't spin on it.
        if (events === 0 && this.o.now() - started < 1000) await this.o.sleep(this.backoff.next(), signal);
        else this.backoff.reset();
      } catch (err) {
        if (signal.aborted) break;
        if (watching) this.o.onReconnect?.();
        if (err instanceof GoneError || (err instanceof KubeApiError && err.status === 410)) {
          this.o.log?.(
            `${this.o.resource.plural}: watch cursor ${this.resourceVersion} expired (410); re-listing`,
          );
          this.resourceVersion = "";
          continue;
        }
        const delay = this.backoff.next();
        this.o.log?.(`${this.o.resource.plural}: watch error, retrying in ${delay} ms: ${String(err)}`);
        await this.o.sleep(delay, signal);
      }
    }
  }

  /**
   * A resumed cache is brought up to date as the poll does (a metadata LIST, a GET of what
   * changed), then every object it holds is reported, as a first LIST would (the new owner's
   * indexes start empty); the watch then resumes from the kept cursor, a reconnect.
   */
  private async catchUp(signal: AbortSignal): Promise<void> {
    await this.resync(signal);
    this.resumed = false;
    const all: Change<T>[] = [];
    for (const object of this.cache.values()) {
      const name = object.metadata?.name;
      if (name) all.push({ type: "upsert", name, object });
    }
    if (all.length > 0) this.o.onChanges(all);
    this.o.onReconnect?.();
  }

  private handle(e: WatchEvent<T>): void {
    const rv = e.object?.metadata?.resourceVersion;
    switch (e.type) {
      case "BOOKMARK":
        if (rv) this.resourceVersion = rv;
        return;
      case "ERROR": {
        const status = e.object as unknown as { code?: number; reason?: string; message?: string };
        if (status.code === 410) throw new GoneError(status.message ?? "Gone");
        throw new KubeApiError(
          status.code ?? 500,
          status.reason ?? "",
          `watch ERROR event: ${status.message ?? ""}`,
        );
      }
      case "ADDED":
      case "MODIFIED":
      case "DELETED": {
        if (e.type === "DELETED") {
          const obj = this.o.transform ? this.o.transform(e.object) : e.object;
          const change = this.cache.apply("DELETED", obj);
          if (change) this.o.onChanges([change]);
        } else this.upsert(e.object);
        // Only once applied: a throw above ends the stream and the next watch delivers it again.
        if (rv) this.resourceVersion = rv;
        return;
      }
    }
  }

  /**
   * Applies an object the API server returned for one of our own writes, as if its watch event had
   * arrived: the reconcile that follows sees what was written instead of the state before it (no
   * write computed from the old state, no 409), and the watch event, when it comes, is a no-op.
   * The watch cursor does not move: it only ever follows the stream. An object the cache no longer
   * holds was deleted meanwhile and is not brought back.
   */
  observe(obj: T): void {
    if (this.handedOn) return;
    const name = obj.metadata?.name;
    if (name && this.cache.get(name)) this.upsert(obj);
  }

  /** Drops one object from the cache without reporting a change (it no longer passes `keep`). */
  forget(name: string): void {
    if (this.handedOn) return;
    this.cache.evict(name);
  }

  /** Evicts every cached object that no longer passes `keep` (after what `keep` reads changed). */
  sweep(): void {
    if (!this.o.keep || this.handedOn) return;
    for (const obj of [...this.cache.values()]) {
      const name = obj.metadata?.name;
      if (name && !this.o.keep(obj)) this.cache.evict(name);
    }
  }

  /** The object as cached, or undefined when the cache does not hold it. */
  private admit(obj: T): T | undefined {
    const t = this.o.transform ? this.o.transform(obj) : obj;
    return this.o.keep && !this.o.keep(t) ? undefined : t;
  }

  private upsert(obj: T): void {
    const t = this.admit(obj);
    if (t === undefined) {
      const name = obj.metadata?.name;
      if (name) this.cache.evict(name);
      return;
    }
    const change = this.cache.apply("MODIFIED", t);
    if (change) this.o.onChanges([change]);
  }
}

/** A sleep that ends early (without throwing) when the signal aborts. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
