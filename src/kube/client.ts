/**
 * A small Kubernetes API client over undici: exactly the verbs the controller uses, each with the
 * failure semantics the seed asks for (idempotent create, conflict-guarded status writes,
 * single-entry finalizer patches, best-effort log reads).
 *
 * Configuration and authentication come from access.ts (kubeconfig or in-cluster), or from
 * @kubernetes/client-node's KubeConfig for what that does not read; undici carries the requests so
 * watch streams get precise timeouts.
 */
import { StringDecoder } from "node:string_decoder";
import type { KubeConfig } from "@kubernetes/client-node";
import { Agent, type Dispatcher } from "undici";
import { loadKubeAccess } from "./access.js";
import { KubeApiError, parseRetryAfter } from "./errors.js";
import { decodeMetadataPage, decodeStatus, isKubernetesProtobuf } from "./metadata-protobuf.js";
import { type Resource, resourcePath } from "./resources.js";

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

export interface WatchEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: T;
}

export type JsonPatchOp =
  | { op: "test"; path: string; value: unknown }
  | { op: "add"; path: string; value: unknown }
  | { op: "remove"; path: string }
  | { op: "replace"; path: string; value: unknown };

/** The outcome of a guarded write. */
export type WriteOutcome = "ok" | "conflict" | "not_found";

export interface KubeClientOptions {
  server: string;
  dispatcher: Dispatcher;
  /** Auth headers; called per request so rotated tokens are picked up. */
  headers: () => Promise<Record<string, string>>;
  /** Per-request timeout for everything but watches. */
  requestTimeoutMs?: number;
}

interface RequestOpts {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** Extra time beyond the server-side timeout before the client gives up on a silent socket. */
  bodyTimeoutMs?: number;
  signal?: AbortSignal;
  /** The Accept header (default application/json). */
  accept?: string;
}

/** Asks a LIST for metadata only: `PartialObjectMetadataList` (kube-apiserver ≥ 1.15, any resource). */
export const METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/**
 * The same in Kubernetes protobuf, which kube-apiserver serves for custom resources too (the list
 * type is a built-in meta type): decoded by metadata-protobuf.ts, which skips managedFields unread.
 * JSON follows as the second choice, for a server or proxy that does not speak protobuf.
 */
export const METADATA_ONLY_PROTOBUF = `application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, ${METADATA_ONLY}`;

export class KubeClient {
  /** Every request issued, for the benchmark's requests-per-Agent figure. */
  requestCount = 0;
  /** Metadata-only LIST pages that came back in protobuf (the rest came back in JSON). */
  protobufPages = 0;
  /**
   * How metadata-only LIST pages are asked for: "protobuf" (JSON stays acceptable, and a server
   * that answers JSON is parsed as JSON) or "json" only (the tests' reference path).
   */
  metadataEncoding: "protobuf" | "json" = "protobuf";
  private readonly requestTimeoutMs: number;

  constructor(private readonly opts: KubeClientOptions) {
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
  }

  static async fromKubeConfig(kc: KubeConfig, requestTimeoutMs?: number): Promise<KubeClient> {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error("kubeconfig has no current cluster");
    const tls: Record<string, unknown> = {};
    await kc.applyToHTTPSOptions(tls as never);
    const connect: Record<string, unknown> = {};
    for (const k of ["ca", "cert", "key", "pfx", "passphrase", "servername"] as const) {
      if (tls[k] !== undefined) connect[k] = tls[k];
    }
    if (cluster.skipTLSVerify) connect.rejectUnauthorized = false;
    const dispatcher = new Agent({ connect, keepAliveTimeout: 30_000, connections: 64 });
    let cached: { at: number; headers: Record<string, string> } | undefined;
    const headers = async () => {
      // Re-read credentials every minute: in-cluster tokens are rotated on disk.
      if (!cached || Date.now() - cached.at > 60_000) {
        const o: { headers?: Record<string, string> } = {};
        await kc.applyToHTTPSOptions(o as never);
        const h: Record<string, string> = {};
        for (const [k, v] of Object.entries(o.headers ?? {})) if (typeof v === "string") h[k] = v;
        cached = { at: Date.now(), headers: h };
      }
      return cached.headers;
    };
    return new KubeClient({
      server: cluster.server.replace(/\/$/, ""),
      dispatcher,
      headers,
      requestTimeoutMs,
    });
  }

