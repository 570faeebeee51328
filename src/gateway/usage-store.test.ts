import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryUsageObjects } from "../../test/support/usage-objects.js";
import type { UsageRecord } from "./ports.js";
import { HEARTBEAT_MS, MAX_EGRESS_DESTINATIONS, ModelUsageStore } from "./usage-store.js";

const RUN = { namespace: "ai-agents", name: "fix-readme", uid: "6f1c2e0a-1111-4c2b-9d3e-0123456789ab" };
const T = Date.parse("2026-12-07T10:00:00Z");

const call = (over: Partial<UsageRecord> = {}): UsageRecord => ({
  run: RUN,
  vendor: "anthropic",
  route: "messages",
  model: "claude-sonnet-4-6",
  status: 200,
  usage: { inputTokens: 10, outputTokens: 20, cacheReadTokens: 3, cacheWriteTokens: 4 },
  complete: true,
  clientAborted: false,
  startedAt: new Date(T),
  endedAt: new Date(T),
  ...over,
});

function storeWith(objects = new MemoryUsageObjects(), processId = "p1") {
  const errors: unknown[] = [];
  const store = new ModelUsageStore({
    objects,
    replica: "agent-gateway-abc",
    processId,
    now: () => T,
    onWriteError: (_run, err) => errors.push(err),
  });
  return { store, objects, errors };
}

afterEach(() => vi.useRealTimers());

