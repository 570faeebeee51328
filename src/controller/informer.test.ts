import { describe, expect, it } from "vitest";
import type { WatchEvent } from "../kube/client.js";
import { KubeApiError } from "../kube/errors.js";
import { AGENTS } from "../kube/resources.js";
import { type Change, ObjectCache } from "./cache.js";
import { Informer } from "./informer.js";

type Obj = { metadata: { name: string; resourceVersion: string } };
const obj = (name: string, rv: string): Obj => ({ metadata: { name, resourceVersion: rv } });

/** A scripted API: each watch call takes the next step. */
function fakeClient(
  steps: (WatchEvent<Obj>[] | Error)[],
  listItems: () => { items: Obj[]; resourceVersion: string },
) {
  const calls: string[] = [];
  return {
    calls,
    client: {
      async list() {
        calls.push("list");
        return listItems();
      },
      async watch(
        _r: unknown,
        _ns: string,
        o: { resourceVersion: string },
        onEvent: (e: WatchEvent<Obj>) => void,
      ) {
        calls.push(`watch@${o.resourceVersion}`);
        await new Promise((r) => setImmediate(r));
        const step = steps.shift();
        if (step === undefined) throw new Error("script done");
        if (step instanceof Error) throw step;
        for (const e of step) onEvent(e);
      },
    },
  };
}

async function runUntil(inf: Informer<Obj>, ctrl: AbortController, until: () => boolean) {
  const p = inf.run(ctrl.signal);
  for (let i = 0; i < 1000 && !until(); i++) await new Promise((r) => setImmediate(r));
  ctrl.abort();
  await p;
}

function make(
  fake: ReturnType<typeof fakeClient>,
  sleeps: number[],
  changes: Change<Obj>[],
  reconnects: { n: number },
) {
  let clock = 0;
  return new Informer<Obj>({
    client: fake.client as never,
    resource: AGENTS,
    namespace: "ns",
    pageSize: 2,
    watchTimeoutSeconds: 60,
    backoffBaseMs: 100,
    backoffMaxMs: 1000,
    random: () => 0,
    now: () => (clock += 5000),
    sleep: async (ms) => {
      sleeps.push(ms);
      await new Promise((r) => setImmediate(r));
    },
    onChanges: (c) => changes.push(...c),
    onReconnect: () => reconnects.n++,
  });
}

describe("Informer", () => {
  it("lists once, then resumes each watch from the last resourceVersion seen, bookmarks included", async () => {
    const fake = fakeClient(
      [
        [{ type: "ADDED", object: obj("b", "11") }],
        [{ type: "BOOKMARK", object: obj("", "15") }],
        [{ type: "MODIFIED", object: obj("a", "16") }],
      ],
      () => ({ items: [obj("a", "1")], resourceVersion: "10" }),
    );
    const changes: Change<Obj>[] = [];
    const reconnects = { n: 0 };
    const inf = make(fake, [], changes, reconnects);
    const ctrl = new AbortController();
    await runUntil(inf, ctrl, () => fake.calls.length >= 5);
    expect(fake.calls.slice(0, 5)).toEqual(["list", "watch@10", "watch@11", "watch@15", "watch@16"]);
    expect(changes.map((c) => `${c.type}:${c.name}@${c.object.metadata.resourceVersion}`)).toEqual([
      "upsert:a@1",
      "upsert:b@11",
      "upsert:a@16",
    ]);
    expect(reconnects.n).toBeGreaterThanOrEqual(3);
  });

  it.each([
    ["an HTTP 410", new KubeApiError(410, "Expired", "gone")],
    ["an ERROR event with code 410", [{ type: "ERROR", object: { code: 410, message: "too old" } }] as never],
  ])("re-lists after %s and evicts what vanished meanwhile", async (_n, gone) => {
    let listCall = 0;
    const fake = fakeClient([gone, []], () =>
      ++listCall === 1
        ? { items: [obj("a", "1"), obj("b", "2")], resourceVersion: "5" }
        : { items: [obj("a", "1")], resourceVersion: "50" },
    );
    const changes: Change<Obj>[] = [];
    const sleeps: number[] = [];
    const inf = make(fake, sleeps, changes, { n: 0 });
    await runUntil(inf, new AbortController(), () => fake.calls.length >= 4);
    expect(fake.calls.slice(0, 4)).toEqual(["list", "watch@5", "list", "watch@50"]);
    expect(changes.at(-1)).toMatchObject({ type: "delete", name: "b" });
    expect(sleeps).toEqual([]); // 410 is not an error to back off from
  });

  it("backs off exponentially on real errors and resets after a good stream", async () => {
    const fake = fakeClient(
      [
        new Error("ECONNREFUSED"),
        new KubeApiError(503, "", "unavailable"),
        new Error("tls"),
        [{ type: "ADDED", object: obj("x", "7") }],
        new Error("again"),
      ],
      () => ({ items: [], resourceVersion: "1" }),
    );
    const sleeps: number[] = [];
    const inf = make(fake, sleeps, [], { n: 0 });
    await runUntil(inf, new AbortController(), () => sleeps.length >= 4);
    // random() = 0 keeps half of each step: 100→50, 200→100, 400→200; reset; 100→50
    expect(sleeps.slice(0, 4)).toEqual([50, 100, 200, 50]);
    expect(fake.calls.filter((c) => c === "list")).toHaveLength(1);
  });
});

