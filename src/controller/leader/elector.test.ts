import { describe, expect, it } from "vitest";
import { KubeApiError } from "../../kube/errors.js";
import { LeaderElector, microTime } from "./elector.js";

type Lease = { metadata: { name: string; resourceVersion?: string }; spec: Record<string, unknown> };

/** An in-memory Lease store with the API server's resourceVersion semantics. */
function fakeStore() {
  let lease: Lease | undefined;
  let rv = 0;
  let down = false;
  const client = {
    async get() {
      if (down) throw new Error("ECONNREFUSED");
      return lease ? structuredClone(lease) : undefined;
    },
    async create(_r: unknown, _ns: string, obj: Lease) {
      if (down) throw new Error("ECONNREFUSED");
      if (lease) return { created: false, object: structuredClone(lease) };
      lease = { ...structuredClone(obj), metadata: { ...obj.metadata, resourceVersion: String(++rv) } };
      return { created: true, object: lease };
    },
    // A merge patch whose metadata.resourceVersion must match, as the API server enforces it.
    async mergePatch(_r: unknown, _ns: string, _name: string, patch: Lease) {
      if (down) throw new Error("ECONNREFUSED");
      if (!lease || patch.metadata.resourceVersion !== lease.metadata.resourceVersion) {
        throw new KubeApiError(409, "Conflict", "the object has been modified");
      }
      lease = {
        metadata: { ...lease.metadata, resourceVersion: String(++rv) },
        spec: { ...lease.spec, ...structuredClone(patch.spec) },
      };
      return lease;
    },
  };
  return {
    client,
    get lease() {
      return lease;
    },
    setDown(v: boolean) {
      down = v;
    },
  };
}

function elector(
  store: ReturnType<typeof fakeStore>,
  identity: string,
  clock: { t: number },
  events: string[],
) {
  return new LeaderElector({
    client: store.client as never,
    namespace: "ns",
    identity,
    leaseDurationMs: 15_000,
    tickMs: 5_000,
    now: () => clock.t,
    sleep: async () => {},
    onStartedLeading: () => events.push(`${identity}:lead`),
    onStoppedLeading: () => events.push(`${identity}:stop`),
  });
}

describe("LeaderElector", () => {
  it("creates the Lease, renews it, and keeps the standby idle while renewals continue", async () => {
    const store = fakeStore();
    const clock = { t: 1_000_000 };
    const events: string[] = [];
    const a = elector(store, "a", clock, events);
    const b = elector(store, "b", clock, events);
    await a.tick();
    await b.tick();
    expect(a.isLeader).toBe(true);
    expect(b.isLeader).toBe(false);
    expect(store.lease?.spec).toMatchObject({
      holderIdentity: "a",
      leaseDurationSeconds: 15,
      leaseTransitions: 0,
    });
    for (let i = 0; i < 10; i++) {
      clock.t += 5_000;
      await a.tick();
      await b.tick();
    }
    expect(a.isLeader).toBe(true);
    expect(b.isLeader).toBe(false);
    expect(events).toEqual(["a:lead"]);
  });

  it("hands over once the leader stops renewing for the lease duration, by the standby's clock", async () => {
    const store = fakeStore();
    const clock = { t: 0 };
    const events: string[] = [];
    const a = elector(store, "a", clock, events);
    const b = elector(store, "b", clock, events);
    await a.tick();
    await b.tick(); // b first sees a's renewTime at t=0
    for (const t of [5_000, 10_000]) {
      clock.t = t;
      await b.tick();
      expect(b.isLeader).toBe(false);
    }
    clock.t = 15_000;
    await b.tick();
    expect(b.isLeader).toBe(true);
    expect(store.lease?.spec).toMatchObject({ holderIdentity: "b", leaseTransitions: 1 });
    // The old leader's next renewal reads b's Lease and steps down.
    await a.tick();
    expect(a.isLeader).toBe(false);
    expect(events).toEqual(["a:lead", "b:lead", "a:stop"]);
  });

  it("lets only one of two standbys win a simultaneous takeover (resourceVersion guard)", async () => {
    const store = fakeStore();
    const clock = { t: 0 };
    const events: string[] = [];
    const a = elector(store, "a", clock, events);
    const b = elector(store, "b", clock, events);
    const c = elector(store, "c", clock, events);
    await a.tick();
    await b.tick();
    await c.tick();
    clock.t = 20_000;
    await Promise.all([b.tick(), c.tick()]);
    expect([b.isLeader, c.isLeader].filter(Boolean)).toHaveLength(1);
  });

  it("steps down at once when a renewal cannot reach the API server", async () => {
    const store = fakeStore();
    const clock = { t: 0 };
    const events: string[] = [];
    const a = elector(store, "a", clock, events);
    await a.tick();
    store.setDown(true);
    clock.t = 5_000;
    await a.tick();
    expect(a.isLeader).toBe(false);
    expect(events).toEqual(["a:lead", "a:stop"]);
  });

  it("steps down when a renewal hangs, bounded by one tick", async () => {
    const store = fakeStore();
    const clock = { t: 0 };
    const events: string[] = [];
    let hang = false;
    const client = {
      ...store.client,
      get: (_r: unknown, _ns: string, _n: string, signal?: AbortSignal) =>
        hang
          ? new Promise((_, reject) => signal?.addEventListener("abort", () => reject(new Error("aborted"))))
          : store.client.get(),
    };
    const a = new LeaderElector({
      client: client as never,
      namespace: "ns",
      identity: "a",
      leaseDurationMs: 300,
      tickMs: 100,
      now: () => clock.t,
      sleep: async () => {},
      onStartedLeading: () => events.push("lead"),
      onStoppedLeading: () => events.push("stop"),
    });
    await a.tick();
    hang = true;
    await a.tick(); // would never return without the per-round deadline
    expect(a.isLeader).toBe(false);
    expect(events).toEqual(["lead", "stop"]);
  });

  it("releases the Lease so a standby takes it at its next tick", async () => {
    const store = fakeStore();
    const clock = { t: 0 };
    const events: string[] = [];
    const a = elector(store, "a", clock, events);
    const b = elector(store, "b", clock, events);
    await a.tick();
    await b.tick();
    await a.release();
    clock.t = 1_000;
    await b.tick();
    expect(b.isLeader).toBe(true);
  });

  it("writes MicroTime with six fractional digits", () => {
    expect(microTime(Date.parse("2026-11-30T19:00:00.123Z"))).toBe("2026-11-30T19:00:00.123000Z");
  });
});
