/** The controller's provider index and learning (provider-limits.ts): plain objects, an injected clock. */
import { describe, expect, it } from "vitest";
import { agent, definition, input, iso, station, T0 } from "../../test/support/core-builders.js";
import type { ReportWaitingAction } from "../core/actions.js";
import { reconcile } from "../core/state-machine/reconcile.js";
import type { Agent, Station } from "../core/types.js";
import { limitTokens, ProviderLimits } from "./provider-limits.js";

const ID = "anthropic https://api.anthropic.com secret agent-secrets/team";
const def = definition()
  .spec({ model: "claude-sonnet-4-6", resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "team" }] } })
  .build();

function setup(o: { learning?: boolean; stations?: Station[] } = {}) {
  let now = T0;
  const agents = new Map<string, Agent>();
  const issued = new Set<string>();
  const stations = o.stations ?? [station().build(), station("other").build()];
  const p = new ProviderLimits({
    learning: o.learning ?? true,
    settings: input().settings,
    now: () => now,
    agent: (n) => agents.get(n),
    station: (n) => stations.find((s) => s.metadata?.name === n),
    definition: (n) => (n === "def" ? def : undefined),
    issued: (n) => issued.has(n),
  });
  const put = (a: Agent, deleted = false) => {
    if (deleted) agents.delete(a.metadata.name ?? "");
    else agents.set(a.metadata.name ?? "", a);
    return p.observe(a, deleted);
  };
  return {
    p,
    put,
    issued,
    agents,
    tick: (ms: number) => {
      now += ms;
    },
    get now() {
      return now;
    },
  };
}

const pending = (name: string, st = "st", created = T0) =>
  agent(name).spec({ stationRef: st }).created(created).build();
const running = (name: string, st = "st", started = T0) =>
  agent(name).spec({ stationRef: st }).running(started).build();
const succeeded = (name: string, extra: Record<string, unknown> = {}, started = T0) =>
  agent(name)
    .running(started)
    .completed("Succeeded", T0 + 60_000)
    .status(extra)
    .build();