  /**
   * The client `npm run controller` and the image use: the kubeconfig or the in-cluster service
   * account read by access.ts, or, for what that does not read (auth plugins, proxies, …),
   * @kubernetes/client-node's KubeConfig, loaded only then.
   */
  static async fromEnvironment(requestTimeoutMs?: number): Promise<KubeClient> {
    const access = loadKubeAccess();
    if (!access) {
      const { KubeConfig } = await import("@kubernetes/client-node");
      const kc = new KubeConfig();
      kc.loadFromDefault();
      return KubeClient.fromKubeConfig(kc, requestTimeoutMs);
    }
    return new KubeClient({
      server: access.server,
      dispatcher: new Agent({ connect: access.tls, keepAliveTimeout: 30_000, connections: 64 }),
      headers: async () => access.headers(),
      requestTimeoutMs,
    });
  }

  async close(): Promise<void> {
    await this.opts.dispatcher.close();
  }

  private url(path: string, query?: RequestOpts["query"]): string {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== "") qs.set(k, String(v));
    const s = qs.toString();
    return `${this.opts.server}${path}${s ? `?${s}` : ""}`;
  }

  private async send(method: Dispatcher.HttpMethod, path: string, o: RequestOpts = {}) {
    this.requestCount++;
    const headers: Record<string, string> = {
      ...(await this.opts.headers()),
      accept: o.accept ?? "application/json",
    };
    let body: string | undefined;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers["content-type"] = o.contentType ?? "application/json";
    }
    const url = new URL(this.url(path, o.query));
    return this.opts.dispatcher.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method,
      headers,
      body,
      headersTimeout: this.requestTimeoutMs,
      bodyTimeout: o.bodyTimeoutMs ?? this.requestTimeoutMs,
      signal: o.signal,
    });
  }

  /** Sends a request and returns the parsed JSON body; non-2xx throws KubeApiError. */
  async request<T>(method: Dispatcher.HttpMethod, path: string, o: RequestOpts = {}): Promise<T> {
    const res = await this.send(method, path, o);
    const text = await res.body.text();
    if (res.statusCode >= 300) {
      throw toError(res.statusCode, text, `${method} ${path}`, res.headers["retry-after"]);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /**
   * GET one object; undefined when the API server says the object does not exist (404 NotFound).
   * A 404 without that Status (the resource type itself is not served, as for a CRD in the seconds
   * after an API-server restart) throws: "no Station" or "Job garbage-collected" would be a lie.
   */
  async get<T>(r: Resource, ns: string, name: string, signal?: AbortSignal): Promise<T | undefined> {
    try {
      return await this.request<T>("GET", resourcePath(r, ns, name), { signal });
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404 && e.reason === "NotFound") return undefined;
      throw e;
    }
  }

  /**
   * Full LIST, page by page (limit/continue); the resourceVersion is the first page's. `map` is
   * applied to each item as its page arrives (undefined drops it), so a caller that keeps only part
   * of each object never holds more than one page of whole ones.
   */
  async list<T>(
    r: Resource,
    ns: string,
    o: {
      labelSelector?: string;
      limit?: number;
      signal?: AbortSignal;
      map?: (item: T) => T | undefined;
      /** Each item is then `{metadata}` only (PartialObjectMetadata): the poll's cheap LIST. */
      metadataOnly?: boolean;
    } = {},
  ): Promise<ListResult<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let resourceVersion = "";
    do {
      const req = {
        query: { limit: o.limit ?? 500, continue: cont, labelSelector: o.labelSelector },
        signal: o.signal,
      };
      const page = o.metadataOnly
        ? ((await this.metadataPage(resourcePath(r, ns), req)) as ListPage<T>)
        : await this.request<ListPage<T>>("GET", resourcePath(r, ns), req);
      for (const it of page.items ?? []) {
        const kept = o.map ? o.map(it) : it;
        if (kept !== undefined) items.push(kept);
      }
      if (!resourceVersion) resourceVersion = page.metadata?.resourceVersion ?? "";
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return { items, resourceVersion };
  }

  /**
   * One page of a metadata-only LIST, in protobuf when the server answers so (checked by its
   * Content-Type), else in JSON. Errors throw KubeApiError as `request` does, whichever encoding
   * the Status came in (kube-apiserver answers them in JSON to this Accept).
   */
  private async metadataPage(path: string, o: RequestOpts): Promise<ListPage<unknown>> {
    const protobuf = this.metadataEncoding === "protobuf";
    const res = await this.send("GET", path, {
      ...o,
      accept: protobuf ? METADATA_ONLY_PROTOBUF : METADATA_ONLY,
    });
    const contentType = res.headers["content-type"];
    const inProtobuf = isKubernetesProtobuf(Array.isArray(contentType) ? contentType[0] : contentType);
    if (!inProtobuf) {
      const text = await res.body.text();
      if (res.statusCode >= 300)
        throw toError(res.statusCode, text, `GET ${path}`, res.headers["retry-after"]);
      return JSON.parse(text) as ListPage<unknown>;
    }
    const body = Buffer.from(await res.body.arrayBuffer());
    if (res.statusCode >= 300) {
      let text: string;
      try {
        text = JSON.stringify(decodeStatus(body));
      } catch (e) {
        text = `(a protobuf Status this client could not read: ${String(e)})`;
      }
      throw toError(res.statusCode, text, `GET ${path}`, res.headers["retry-after"]);
    }
    this.protobufPages++;
    return decodeMetadataPage(body);
  }

  /**
   * One watch request from `resourceVersion` with bookmarks on; calls `onEvent` for each event
   * and resolves when the server ends the stream (its timeoutSeconds). A non-2xx answer throws
   * KubeApiError (410 means the cursor was compacted away).
   */
  async watch<T>(
    r: Resource,
    ns: string,
    o: { resourceVersion: string; timeoutSeconds: number; labelSelector?: string; signal?: AbortSignal },
    onEvent: (e: WatchEvent<T>) => void,
  ): Promise<void> {
    const res = await this.send("GET", resourcePath(r, ns), {
      query: {
        watch: 1,
        allowWatchBookmarks: true,
        resourceVersion: o.resourceVersion,
        timeoutSeconds: o.timeoutSeconds,
        labelSelector: o.labelSelector,
      },
      // A half-open socket delivers nothing; bookmarks arrive about once a minute, so silence
      // well past the server's own timeout means the connection is dead.
      bodyTimeoutMs: (o.timeoutSeconds + 30) * 1000,
      signal: o.signal,
    });
    if (res.statusCode >= 300) {
      throw toError(res.statusCode, await res.body.text(), `WATCH ${r.plural}`);
    }
    let buf = "";
    res.body.setEncoding("utf8");
    for await (const chunk of res.body) {
      buf += chunk as string;
      let nl = buf.indexOf("\n");
      while (nl >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) onEvent(JSON.parse(line) as WatchEvent<T>);
        nl = buf.indexOf("\n");
      }
    }
    if (buf.trim()) onEvent(JSON.parse(buf) as WatchEvent<T>);
  }

  /** POST; 409 AlreadyExists returns the existing object with created=false. */
  async create<T extends { metadata?: { name?: string } }>(
    r: Resource,
    ns: string,
    obj: T,
    signal?: AbortSignal,
  ): Promise<{ created: boolean; object: T | undefined }> {
    try {
      return {
        created: true,
        object: await this.request<T>("POST", resourcePath(r, ns), { body: obj, signal }),
      };
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 409 && e.reason === "AlreadyExists") {
        const name = obj.metadata?.name;
        return { created: false, object: name ? await this.get<T>(r, ns, name) : undefined };
      }
      throw e;
    }
  }

  /** PUT of a whole object; its metadata.resourceVersion is the precondition. */
  async replace<T>(r: Resource, ns: string, name: string, obj: T, signal?: AbortSignal): Promise<T> {
    return this.request<T>("PUT", resourcePath(r, ns, name), { body: obj, signal });
  }

  /**
   * Merge patch of the object; a `metadata.resourceVersion` inside the patch makes the API server
   * refuse it with 409 when the object changed since that version. Throws on any error. Needs only
   * the `patch` verb, which is why leader election renews the Lease with it rather than a PUT.
   */
  async mergePatch<T>(
    r: Resource,
    ns: string,
    name: string,
    patch: unknown,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.request<T>("PATCH", resourcePath(r, ns, name), {
      body: patch,
      contentType: "application/merge-patch+json",
      signal,
    });
  }

  /**
   * Merge-patch of the status subresource guarded by `resourceVersion`: a 409 means our read was
   * stale, so the write is dropped ("conflict") for the next reconcile to recompute. `written`
   * receives the object as the API server stored it. A 422 (a value the schema refuses) is thrown.
   */
  async patchStatus(
    r: Resource,
    ns: string,
    name: string,
    resourceVersion: string,
    status: Record<string, unknown>,
    written?: (object: unknown) => void,
  ): Promise<WriteOutcome> {
    // A merge patch reports a stale resourceVersion as 409; its 422 is the schema refusing a
    // value, which no retry of the same status cures: thrown, for the caller to mend the status.
    return this.guarded(
      async () => {
        const object = await this.request("PATCH", resourcePath(r, ns, name, "status"), {
          body: { metadata: { resourceVersion }, status },
          contentType: "application/merge-patch+json",
        });
        if (object !== undefined) written?.(object);
      },
      { invalidIsConflict: false },
    );
  }

  /** JSON patch (application/json-patch+json); a failed `test` (422) or 409 is a conflict. */
  async jsonPatch(r: Resource, ns: string, name: string, ops: JsonPatchOp[]): Promise<WriteOutcome> {
    return this.guarded(() =>
      this.request("PATCH", resourcePath(r, ns, name), {
        body: ops,
        contentType: "application/json-patch+json",
      }),
    );
  }

  /**
   * Adds one finalizer, touching no other entry: the patch first `test`s that the list is still
   * what we read (or, when there was none, that the object is unchanged), so a concurrent edit by
   * another controller makes it a conflict instead of being overwritten.
   */
  async addFinalizer(
    r: Resource,
    ns: string,
    name: string,
    seen: { finalizers?: string[]; resourceVersion?: string },
    finalizer: string,
  ): Promise<WriteOutcome> {
    const current = seen.finalizers ?? [];
    if (current.includes(finalizer)) return "ok";
    const ops: JsonPatchOp[] =
      current.length > 0
        ? [
            { op: "test", path: "/metadata/finalizers", value: current },
            { op: "add", path: "/metadata/finalizers/-", value: finalizer },
          ]
        : [
            { op: "test", path: "/metadata/resourceVersion", value: seen.resourceVersion ?? "" },
            { op: "add", path: "/metadata/finalizers", value: [finalizer] },
          ];
    return this.jsonPatch(r, ns, name, ops);
  }

  /** Removes one finalizer by index after testing that the index still holds it. */
  async removeFinalizer(
    r: Resource,
    ns: string,
    name: string,
    current: string[] | undefined,
    finalizer: string,
  ): Promise<WriteOutcome> {
    const i = current?.indexOf(finalizer) ?? -1;
    if (i < 0) return "ok";
    return this.jsonPatch(r, ns, name, [
      { op: "test", path: `/metadata/finalizers/${i}`, value: finalizer },
      { op: "remove", path: `/metadata/finalizers/${i}` },
    ]);
  }

  /** DELETE; true if deleted or already gone, false when a precondition failed (409). */
  async delete(
    r: Resource,
    ns: string,
    name: string,
    o: {
      propagationPolicy?: "Background" | "Foreground" | "Orphan";
      uid?: string;
      resourceVersion?: string;
    } = {},
  ): Promise<boolean> {
    const body: Record<string, unknown> = { kind: "DeleteOptions", apiVersion: "v1" };
    if (o.propagationPolicy) body.propagationPolicy = o.propagationPolicy;
    if (o.uid || o.resourceVersion) {
      body.preconditions = {
        ...(o.uid ? { uid: o.uid } : {}),
        ...(o.resourceVersion ? { resourceVersion: o.resourceVersion } : {}),
      };
    }
    try {
      await this.request("DELETE", resourcePath(r, ns, name), { body });
      return true;
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return true;
      if (e instanceof KubeApiError && e.status === 409) return false;
      throw e;
    }
  }

  /**
   * A container's log, at most `limitBytes` from its start (the kubelet counts limitBytes from the
   * beginning of the log; `tailLines` first picks the last lines). Undefined when the pod or the
   * container's log does not exist (404) or the container never started (400); any other failure
   * (5xx, throttling, RBAC, network, timeout) throws, so the caller can retry instead of mistaking
   * a sick API server or kubelet for a garbage-collected pod. `timestamps`: each line prefixed with
   * the time the runtime wrote it (RFC 3339, nanoseconds) and a space.
   */
  async readLog(
    ns: string,
    pod: string,
    container: string,
    o: { limitBytes?: number; tailLines?: number; timestamps?: boolean } = {},
  ): Promise<string | undefined> {
    const path = `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(pod)}/log`;
    const res = await this.send("GET", path, {
      query: {
        container,
        limitBytes: o.limitBytes,
        tailLines: o.tailLines,
        timestamps: o.timestamps || undefined,
      },
    });
    const text = await res.body.text();
    if (res.statusCode < 300) return text;
    if (res.statusCode === 404 || res.statusCode === 400) return undefined;
    throw toError(res.statusCode, text, `GET ${path}`, res.headers["retry-after"]);
  }

  /**
   * A container's whole log, streamed to `onChunk` as it arrives (no limitBytes: the caller bounds
   * what it keeps). False when the pod or the container's log does not exist (404, 400); other
   * failures throw, as readLog's do.
   */
  async streamLog(
    ns: string,
    pod: string,
    container: string,
    onChunk: (text: string) => void | Promise<void>,
  ): Promise<boolean> {
    const path = `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(pod)}/log`;
    const res = await this.send("GET", path, { query: { container } });
    if (res.statusCode >= 300) {
      const text = await res.body.text();
      if (res.statusCode === 404 || res.statusCode === 400) return false;
      throw toError(res.statusCode, text, `GET ${path}`, res.headers["retry-after"]);
    }
    // The body yields Buffers whatever its encoding: decoded here, a character split across two
    // chunks kept whole, so the reader gets text.
    const decoder = new StringDecoder("utf8");
    let sinceYield = 0;
    for await (const raw of res.body) {
      const chunk = typeof raw === "string" ? raw : decoder.write(raw as Buffer);
      if (chunk === "") continue;
      // The reader may take its time (it yields to the event loop itself): the body waits for it.
      await onChunk(chunk);
      // Chunks already buffered resolve as microtasks: yield to timers and I/O now and then, so a
      // long log never holds the event loop (Lease renewal, /healthz, the webhook).
      sinceYield += chunk.length;
      if (sinceYield >= STREAM_YIELD_CHARS) {
        sinceYield = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
    const rest = decoder.end();
    if (rest !== "") await onChunk(rest);
    return true;
  }

  private async guarded(
    write: () => Promise<unknown>,
    opts: { invalidIsConflict: boolean } = { invalidIsConflict: true },
  ): Promise<WriteOutcome> {
    try {
      await write();
      return "ok";
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 409) return "conflict";
      if (e instanceof KubeApiError && e.status === 422 && opts.invalidIsConflict) return "conflict";
      if (e instanceof KubeApiError && e.status === 404) return "not_found";
      throw e;
    }
  }
}

interface ListPage<T> {
  items: T[];
  metadata: { resourceVersion?: string; continue?: string };
}

/** How much of a streamed log is handed on between two yields to the event loop. */
const STREAM_YIELD_CHARS = 256 * 1024;

function toError(status: number, text: string, what: string, retryAfter?: string | string[]): KubeApiError {
  let reason = "";
  let message = text.slice(0, 500);
  try {
    const s = JSON.parse(text) as { reason?: string; message?: string };
    reason = s.reason ?? "";
    message = s.message ?? message;
  } catch {
    // not a Status object
  }
  return new KubeApiError(
    status,
    reason,
    `${what}: ${status} ${reason} ${message}`.trim(),
    message.trim(),
    parseRetryAfter(retryAfter, Date.now()),
  );
}