describe("ModelUsageStore: one object per run and gateway process (docs/gateway.md#metering)", () => {
  it("creates the run's object, owned by its Agent, labelled with its uid, then adds each call to it", async () => {
    const { store, objects } = storeWith();
    await store.record(call());
    await store.record(
      call({ usage: { inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 } }),
    );
    const o = objects.only();
    expect(o.metadata).toMatchObject({
      name: `${RUN.uid}-p1`,
      namespace: "ai-agents",
      labels: { "agents.re-cinq.com/agent-uid": RUN.uid },
      ownerReferences: [
        { apiVersion: "agents.re-cinq.com/v1beta1", kind: "Agent", name: RUN.name, uid: RUN.uid },
      ],
    });
    expect(o.spec).toEqual({
      agent: { name: RUN.name, uid: RUN.uid },
      vendor: "anthropic",
      replica: "agent-gateway-abc",
      calls: 2,
      incompleteCalls: 0,
      inFlight: 0,
      meteredUSD: "0",
      reservedUSD: "0",
      models: [
        {
          model: "claude-sonnet-4-6",
          inputTokens: 11,
          outputTokens: 22,
          cacheReadTokens: 3,
          cacheWriteTokens: 4,
        },
      ],
      updatedAt: new Date(T).toISOString(),
    });
  });

  it("a record resolves only once a write holding it has landed", async () => {
    const { store, objects } = storeWith();
    objects.hold();
    let durable = false;
    const p = store.record(call()).then(() => {
      durable = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(durable).toBe(false);
    objects.release();
    await p;
    expect(objects.only().spec.calls).toBe(1);
  });

  it("a failed write is retried with everything recorded meanwhile; nothing is dropped", async () => {
    vi.useFakeTimers();
    const { store, objects, errors } = storeWith();
    objects.failNext = 2;
    const first = store.record(call());
    await vi.advanceTimersByTimeAsync(0);
    const second = store.record(call({ model: "claude-opus-4-5" }));
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all([first, second]);
    expect(errors).toHaveLength(2);
    expect(objects.only().spec).toMatchObject({ calls: 2 });
    expect(objects.only().spec.models.map((m) => m.model)).toEqual(["claude-sonnet-4-6", "claude-opus-4-5"]);
  });

  it("a call counts as in flight from its start to its record; the count is rewritten while it lasts", async () => {
    vi.useFakeTimers();
    const { store, objects } = storeWith();
    store.started(RUN, "anthropic");
    await vi.advanceTimersByTimeAsync(0);
    expect(objects.only().spec.inFlight).toBe(1);
    const writes = objects.writes;
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS);
    expect(objects.writes).toBe(writes + 1);
    await store.record(call({ clientAborted: true }));
    expect(objects.only().spec).toMatchObject({ inFlight: 0, calls: 1 });
  });

  it("calls that ended before the provider's last event, or could not be read, are counted as incomplete", async () => {
    const { store, objects } = storeWith();
    await store.record(call({ complete: false, upstreamError: "UND_ERR_SOCKET" }));
    await store.record(call({ unreadable: "encoded" }));
    await store.record(call({ usage: undefined, status: 502, complete: false }));
    expect(objects.only().spec).toMatchObject({ calls: 3, incompleteCalls: 3 });
    expect(objects.only().spec.models[0]).toMatchObject({ inputTokens: 20 });
  });

  it("a process that forgot a run and meets its own object again carries its totals on", async () => {
    const objects = new MemoryUsageObjects();
    await storeWith(objects).store.record(call());
    // A new store with the same process id stands for the same process after it forgot the run.
    await storeWith(objects).store.record(call());
    expect(objects.only().spec.calls).toBe(2);
    expect(objects.only().spec.models[0]).toMatchObject({ inputTokens: 20, outputTokens: 40 });
  });

  it("another process writes an object of its own", async () => {
    const objects = new MemoryUsageObjects();
    await storeWith(objects, "p1").store.record(call());
    await storeWith(objects, "p2").store.record(call());
    expect([...objects.objects.keys()].sort()).toEqual([`${RUN.uid}-p1`, `${RUN.uid}-p2`]);
  });

  it("a model name the object's schema would refuse (the request names it) is recorded as other", async () => {
    const { store, objects } = storeWith();
    await store.record(call({ model: undefined, requestedModel: `x${"y".repeat(300)}` }));
    await store.record(call({ model: undefined, requestedModel: "bad name\n" }));
    expect(objects.only().spec.models).toEqual([
      expect.objectContaining({ model: "other", inputTokens: 20 }),
    ]);
  });

  it("more models than an object holds share one entry, so no token is lost", async () => {
    const { store, objects } = storeWith();
    for (let i = 0; i < 70; i++) await store.record(call({ model: `forged-${i}` }));
    const models = objects.only().spec.models;
    expect(models).toHaveLength(64);
    expect(models.at(-1)).toMatchObject({ model: "other", inputTokens: 70 });
    expect(models.reduce((s, m) => s + m.inputTokens, 0)).toBe(700);
  });
});

describe("ModelUsageStore: egress refusals (docs/gateway.md#egress)", () => {
  const refusal = (destination: string, role: "init" | "agent" | "courier" = "agent") => ({
    destination,
    role,
    reason: `${destination} is not a destination of the ${role}`,
  });

  it("counts each refusal and keeps the first distinct destinations, in a record with no vendor until a call names one", async () => {
    const { store, objects } = storeWith();
    await store.egressRefused(RUN, refusal("evil.example:443"));
    await store.egressRefused(RUN, refusal("evil.example:443"));
    await store.egressRefused(RUN, refusal("evil.example:443", "courier"));
    expect(objects.only().spec).toMatchObject({ calls: 0, models: [] });
    expect(objects.only().spec.vendor).toBeUndefined();
    expect(objects.only().spec.egress).toEqual({
      refused: 3,
      destinations: [refusal("evil.example:443"), refusal("evil.example:443", "courier")],
    });
    await store.record(call());
    expect(objects.only().spec).toMatchObject({ vendor: "anthropic", calls: 1, egress: { refused: 3 } });
  });

  it("keeps counting past the destinations an object holds", async () => {
    const { store, objects } = storeWith();
    for (let i = 0; i < MAX_EGRESS_DESTINATIONS + 5; i++)
      await store.egressRefused(RUN, refusal(`h${i}.example:443`));
    const egress = objects.only().spec.egress;
    expect(egress?.refused).toBe(MAX_EGRESS_DESTINATIONS + 5);
    expect(egress?.destinations?.map((d) => d.destination)).toEqual(
      Array.from({ length: MAX_EGRESS_DESTINATIONS }, (_, i) => `h${i}.example:443`),
    );
  });

  it("a process that forgot a run carries its refusals on", async () => {
    const objects = new MemoryUsageObjects();
    await storeWith(objects).store.egressRefused(RUN, refusal("a.example:443"));
    await storeWith(objects).store.egressRefused(RUN, refusal("b.example:443"));
    expect(objects.only().spec.egress).toEqual({
      refused: 2,
      destinations: [refusal("a.example:443"), refusal("b.example:443")],
    });
  });
});
