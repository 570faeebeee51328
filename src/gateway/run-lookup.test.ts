import { describe, expect, it } from "vitest";
import type { Agent } from "../core/types.js";
import { KubeApiError } from "../kube/errors.js";
import { type RunState, RunUnconfirmedError } from "./ports.js";
import { ClusterRunLookup, RUN_LOOKUP_TIMINGS, runStateOf } from "./run-lookup.js";

const RUN = { namespace: "ai-agents", name: "fix-readme", uid: "uid-1" };

function agent(o: { uid?: string; phase?: string; deleting?: boolean } = {}): Agent {
  return {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: {
      name: RUN.name,
      namespace: RUN.namespace,
      uid: o.uid ?? RUN.uid,
      ...(o.deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
    },
    spec: { stationRef: "st" },
    ...(o.phase ? { status: { phase: o.phase as "Running" } } : {}),
  } as Agent;
}

/** A getter answering from a script: an Agent, undefined (404) or an error, and counting calls. */
function scripted(initial: Agent | undefined | Error) {
  const s = {
    answer: initial,
    calls: 0,
    get: async (namespace: string, name: string) => {
      s.calls++;
      expect([namespace, name]).toEqual([RUN.namespace, RUN.name]);
      if (s.answer instanceof Error) throw s.answer;
      return s.answer;
    },
  };
  return s;
}

function lookupWith(get: ReturnType<typeof scripted>, clock: { now: number }, stale: unknown[] = []) {
  return new ClusterRunLookup({
    namespace: "ai-agents",
    getAgent: get.get,
    now: () => clock.now,
    onStale: (_run, err) => stale.push(err),
  });
}

describe("the Agent's answer as a run state (docs/gateway.md#run-credentials)", () => {
  it.each<[string, Agent | undefined, RunState]>([
    ["no phase yet (Pending)", agent(), { state: "active" }],
    ["Pending", agent({ phase: "Pending" }), { state: "active" }],
    ["Running", agent({ phase: "Running" }), { state: "active" }],
    ["Succeeded", agent({ phase: "Succeeded" }), { state: "terminal", phase: "Succeeded" }],
    ["Failed", agent({ phase: "Failed" }), { state: "terminal", phase: "Failed" }],
    ["404", undefined, { state: "deleted" }],
    ["another uid under the same name", agent({ uid: "uid-2", phase: "Running" }), { state: "deleted" }],
    ["a deletion under way", agent({ phase: "Running", deleting: true }), { state: "deleted" }],
  ])("%s", (_case, answer, expected) => {
    expect(runStateOf(RUN, answer)).toEqual(expected);
  });
});

describe("the cluster run lookup's cache (docs/gateway.md#run-credentials)", () => {
  it("asks again once an active answer is older than a few seconds, not before", async () => {
    const clock = { now: 0 };
    const get = scripted(agent({ phase: "Running" }));
    const lookup = lookupWith(get, clock);
    expect(await lookup.runState(RUN)).toEqual({ state: "active" });
    clock.now = RUN_LOOKUP_TIMINGS.activeMs - 1;
    get.answer = agent({ phase: "Succeeded" });
    expect(await lookup.runState(RUN)).toEqual({ state: "active" });
    expect(get.calls).toBe(1);
    clock.now = RUN_LOOKUP_TIMINGS.activeMs;
    expect(await lookup.runState(RUN)).toEqual({ state: "terminal", phase: "Succeeded" });
    expect(get.calls).toBe(2);
  });

  it.each<[string, Agent | undefined, RunState]>([
    ["terminal", agent({ phase: "Failed" }), { state: "terminal", phase: "Failed" }],
    ["deleted", undefined, { state: "deleted" }],
  ])(
    "keeps a %s answer far longer than an active one, and past that still prefers it to an unreachable API server",
    async (_case, answer, expected) => {
      const clock = { now: 0 };
      const get = scripted(answer);
      const lookup = lookupWith(get, clock);
      expect(await lookup.runState(RUN)).toEqual(expected);
      clock.now = RUN_LOOKUP_TIMINGS.finalMs - 1;
      expect(await lookup.runState(RUN)).toEqual(expected);
      expect(get.calls).toBe(1);
      clock.now = RUN_LOOKUP_TIMINGS.finalMs + 1;
      get.answer = new Error("connect ECONNREFUSED");
      expect(await lookup.runState(RUN)).toEqual(expected);
      expect(get.calls).toBe(2);
    },
  );

  it("shares one GET among the requests that arrive while it is out", async () => {
    let release: (a: Agent) => void = () => {};
    let calls = 0;
    const lookup = new ClusterRunLookup({
      namespace: "ai-agents",
      getAgent: () => {
        calls++;
        return new Promise<Agent>((resolve) => {
          release = resolve;
        });
      },
    });
    const answers = Promise.all([lookup.runState(RUN), lookup.runState(RUN), lookup.stationOf(RUN)]);
    release(agent({ phase: "Running" }));
    expect(await answers).toEqual([{ state: "active" }, { state: "active" }, "st"]);
    expect(calls).toBe(1);
  });

  it.each<[string, Error, string]>([
    [
      "no answer",
      new Error("connect ECONNREFUSED 10.96.0.1:443"),
      "the Kubernetes API server cannot be reached",
    ],
    [
      "a 503",
      new KubeApiError(503, "ServiceUnavailable", "GET … 503"),
      "the Kubernetes API server answered 503 ServiceUnavailable to its read of the Agent",
    ],
    [
      "a refused read (RBAC)",
      new KubeApiError(403, "Forbidden", "GET … 403"),
      "the Kubernetes API server answered 403 Forbidden to its read of the Agent",
    ],
  ])(
    "API server unreachable (%s): a recent active answer stands in, an older one or none is refused",
    async (_case, error, cause) => {
      const clock = { now: 0 };
      const stale: unknown[] = [];
      const get = scripted(agent({ phase: "Running" }));
      const lookup = lookupWith(get, clock, stale);
      expect(await lookup.runState(RUN)).toEqual({ state: "active" });
      get.answer = error;
      clock.now = RUN_LOOKUP_TIMINGS.staleActiveMs - 1;
      expect(await lookup.runState(RUN)).toEqual({ state: "active" });
      expect(stale).toEqual([error]);
      clock.now = RUN_LOOKUP_TIMINGS.staleActiveMs;
      await expect(lookup.runState(RUN)).rejects.toEqual(new RunUnconfirmedError(cause));
      await expect(lookup.runState(RUN)).rejects.toBeInstanceOf(RunUnconfirmedError);

      // Without any earlier answer: refused at once.
      const cold = lookupWith(scripted(error), { now: 0 });
      await expect(cold.runState(RUN)).rejects.toEqual(new RunUnconfirmedError(cause));
    },
  );

  it("answers again from the API server once it is back, after a refusal", async () => {
    const clock = { now: 0 };
    const get = scripted(new Error("timeout"));
    const lookup = lookupWith(get, clock);
    await expect(lookup.runState(RUN)).rejects.toBeInstanceOf(RunUnconfirmedError);
    get.answer = agent({ phase: "Running" });
    expect(await lookup.runState(RUN)).toEqual({ state: "active" });
  });

  it("answers a credential of another namespace foreign without asking the API server", async () => {
    const get = scripted(agent());
    const lookup = lookupWith(get, { now: 0 });
    expect(await lookup.runState({ ...RUN, namespace: "other" })).toEqual({
      state: "foreign",
      served: "ai-agents",
    });
    expect(await lookup.stationOf({ ...RUN, namespace: "other" })).toBeUndefined();
    expect(get.calls).toBe(0);
  });

  it("gives the Station of an active run only", async () => {
    const get = scripted(agent({ phase: "Running" }));
    const clock = { now: 0 };
    const lookup = lookupWith(get, clock);
    expect(await lookup.stationOf(RUN)).toBe("st");
    get.answer = agent({ phase: "Succeeded" });
    clock.now = RUN_LOOKUP_TIMINGS.activeMs;
    expect(await lookup.stationOf(RUN)).toBeUndefined();
  });

  it("holds at most maxEntries runs, dropping expired answers first, then the oldest", async () => {
    const clock = { now: 0 };
    const asked: string[] = [];
    const lookup = new ClusterRunLookup({
      namespace: "ai-agents",
      getAgent: async (_ns, name) => {
        asked.push(name);
        const phase = name === "ended" ? "Failed" : "Running";
        return { ...agent({ phase }), metadata: { name, uid: name } } as Agent;
      },
      now: () => clock.now,
      timings: { maxEntries: 3 },
    });
    const run = (n: string) => ({ namespace: "ai-agents", name: n, uid: n });
    for (const n of ["ended", "a", "b"]) await lookup.runState(run(n));
    clock.now = RUN_LOOKUP_TIMINGS.activeMs; // a and b expired, the final answer not
    await lookup.runState(run("c"));
    expect(lookup.size).toBe(2);
    await lookup.runState(run("d"));
    await lookup.runState(run("e"));
    expect(lookup.size).toBe(3);
    asked.length = 0;
    // ended was the oldest left: dropped for e; c and d are still cached.
    for (const n of ["c", "d", "ended"]) await lookup.runState(run(n));
    expect(asked).toEqual(["ended"]);
  });
});
