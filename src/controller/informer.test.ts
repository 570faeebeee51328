import { describe, expect, it } from "vitest";
import type { Change } from "./cache.js";
import { Informer } from "./informer.js";
import type { WatchEvent } from "./kube/client.js";
import { KubeApiError } from "./kube/errors.js";
import { AGENTS } from "./kube/resources.js";

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