describe("ProviderLimits", () => {
  it("indexes Pending and Running Agents by endpoint across Stations; a finished run frees its endpoint", () => {
    const s = setup();
    s.put(running("r1"));
    s.put(running("r2", "other"));
    s.put(pending("w1", "other", T0 + 2));
    s.put(pending("w2", "st", T0 + 1));
    expect(s.p.endpointOf("r2")?.id).toBe(ID);
    expect(s.p.waitingOn(ID)).toEqual(["w2", "w1"]);
    expect(s.put(succeeded("r1"))).toBe(ID);
    expect(s.p.endpointOf("r1")).toBeUndefined();
  });

  it("gives the core an input only when a limit may hold the Agent, counting every Station's runs", () => {
    const limited = station()
      .spec({ providerLimits: { concurrentRuns: 2 } })
      .build();
    const s = setup({ stations: [limited, station("other").build()] });
    s.put(running("r1", "other"));
    s.put(pending("w-issued"));
    s.issued.add("w-issued");
    const w = pending("w");
    s.put(w);
    const got = s.p.inputFor(w, limited, def);
    expect(got).toMatchObject({ running: 2, waiting: ["w"] });
    expect(got?.endpoint.id).toBe(ID);
    expect(s.p.limits(w, limited)).toBe(ID);
    // No declared limit and nothing learned: no input, no lock.
    const plain = station("other").build();
    const o = pending("o", "other");
    s.put(o);
    expect(s.p.inputFor(o, plain, def)).toBeUndefined();
    expect(s.p.limits(o, plain)).toBeUndefined();
  });

  it("learns a throttle from a finished run's providerRetries once, and holds the endpoint's next runs", () => {
    const s = setup();
    for (const n of ["r1", "r2", "r3", "r4"]) s.put(running(n));
    const retries = {
      providerRetries: {
        count: 3,
        waitedSeconds: 40,
        last: { provider: "anthropic", status: 429, at: iso(T0 + 50_000), retryAfterSeconds: 30 },
      },
    };
    s.tick(60_000);
    s.put(succeeded("r1", retries));
    const rec = s.p.record(ID);
    // 4 runs were going (r1 included): the window is half of them; new starts wait for the retry-after.
    expect(rec).toMatchObject({ window: 2, holdUntil: T0 + 80_000, cutAt: T0 + 60_000 });
    expect(rec?.lastThrottle).toMatchObject({ agent: "r1", status: 429, source: "run" });
    // The same run seen again (a later status update) teaches nothing twice.
    s.put(succeeded("r1", { ...retries, output: "x" }));
    expect(s.p.record(ID)).toEqual(rec);
    const w = pending("w");
    s.put(w);
    expect(s.p.inputFor(w, station().build(), def)).toMatchObject({ running: 3, record: { window: 2 } });
    s.tick(20_000);
    expect(s.p.record(ID)?.holdUntil).toBeUndefined();
  });

  it("a providerRetries written after the run was first seen finished still counts", () => {
    const s = setup();
    s.put(running("r1"));
    s.put(running("r2"));
    s.tick(60_000);
    s.put(succeeded("r1"));
    expect(s.p.record(ID)).toBeUndefined();
    s.put(
      succeeded("r1", {
        providerRetries: {
          count: 1,
          waitedSeconds: 5,
          last: { provider: "anthropic", status: 529, at: iso(T0 + 59_000) },
        },
      }),
    );
    expect(s.p.record(ID)).toMatchObject({ window: 1, lastThrottle: { status: 529 } });
  });

  it("PROVIDER_LEARNING=false: throttles teach nothing, tokens and starts are still recorded", () => {
    const s = setup({ learning: false });
    s.put(running("r1"));
    s.tick(60_000);
    s.put(
      succeeded("r1", {
        usage: {
          inputTokens: 100,
          outputTokens: 50,
          cacheReadTokens: 1000,
          cacheWriteTokens: 10,
          totalTokens: 1160,
        },
        providerRetries: {
          count: 2,
          waitedSeconds: 5,
          last: { provider: "anthropic", status: 429, at: iso(T0) },
        },
      }),
    );
    expect(s.p.record(ID)).toEqual({ tokensPerRun: 160, tokensFrom: "r1" });
    s.p.batchThrottled("r1", 429, 10);
    expect(s.p.record(ID)).toEqual({ tokensPerRun: 160, tokensFrom: "r1" });
  });

  it("a batch submit answered 429 holds the endpoint for the retry-after; a run start is recorded", () => {
    const batchDef = definition().batch().build();
    const s = setup();
    const p = new ProviderLimits({
      learning: true,
      settings: input().settings,
      now: () => T0,
      agent: (n) => s.agents.get(n),
      station: () => station().build(),
      definition: () => batchDef,
      issued: () => false,
    });
    const a = pending("b");
    s.agents.set("b", a);
    p.observe(a, false);
    const id = p.endpointOf("b")?.id as string;
    expect(id).toBe("anthropic batch API secret agent-secrets/anthropic-key");
    p.batchThrottled("b", 429, 45);
    expect(p.record(id)).toMatchObject({ holdUntil: T0 + 45_000, window: 1 });
    p.started("b");
    expect(p.record(id)?.lastStartAt).toBe(T0);
  });

  it("ignores runs that ended long ago (seen again after a restart)", () => {
    const s = setup();
    s.tick(3_600_000);
    s.put(
      succeeded("old", {
        providerRetries: {
          count: 1,
          waitedSeconds: 5,
          last: { provider: "anthropic", status: 429, at: iso(T0) },
        },
      }),
    );
    expect(s.p.record(ID)).toBeUndefined();
  });

  it("a Station change moves its waiting Agents to the endpoint they now resolve to", () => {
    const stations = [station().build()];
    const s = setup({ stations });
    const w = pending("w");
    s.put(w);
    expect(s.p.endpointOf("w")?.id).toBe(ID);
    stations[0] = station()
      .spec({
        template: {
          spec: {
            containers: [
              { name: "agent", env: [{ name: "ANTHROPIC_BASE_URL", value: "https://gw.example" }] },
            ],
          },
        },
      })
      .build();
    s.p.restation([w]);
    expect(s.p.endpointOf("w")?.id).toBe("anthropic https://gw.example secret agent-secrets/team");
  });

  it("exclusive runs one reconcile of an endpoint at a time, in arrival order", async () => {
    const { p } = setup();
    const order: string[] = [];
    const step = (name: string, ms: number) =>
      p.exclusive(ID, async () => {
        order.push(`${name} in`);
        await new Promise((r) => setTimeout(r, ms));
        order.push(`${name} out`);
      });
    await Promise.all([step("a", 20), step("b", 1), step("c", 1)]);
    expect(order).toEqual(["a in", "a out", "b in", "b out", "c in", "c out"]);
  });

  it("counts the tokens a provider's per-minute limit counts", () => {
    const usage = {
      inputTokens: 10,
      outputTokens: 5,
      cacheReadTokens: 100,
      cacheWriteTokens: 1,
      totalTokens: 116,
    };
    expect(limitTokens("anthropic", usage)).toBe(16);
    expect(limitTokens("openai", usage)).toBe(116);
    expect(limitTokens("gemini", undefined)).toBe(0);
  });

  describe("what one run reports holds no one else for long (docs/provider-limits.md#what-the-controller-learns)", () => {
    const HOUR = 3_600_000;
    const forged = (last: Record<string, unknown>) => ({
      providerRetries: { count: 1, waitedSeconds: 1, last: { provider: "anthropic", status: 429, ...last } },
    });
    /** r1 ran T0 … T0+60 s and reported `extra`; w waits against the same endpoint; the core decides w at `later`. */
    function heldBy(
      extra: Record<string, unknown>,
      o: { settings?: object; limited?: Station; later?: number } = {},
    ) {
      const settings = { ...input().settings, ...o.settings };
      const st = o.limited ?? station().build();
      const s = setup({ stations: [st, station("other").build()] });
      const p = new ProviderLimits({
        learning: true,
        settings,
        now: () => s.now,
        agent: (n) => s.agents.get(n),
        station: (n) => (n === "st" ? st : undefined),
        definition: (n) => (n === "def" ? def : undefined),
        issued: () => false,
      });
      const r1 = running("r1");
      s.agents.set("r1", r1);
      p.observe(r1, false);
      p.started("r1");
      s.tick(60_000);
      const done = succeeded("r1", extra);
      s.agents.set("r1", done);
      p.observe(done, false);
      s.tick(o.later ?? 1_000);
      const w = pending("w");
      s.agents.set("w", w);
      p.observe(w, false);
      const provider = p.inputFor(w, st, def);
      const decide = () =>
        reconcile(
          input({
            agent: w,
            station: st,
            definition: def,
            settings,
            now: s.now,
            ...(provider ? { provider } : {}),
          }),
        );
      return { now: s.now, record: p.record(ID), decide };
    }
    const waiting = (actions: ReturnType<typeof reconcile>) =>
      actions.find((a): a is ReportWaitingAction => a.type === "reportWaiting");

    it.each([
      {
        name: "retry-after 3,000,000 s (35 days)",
        last: { at: iso(T0 + 30_000), retryAfterSeconds: 3_000_000 },
      },
      { name: "answered at 9999-12-31", last: { at: "9999-12-31T23:59:59Z", retryAfterSeconds: 30 } },
      { name: "answered at 9999-12-31 with no retry-after", last: { at: "9999-12-31T23:59:59Z" } },
      {
        name: "retry-after 9007199254740991 s at the last representable time",
        last: { at: "+275760-09-13T00:00:00.000Z", retryAfterSeconds: Number.MAX_SAFE_INTEGER },
      },
      {
        name: "retry-after 9007199254740991 s",
        last: { at: iso(T0 + 30_000), retryAfterSeconds: Number.MAX_SAFE_INTEGER },
      },
    ])(
      "$name: the hold ends within the maximum hold, the reconcile decides, the reason names the run",
      ({ last }) => {
        const h = heldBy(forged(last));
        expect(h.record?.holdUntil).toBeLessThanOrEqual(h.now + HOUR);
        const t = h.record?.lastThrottle;
        // The answer's time is kept within the run's own lifetime.
        expect(t?.at).toBeGreaterThanOrEqual(T0);
        expect(t?.at).toBeLessThanOrEqual(T0 + 60_000);
        expect(h.decide).not.toThrow();
        const w = waiting(h.decide());
        expect(w?.reason).toBe("ProviderThrottled");
        expect(w?.retryAt).toBeLessThanOrEqual(h.now + HOUR);
        expect(w?.message).toContain("to the run of Agent r1");
      },
    );

    it("a forged retry-after is shown with the maximum it was held to", () => {
      const h = heldBy(forged({ at: iso(T0 + 30_000), retryAfterSeconds: 3_000_000 }));
      expect(waiting(h.decide())?.message).toContain(
        "with retry-after 3000000 s (held at most 3600 s, PROVIDER_MAX_HOLD_SECONDS)",
      );
      expect(h.record?.holdUntil).toBe(T0 + 30_000 + HOUR);
    });

    it("PROVIDER_MAX_HOLD_SECONDS narrows the hold", () => {
      const h = heldBy(forged({ at: iso(T0 + 30_000), retryAfterSeconds: 3_000_000 }), {
        settings: { providerMaxHoldSeconds: 120 },
      });
      expect(h.record?.holdUntil).toBe(T0 + 30_000 + 120_000);
      expect(waiting(h.decide())?.retryAt).toBe(T0 + 150_000);
    });

    it("a provider's real retry-after within the maximum is kept as it was", () => {
      const h = heldBy(forged({ at: iso(T0 + 50_000), retryAfterSeconds: 30 }));
      expect(h.record?.holdUntil).toBe(T0 + 80_000);
      expect(waiting(h.decide())?.message).toContain("with retry-after 30 s at");
    });

    it.each([
      { name: "2e12 output tokens", usage: { inputTokens: 0, outputTokens: 2e12 } },
      {
        name: "9007199254740991 output tokens",
        usage: { inputTokens: 0, outputTokens: Number.MAX_SAFE_INTEGER },
      },
      { name: "a total of 1e308 tokens", usage: { totalTokens: 1e308 } },
    ])(
      "$name under a tokensPerMinute limit: bounded tokens per run, the next start within the maximum hold",
      ({ usage }) => {
        const limited = station()
          .spec({ providerLimits: { tokensPerMinute: 1000 } })
          .build();
        const h = heldBy({ usage }, { limited });
        expect(h.record?.tokensPerRun).toBeLessThanOrEqual(10_000_000);
        expect(h.decide).not.toThrow();
        const w = waiting(h.decide());
        expect(w?.reason).toBe("ProviderLimitReached");
        expect(w?.retryAt).toBeLessThanOrEqual(h.now + HOUR);
        expect(w?.message).toContain("PROVIDER_MAX_HOLD_SECONDS");
        expect(w?.message).toContain("tokens per run (last reported by the run of Agent r1)");
      },
    );
  });
});