describe("Informer: a watch reconnect never skips or replays the collection", () => {
  it("an event that could not be applied is delivered again: the cursor moves only once it is applied", async () => {
    const fake = fakeClient(
      [[{ type: "MODIFIED", object: obj("a", "12") }], [{ type: "MODIFIED", object: obj("a", "12") }]],
      () => ({ items: [obj("a", "1")], resourceVersion: "10" }),
    );
    let fail = true;
    const inf = new Informer<Obj>({
      ...STILL_CLOCK,
      client: fake.client as never,
      onChanges: () => {},
      transform: (o) => {
        if (fail && o.metadata.resourceVersion === "12") {
          fail = false;
          throw new Error("cannot read the object");
        }
        return o;
      },
    });
    await runUntil(inf, new AbortController(), () => fake.calls.length >= 3);
    expect(fake.calls.slice(0, 3)).toEqual(["list", "watch@10", "watch@10"]);
    expect(inf.cache.get("a")?.metadata.resourceVersion).toBe("12");
  });

  it("a term resumed from the last one's cache and cursor: brought up to date, every object reported, the watch resumed and counted", async () => {
    const calls: string[] = [];
    const server = new Map([
      ["a", obj("a", "20")], // changed while this replica stood by
      ["c", obj("c", "21")], // created meanwhile
    ]);
    const client = {
      async list(_r: unknown, _ns: string, o: { metadataOnly?: boolean; map?: (x: Obj) => Obj | undefined }) {
        calls.push(o.metadataOnly ? "list-metadata" : "list");
        // Like KubeClient.list: map applied item by item, undefined dropped.
        const items = [...server.values()].map((x) => (o.map ? o.map(structuredClone(x)) : x));
        return { items: items.filter((x) => x !== undefined), resourceVersion: "22" };
      },
      async get(_r: unknown, _ns: string, name: string) {
        calls.push(`get ${name}`);
        return server.get(name);
      },
      async watch(_r: unknown, _ns: string, o: { resourceVersion: string }) {
        calls.push(`watch@${o.resourceVersion}`);
        await new Promise((r) => setImmediate(r));
        throw new Error("script done");
      },
    };
    const kept = new ObjectCache<Obj>();
    kept.apply("ADDED", obj("a", "3"));
    kept.apply("ADDED", obj("b", "4")); // deleted while this replica stood by
    const changes: Change<Obj>[] = [];
    const reconnects = { n: 0 };
    const inf = new Informer<Obj>({
      ...STILL_CLOCK,
      client: client as never,
      onChanges: (c) => changes.push(...c),
      onReconnect: () => reconnects.n++,
      resume: { cache: kept, resourceVersion: "15" },
    });
    await runUntil(inf, new AbortController(), () => calls.some((c) => c.startsWith("watch")));
    expect(calls.slice(0, 4)).toEqual(["list-metadata", "get a", "get c", "watch@15"]);
    expect(
      [...inf.cache.values()].map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`).sort(),
    ).toEqual(["a@20", "c@21"]);
    // The new term's indexes start empty: every object it holds is reported to it.
    const reported = new Set(changes.filter((c) => c.type === "upsert").map((c) => c.name));
    expect([...reported].sort()).toEqual(["a", "c"]);
    expect(reconnects.n).toBeGreaterThanOrEqual(1);
  });
});

/** Informer settings of the cache tests below: one page, a clock that never moves, no waiting. */
const STILL_CLOCK = {
  resource: AGENTS,
  namespace: "ns",
  pageSize: 500,
  watchTimeoutSeconds: 60,
  backoffBaseMs: 100,
  backoffMaxMs: 1000,
  random: () => 0,
  now: () => 0,
  sleep: async () => {},
};

describe("Informer: what the cache holds", () => {
  type Job = { metadata: { name: string; resourceVersion: string }; owner: string; spec?: string };
  const job = (name: string, rv: string, owner: string): Job => ({
    metadata: { name, resourceVersion: rv },
    owner,
    spec: "x".repeat(100),
  });
  const finished = new Set<string>();

  function informer(items: Job[], events: WatchEvent<Job>[]) {
    const changes: Change<Job>[] = [];
    const pages: number[] = [];
    const inf = new Informer<Job>({
      client: {
        async list(_r: unknown, _ns: string, o: { map?: (x: Job) => Job | undefined }) {
          // Like KubeClient.list: map applied item by item, undefined dropped.
          const kept = items
            .map((x) => (o.map ? o.map(structuredClone(x)) : x))
            .filter((x) => x !== undefined);
          pages.push(kept.length);
          return { items: kept as Job[], resourceVersion: "10" };
        },
        async watch(_r: unknown, _ns: string, _o: unknown, onEvent: (e: WatchEvent<Job>) => void) {
          for (const e of events.splice(0)) onEvent(e);
          await new Promise((r) => setImmediate(r));
          throw new Error("script done");
        },
      } as never,
      ...STILL_CLOCK,
      transform: ({ spec: _s, ...rest }) => rest,
      keep: (j) => !finished.has(j.owner),
      onChanges: (c) => changes.push(...c),
    });
    return { inf, changes, pages };
  }

  it("transforms each listed object and leaves out those that fail keep", async () => {
    finished.clear();
    finished.add("done");
    const { inf, changes } = informer([job("j1", "1", "running"), job("j2", "2", "done")], []);
    await inf.list();
    expect([...inf.cache.values()]).toEqual([
      { metadata: { name: "j1", resourceVersion: "1" }, owner: "running" },
    ]);
    expect(changes.map((c) => c.name)).toEqual(["j1"]);
  });

  it("a watch event for an object that no longer passes keep evicts it silently", async () => {
    finished.clear();
    const { inf, changes } = informer(
      [job("j1", "1", "a")],
      [{ type: "MODIFIED", object: job("j1", "5", "a") }],
    );
    inf.resourceVersion = await inf.list();
    finished.add("a");
    const ctrl = new AbortController();
    const p = inf.run(ctrl.signal);
    for (let i = 0; i < 100 && inf.cache.get("j1"); i++) await new Promise((r) => setImmediate(r));
    ctrl.abort();
    await p;
    expect(inf.cache.get("j1")).toBeUndefined();
    expect(inf.resourceVersion).toBe("5");
    expect(changes.map((c) => `${c.type}:${c.name}`)).toEqual(["upsert:j1"]);
  });

  it("sweep evicts what keep now refuses; forget drops one object", async () => {
    finished.clear();
    const { inf, changes } = informer([job("j1", "1", "a"), job("j2", "2", "b"), job("j3", "3", "c")], []);
    await inf.list();
    finished.add("b");
    inf.sweep();
    // A later LIST leaves the refused object out without reporting it gone.
    changes.length = 0;
    await inf.list();
    expect(changes).toEqual([]);
    inf.forget("j3");
    expect([...inf.cache.values()].map((j) => j.metadata.name)).toEqual(["j1"]);
  });

  it("observe applies a written object like its watch event, never backwards, never the cursor", async () => {
    finished.clear();
    const { inf, changes } = informer([job("j1", "4", "a")], []);
    inf.resourceVersion = await inf.list();
    inf.observe(job("j1", "7", "a"));
    expect(inf.cache.get("j1")).toEqual({ metadata: { name: "j1", resourceVersion: "7" }, owner: "a" });
    inf.observe(job("j1", "6", "a")); // older than what the cache holds
    expect(inf.cache.get("j1")?.metadata.resourceVersion).toBe("7");
    inf.observe(job("gone", "8", "a")); // deleted meanwhile: not brought back
    expect(inf.cache.get("gone")).toBeUndefined();
    expect(inf.resourceVersion).toBe("10");
    expect(changes.map((c) => `${c.type}:${c.name}@${c.object.metadata.resourceVersion}`)).toEqual([
      "upsert:j1@4",
      "upsert:j1@7",
    ]);
  });
});

describe("Informer.resync (the poll: metadata LIST, then GET what changed)", () => {
  type Item = { metadata: { name: string; resourceVersion: string; owner?: string }; body?: string };
  const item = (name: string, rv: string, owner?: string): Item => ({
    metadata: { name, resourceVersion: rv, ...(owner ? { owner } : {}) },
    body: `${name}@${rv}`,
  });

  function setup(server: Map<string, Item>, listRv = "100") {
    const calls: string[] = [];
    const changes: string[] = [];
    const inf = new Informer<Item>({
      client: {
        async list(
          _r: unknown,
          _ns: string,
          o: { metadataOnly?: boolean; map?: (x: Item) => Item | undefined },
        ) {
          calls.push(o.metadataOnly ? "list-metadata" : "list");
          // As the real client: `map` sees each item (metadata only or whole) as its page arrives.
          const items = [...server.values()].map((x) => {
            const listed = o.metadataOnly ? { metadata: structuredClone(x.metadata) } : structuredClone(x);
            return o.map ? o.map(listed) : listed;
          });
          return { items: items.filter((x) => x !== undefined) as Item[], resourceVersion: listRv };
        },
        async get(_r: unknown, _ns: string, name: string) {
          calls.push(`get ${name}`);
          return structuredClone(server.get(name));
        },
        async watch() {
          throw new Error("not used");
        },
      } as never,
      ...STILL_CLOCK,
      keep: (x) => x.metadata.owner !== "finished",
      onChanges: (c) =>
        changes.push(...c.map((x) => `${x.type}:${x.name}@${x.object.metadata.resourceVersion}`)),
    });
    return { inf, calls, changes };
  }

  it("reads nothing whole when the cache holds every listed version", async () => {
    const server = new Map([
      ["a", item("a", "1")],
      ["b", item("b", "2")],
    ]);
    const { inf, calls, changes } = setup(server);
    await inf.list();
    calls.length = 0;
    changes.length = 0;
    const held = inf.cache.get("a");
    expect(await inf.resync()).toBe("100");
    expect(calls).toEqual(["list-metadata"]);
    expect(changes).toEqual([]);
    expect(inf.cache.get("a")).toBe(held);
  });

  it("GETs an object whose event was missed, drops one deleted unseen, keeps one created after the LIST", async () => {
    const server = new Map([
      ["a", item("a", "1")],
      ["b", item("b", "2")],
      ["c", item("c", "3")],
    ]);
    const { inf, calls, changes } = setup(server, "50");
    await inf.list();
    calls.length = 0;
    changes.length = 0;
    server.set("a", item("a", "40")); // modified, its event missed
    server.delete("b"); // deleted, its event missed
    inf.observe(item("d", "60")); // not held: observe never adds
    inf.cache.apply("ADDED", item("e", "70")); // created after the LIST's version 50
    await inf.resync();
    expect(calls).toEqual(["list-metadata", "get a"]);
    expect(changes).toEqual(["upsert:a@40", "delete:b@2"]);
    expect(inf.cache.get("a")?.body).toBe("a@40");
    expect(inf.cache.get("e")).toBeDefined();
    expect(inf.resourceVersion).toBe("");
  });

  it("an object deleted between the LIST and its GET is dropped; one `keep` refuses is never fetched", async () => {
    const server = new Map([["a", item("a", "1")]]);
    const { inf, calls, changes } = setup(server);
    await inf.list();
    server.set("a", item("a", "5"));
    server.set("job", item("job", "6", "finished"));
    calls.length = 0;
    changes.length = 0;
    const get = (inf as unknown as { o: { client: { get: (...a: unknown[]) => unknown } } }).o.client.get;
    (inf as unknown as { o: { client: { get: (...a: unknown[]) => unknown } } }).o.client.get = async (
      ...a: unknown[]
    ) => {
      await get(...a);
      return undefined; // 404: gone since the LIST
    };
    await inf.resync();
    expect(calls).toEqual(["list-metadata", "get a"]);
    expect(changes).toEqual(["delete:a@1"]);
    expect(inf.cache.get("job")).toBeUndefined();
  });

  it("keeps nothing of the metadata LIST: each item is compared as its page arrives, then dropped", async () => {
    const server = new Map([
      ["a", item("a", "1")],
      ["b", item("b", "2")],
    ]);
    const { inf, calls } = setup(server);
    await inf.list();
    server.set("b", item("b", "3"));
    const kept: unknown[] = [];
    type ListOpts = { map?: (x: Item) => Item | undefined };
    type List = (r: unknown, ns: string, o: ListOpts) => Promise<unknown>;
    const client = (inf as unknown as { o: { client: { list: List } } }).o.client;
    const list = client.list;
    client.list = async (r, ns, o) =>
      list(r, ns, {
        ...o,
        map: (x: Item) => {
          const out = o.map?.(x);
          kept.push(out);
          return out;
        },
      });
    calls.length = 0;
    await inf.resync();
    expect(kept).toHaveLength(2);
    expect(kept.every((x) => x === undefined)).toBe(true);
    expect(calls).toEqual(["list-metadata", "get b"]);
    expect(inf.cache.get("b")?.body).toBe("b@3");
  });

  it("falls back to the full LIST when more objects changed than it has pages", async () => {
    const server = new Map(Array.from({ length: 20 }, (_, i) => [`o${i}`, item(`o${i}`, "1")]));
    const { inf, calls, changes } = setup(server);
    await inf.list();
    for (const k of server.keys()) server.set(k, item(k, "2"));
    calls.length = 0;
    changes.length = 0;
    await inf.resync();
    expect(calls).toEqual(["list-metadata", "list"]);
    expect(changes).toHaveLength(20);
  });
});

/** A watch that stays open until the informer stops (a quiet collection, no timeout yet). */
function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((r) => {
    if (signal.aborted) r();
    else signal.addEventListener("abort", () => r(), { once: true });
  });
}

describe("Informer: every ended watch resumes from its cursor and counts once (docs/controller.md#watch-poll-and-cache)", () => {
  /** Watches that end as scripted, then one that stays open until the informer stops. */
  function endingWatches(ends: (WatchEvent<Obj>[] | Error)[]) {
    const calls: string[] = [];
    const client = {
      async list() {
        calls.push("list");
        return { items: [obj("a", "1")], resourceVersion: "10" };
      },
      async watch(
        _r: unknown,
        _ns: string,
        o: { resourceVersion: string; signal: AbortSignal },
        onEvent: (e: WatchEvent<Obj>) => void,
      ) {
        calls.push(`watch@${o.resourceVersion}`);
        await new Promise((r) => setImmediate(r));
        const step = ends.shift();
        if (step === undefined) return untilAborted(o.signal);
        if (step instanceof Error) throw step;
        for (const e of step) onEvent(e);
      },
    };
    return { calls, client };
  }

  it("a watch ended by the server, by a bookmark-only stream, by a dropped connection or by the client's silence limit: each next WATCH starts at the last resourceVersion seen and each end counts once", async () => {
    const dropped = Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" });
    const silent = Object.assign(new Error("Body Timeout Error"), { code: "UND_ERR_BODY_TIMEOUT" });
    const fake = endingWatches([
      [{ type: "ADDED", object: obj("b", "11") }], // the server's timeoutSeconds
      [{ type: "BOOKMARK", object: obj("", "15") }], // a quiet collection: only a bookmark
      dropped,
      silent,
      [], // ended at once with nothing in it
    ]);
    const reconnects = { n: 0 };
    const inf = new Informer<Obj>({
      ...STILL_CLOCK,
      client: fake.client as never,
      onChanges: () => {},
      onReconnect: () => reconnects.n++,
    });
    await runUntil(inf, new AbortController(), () => fake.calls.length >= 7);
    expect(fake.calls).toEqual([
      "list",
      "watch@10",
      "watch@11",
      "watch@15",
      "watch@15",
      "watch@15",
      "watch@15",
    ]);
    // Five watches ended and were re-opened; the sixth was still open when the informer stopped.
    expect(reconnects.n).toBe(5);
  });

  it("a failed LIST opened no watch: it is retried, not counted as a reconnect", async () => {
    let lists = 0;
    const calls: string[] = [];
    const reconnects = { n: 0 };
    const inf = new Informer<Obj>({
      ...STILL_CLOCK,
      client: {
        async list() {
          calls.push("list");
          if (++lists < 3) throw new KubeApiError(503, "", "unavailable");
          return { items: [], resourceVersion: "10" };
        },
        async watch(_r: unknown, _ns: string, o: { resourceVersion: string; signal: AbortSignal }) {
          calls.push(`watch@${o.resourceVersion}`);
          return untilAborted(o.signal);
        },
      } as never,
      onChanges: () => {},
      onReconnect: () => reconnects.n++,
    });
    await runUntil(inf, new AbortController(), () => calls.includes("watch@10"));
    expect(calls).toEqual(["list", "list", "list", "watch@10"]);
    expect(reconnects.n).toBe(0);
  });

  /** A resumed term's client: the metadata LIST answers as `listed` says, the watch stays open. */
  function resumingClient(listed: () => Promise<void>) {
    const calls: string[] = [];
    const client = {
      async list(_r: unknown, _ns: string, o: { metadataOnly?: boolean; signal?: AbortSignal }) {
        calls.push(o.metadataOnly ? "list-metadata" : "list");
        await listed();
        return { items: [], resourceVersion: "30" };
      },
      async get() {
        return undefined;
      },
      async watch(_r: unknown, _ns: string, o: { resourceVersion: string; signal: AbortSignal }) {
        calls.push(`watch@${o.resourceVersion}`);
        return untilAborted(o.signal);
      },
    };
    return { calls, client };
  }

  it("a resumed term stopped before it caught up hands the last term's cache and cursor on: the next term resumes the watch from that cursor instead of re-listing", async () => {
    const kept = new ObjectCache<Obj>();
    kept.apply("ADDED", obj("a", "3"));
    // Leadership is lost again while the API server is slow: the catch-up's LIST never answers.
    const stalled = new AbortController();
    const second = resumingClient(
      () =>
        new Promise<void>((_, reject) =>
          stalled.signal.addEventListener("abort", () => reject(new Error("aborted"))),
        ),
    );
    const term2 = new Informer<Obj>({
      ...STILL_CLOCK,
      client: second.client as never,
      onChanges: () => {},
      resume: { cache: kept, resourceVersion: "15" },
    });
    const stop2 = new AbortController();
    stop2.signal.addEventListener("abort", () => stalled.abort());
    await runUntil(term2, stop2, () => second.calls.length >= 1);
    expect(second.calls).toEqual(["list-metadata"]);
    const handed = term2.handOn();
    expect(handed?.resourceVersion).toBe("15");
    expect(handed?.cache.get("a")?.metadata.resourceVersion).toBe("3");

    const third = resumingClient(async () => {});
    const reconnects = { n: 0 };
    const term3 = new Informer<Obj>({
      ...STILL_CLOCK,
      client: third.client as never,
      onChanges: () => {},
      onReconnect: () => reconnects.n++,
      resume: handed,
    });
    await runUntil(term3, new AbortController(), () => third.calls.some((c) => c.startsWith("watch")));
    expect(third.calls).toEqual(["list-metadata", "watch@15"]);
    expect(reconnects.n).toBe(1);
  });

  it("a stopped term hands its cache and cursor on once its loop has ended, whatever its reconciles still do; their late writes are ignored", async () => {
    const fake = resumingClient(async () => {});
    const inf = new Informer<Obj>({
      ...STILL_CLOCK,
      client: {
        ...fake.client,
        async list() {
          return { items: [obj("a", "1"), obj("b", "2")], resourceVersion: "10" };
        },
      } as never,
      onChanges: () => {},
      keep: (o) => o.metadata.name !== "b" || o.metadata.resourceVersion === "2",
    });
    const stop = new AbortController();
    const running = inf.run(stop.signal);
    for (let i = 0; i < 100 && !fake.calls.includes("watch@10"); i++)
      await new Promise((r) => setImmediate(r));
    // The loop still runs: its cache is still being written.
    expect(inf.handOn()).toBeUndefined();
    stop.abort();
    await running;
    const handed = inf.handOn();
    expect(handed?.resourceVersion).toBe("10");
    // A reconcile of the old term, still in flight, writes through, forgets, sweeps: the cache is
    // the next term's now, and only its own informer changes it.
    inf.observe(obj("a", "12"));
    inf.forget("a");
    inf.cache.apply("MODIFIED", obj("b", "3"));
    inf.sweep();
    expect(
      [...(handed?.cache.values() ?? [])]
        .map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`)
        .sort(),
    ).toEqual(["a@1", "b@3"]);
  });

  it("a resumed term whose catch-up failed first counts its resumed watch once", async () => {
    let attempts = 0;
    const fake = resumingClient(async () => {
      if (++attempts === 1) throw new KubeApiError(503, "", "unavailable");
    });
    const reconnects = { n: 0 };
    const kept = new ObjectCache<Obj>();
    const inf = new Informer<Obj>({
      ...STILL_CLOCK,
      client: fake.client as never,
      onChanges: () => {},
      onReconnect: () => reconnects.n++,
      resume: { cache: kept, resourceVersion: "15" },
    });
    await runUntil(inf, new AbortController(), () => fake.calls.includes("watch@15"));
    expect(fake.calls).toEqual(["list-metadata", "list-metadata", "watch@15"]);
    expect(reconnects.n).toBe(1);
  });
});
