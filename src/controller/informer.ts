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
import { Backoff } from "./backoff.js";
import { type Change, type KubeObject, ObjectCache } from "./cache.js";
import type { KubeClient, WatchEvent } from "./kube/client.js";
import { KubeApiError } from "./kube/errors.js";
import type { Resource } from "./kube/resources.js";

export interface InformerOptions<T extends KubeObject> {
  client: Pick<KubeClient, "list" | "watch">;
  resource: Resource;
  namespace: string;
  labelSelector?: string;
  pageSize: number;
  watchTimeoutSeconds: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  random: () => number;
  now: () => number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  onChanges: (changes: Change<T>[]) => void;
  /** Applied to every object before it is cached (e.g. to drop fields the controller never reads). */
  transform?: (obj: T) => T;
  onList?: () => void;
  onReconnect?: () => void;
  log?: (msg: string) => void;
}

class GoneError extends Error {}

export class Informer<T extends KubeObject> {
  readonly cache = new ObjectCache<T>();
  /** The watch cursor; empty means "re-list before watching". */
  resourceVersion = "";
  synced = false;
  private readonly backoff: Backoff;

  constructor(private readonly o: InformerOptions<T>) {
    this.backoff = new Backoff({ baseMs: o.backoffBaseMs, maxMs: o.backoffMaxMs, random: o.random });
  }

  /** A full paginated LIST that refreshes the cache; returns the LIST's resourceVersion. */
  async list(signal?: AbortSignal): Promise<string> {
    const res = await this.o.client.list<T>(this.o.resource, this.o.namespace, {
      labelSelector: this.o.labelSelector,
      limit: this.o.pageSize,
      signal,
    });
    this.o.onList?.();
    const items = this.o.transform ? res.items.map(this.o.transform) : res.items;
    const changes = this.cache.replace(items, res.resourceVersion);
    this.synced = true;
    if (changes.length > 0) this.o.onChanges(changes);
    return res.resourceVersion;
  }

  /** Runs until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let events = 0;
      const started = this.o.now();
      try {
        if (!this.resourceVersion) this.resourceVersion = await this.list(signal);
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
        this.o.onReconnect?.();
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
        const change = this.cache.apply(e.type, this.o.transform ? this.o.transform(e.object) : e.object);
        if (rv) this.resourceVersion = rv;
        if (change) this.o.onChanges([change]);
        return;
      }
    }
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
