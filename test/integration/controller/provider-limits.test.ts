/**
 * Provider limits on the local plane (docs/provider-limits.md): the controller and a real API server,
 * runs scripted through kwok.
 * - A Station declaring providerLimits.concurrentRuns 2 never has more than 2 runs Running (watched
 *   in the order the API server stored them), and its waiting Agents say why (ProviderLimitReached).
 * - A finished run reporting status.providerRetries (a 429 with retry-after) makes the next Agents
 *   against the same endpoint and key wait (ProviderThrottled, the Ready condition and an Event naming
 *   the provider, the status and when the next run starts) and then start as the limit allows. The
 *   run's providerRetries is written here by the test, standing in for the run pod's report.
 * - What one run reports holds no one else for long (docs/provider-limits.md#what-the-controller-learns):
 *   a run pod log with a forged provider-limit line (retry-after 3,000,000 s, answered in the year
 *   9999) holds the next run against its endpoint at most PROVIDER_MAX_HOLD_SECONDS (1 h), the
 *   reason and the Event naming the run; a model named `constructor` ends with a cost.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerReplica } from "../../../src/controller/process.js";
import { LABEL_AGENT } from "../../../src/core/run-job/job.js";
import type { Agent } from "../../../src/core/types.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { KUBE_EVENTS } from "../../../src/kube/event-writer.js";
import { AGENT_DEFINITIONS, AGENTS, resourcePath, STATIONS } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig, setPodLogs } from "../../harness/context.js";
import { eventually, eventuallyPasses } from "../../harness/eventually.js";
import { podScriptAnnotations } from "../../harness/pod-script.js";
import { clientFor, createAgent, getAgent, startReplica, waitForPhase } from "./helpers.js";

const POD_NAME = "agent-controller-provider-0";
const MINUTE = 60_000;

let client: KubeClient;
let ns: string;
let replica: ControllerReplica | undefined;
/** The controller's clock runs this far ahead of the wall clock. */
let clockOffsetMs = 0;
const now = () => Date.now() + clockOffsetMs;
const abort = new AbortController();
/** Every phase the API server stored, in its order: name → phase. */
const phases = new Map<string, string>();
/** The most Agents of each Station seen Running at once. */
const peak = new Map<string, number>();
const stationOf = new Map<string, string>();

async function definition(name: string, keyRef: string, model = "claude-sonnet-4-5") {
  await client.create(AGENT_DEFINITIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name },
    spec: {
      prompt: "Summarise {topic}.",
      model,
      resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: keyRef }] },
    },
  });
}

async function stationWith(name: string, def: string, runTime: string, extra: Record<string, unknown> = {}) {
  await client.create(STATIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name },
    spec: {
      agentDefRef: def,
      successfulRunsHistoryLimit: 20,
      ...extra,
      template: {
        metadata: { annotations: podScriptAnnotations({ exitCode: 0, runTime }) },
        spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] },
      },
    },
  });
}

function watchPhases(): void {
  void (async () => {
    let rv = (await client.list<Agent>(AGENTS, ns)).resourceVersion;
    while (!abort.signal.aborted) {
      try {
        await client.watch<Agent>(
          AGENTS,
          ns,
          { resourceVersion: rv, timeoutSeconds: 60, signal: abort.signal },
          (e) => {
            const a = e.object;
            if (a.metadata?.resourceVersion) rv = a.metadata.resourceVersion;
            const name = a.metadata?.name ?? "";
            if (e.type === "BOOKMARK") return;
            stationOf.set(name, a.spec.stationRef);
            if (e.type === "DELETED") phases.delete(name);
            else phases.set(name, a.status?.phase ?? "Pending");
            const st = a.spec.stationRef;
            const running = [...phases].filter(([n, p]) => p === "Running" && stationOf.get(n) === st).length;
            peak.set(st, Math.max(peak.get(st) ?? 0, running));
          },
        );
      } catch {
        if (abort.signal.aborted) return;
        rv = (await client.list<Agent>(AGENTS, ns)).resourceVersion;
      }
    }
  })();
}

/**
 * Waits until the watch above has seen each of `names` in `phase`: it reads the API server's
 * stream behind the GETs of waitForPhase, so `peak` is read only once the watch has caught up.
 */
function watchSaw(names: string[], phase: string) {
  return eventually(`the watch to have seen ${names.join(", ")} ${phase}`, () =>
    names.every((n) => phases.get(n) === phase),
  );
}

const ready = (a: Agent | undefined) => a?.status?.conditions?.find((c) => c.type === "Ready");

async function eventsOf(uid: string | undefined, reason: string) {
  const l = await client.request<{
    items: { reason: string; note: string; type: string; regarding: { uid: string } }[];
  }>("GET", resourcePath(KUBE_EVENTS, ns));
  return l.items.filter((e) => e.reason === reason && e.regarding.uid === uid);
}

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  ns = await createTestNamespace("ctrl-provider");
  await definition("team-a", "team-a");
  await definition("team-b", "team-b");
  watchPhases();
  replica = await startReplica(client, ns, POD_NAME, { now });
  await eventually("leadership", async () => replica?.isLeader && replica.controller?.synced);
});

afterAll(async () => {
  abort.abort();
  await replica?.stop();
  await client?.close();
});

describe("provider limits", () => {
  it("a Station with providerLimits.concurrentRuns 2 never has more than 2 runs Running", async () => {
    await stationWith("limited", "team-a", "3s", { providerLimits: { concurrentRuns: 2 } });
    const names = ["c-1", "c-2", "c-3", "c-4", "c-5"];
    for (const n of names) await createAgent(client, ns, n, "limited");
    const held = await eventually("a waiting Agent saying why", async () => {
      for (const n of names) {
        const a = await getAgent(client, ns, n);
        if (ready(a)?.reason === "ProviderLimitReached") return a;
      }
      return undefined;
    });
    expect(ready(held)?.message).toBe(
      "Station limited allows 2 concurrent runs against anthropic at https://api.anthropic.com (key secret agent-secrets/team-a) (providerLimits.concurrentRuns) and they are all taken; the next run starts when one of them ends",
    );
    // The controller's recorder writes Events later (batched, rate-limited): wait for it.
    await eventuallyPasses("the ProviderLimitReached Event", async () => {
      expect((await eventsOf(held?.metadata.uid, "ProviderLimitReached"))[0]).toMatchObject({
        type: "Normal",
        note: ready(held)?.message,
      });
    });
    for (const n of names) await waitForPhase(client, ns, n, ["Succeeded"], 180_000);
    await watchSaw(names, "Succeeded");
    expect(peak.get("limited")).toBe(2);
    // They ran in the order they were created.
    const started = await Promise.all(
      names.map(async (n) => (await getAgent(client, ns, n))?.status?.startedAt ?? ""),
    );
    expect([...started].sort()).toEqual(started);
  });

  it("a run that retried after a 429 makes the next runs against its endpoint wait, then start as the limit allows", async () => {
    await stationWith("learned", "team-b", "2s");
    await createAgent(client, ns, "t-1", "learned");
    const first = await waitForPhase(client, ns, "t-1", ["Succeeded"]);
    // What the run pod reports when its run rode out a 429 (standing in for the supervisor), within the run.
    const at = first.status?.completedAt ?? "";
    const written = await client.patchStatus(AGENTS, ns, "t-1", first.metadata.resourceVersion ?? "", {
      providerRetries: {
        count: 2,
        waitedSeconds: 70,
        last: { provider: "anthropic", status: 429, at, retryAfterSeconds: 600 },
      },
    });
    expect(written).toBe("ok");

    await createAgent(client, ns, "t-2", "learned");
    const held = await eventually("t-2 held by the throttle", async () => {
      const a = await getAgent(client, ns, "t-2");
      return ready(a)?.reason === "ProviderThrottled" ? a : undefined;
    });
    const until = new Date(Date.parse(at) + 600_000).toISOString().replace(".000Z", "Z");
    expect(ready(held)?.message).toBe(
      `anthropic at https://api.anthropic.com (key secret agent-secrets/team-b) answered 429 with retry-after 600 s at ${at} to the run of Agent t-1; no run starts against it before ${until}: the next run starts then`,
    );
    const event = await eventually(
      "the ProviderThrottled Event",
      async () => (await eventsOf(held?.metadata.uid, "ProviderThrottled"))[0],
    );
    expect(event).toMatchObject({ type: "Warning", note: ready(held)?.message });
    // Still held on later reconciles: waiting never fails it.
    await replica?.controller?.pollOnce();
    expect((await getAgent(client, ns, "t-2"))?.status?.phase ?? "Pending").toBe("Pending");
    // Another Station on another key is not held.
    await createAgent(client, ns, "c-6", "limited");
    await waitForPhase(client, ns, "c-6", ["Succeeded"]);

    // The retry-after passes: t-2 starts. The endpoint took one run at a time after the 429 (the
    // window halved from the one run going) and t-2 ending cleanly widened it to two: of t-3, t-4
    // and t-5, one waits until another has ended.
    clockOffsetMs = 11 * MINUTE;
    await waitForPhase(client, ns, "t-2", ["Succeeded"]);
    for (const n of ["t-3", "t-4", "t-5"]) await createAgent(client, ns, n, "learned");
    const windowHeld = await eventually("one of t-3..t-5 held by the learned window", async () => {
      for (const n of ["t-3", "t-4", "t-5"]) {
        const a = await getAgent(client, ns, n);
        if (ready(a)?.reason === "ProviderThrottled") return a;
      }
      return undefined;
    });
    expect(ready(windowHeld)?.message).toBe(
      `anthropic at https://api.anthropic.com (key secret agent-secrets/team-b) answered 429 with retry-after 600 s at ${at} to the run of Agent t-1; the controller now starts at most 2 concurrent runs against it and they are all taken; the next run starts when one of them ends`,
    );
    for (const n of ["t-3", "t-4", "t-5"]) await waitForPhase(client, ns, n, ["Succeeded"], 120_000);
    await watchSaw(["t-1", "t-2", "t-3", "t-4", "t-5"], "Succeeded");
    expect(peak.get("learned")).toBe(2);
  });

  it("a forged provider-limit line in a run's log holds the next run at most an hour, naming the run", async () => {
    await definition("team-c", "team-c");
    await stationWith("forged", "team-c", "2s");
    const forged = {
      kind: "provider-limit",
      provider: "anthropic",
      status: 429,
      retry: 1,
      waitSeconds: 1,
      retryAfterSeconds: 3_000_000,
      at: "9999-12-31T23:59:59Z",
      reason: "rate_limited",
      message: "slow down",
    };
    const result = {
      type: "result",
      is_error: false,
      total_cost_usd: 0.01,
      usage: { input_tokens: 10, output_tokens: 5 },
    };
    await setPodLogs(
      ns,
      { [LABEL_AGENT]: "f-1" },
      { agent: [JSON.stringify(forged), JSON.stringify(result)] },
    );
    await createAgent(client, ns, "f-1", "forged");
    const first = await waitForPhase(client, ns, "f-1", ["Succeeded"]);
    expect(first.status?.providerRetries?.last).toMatchObject({ retryAfterSeconds: 3_000_000 });

    await createAgent(client, ns, "f-2", "forged");
    const held = await eventually("f-2 held by the forged throttle", async () => {
      const a = await getAgent(client, ns, "f-2");
      return ready(a)?.reason === "ProviderThrottled" ? a : undefined;
    });
    const message = ready(held)?.message ?? "";
    const at = first.status?.completedAt ?? "";
    const until = new Date(Date.parse(at) + 3_600_000).toISOString().replace(".000Z", "Z");
    // The answer's time is the run's end (not the year 9999), the hold an hour from it.
    expect(message).toBe(
      `anthropic at https://api.anthropic.com (key secret agent-secrets/team-c) answered 429 with retry-after 3000000 s (held at most 3600 s, PROVIDER_MAX_HOLD_SECONDS) at ${at} to the run of Agent f-1; no run starts against it before ${until}: the next run starts then`,
    );
    const event = await eventually(
      "the ProviderThrottled Event",
      async () => (await eventsOf(held?.metadata.uid, "ProviderThrottled"))[0],
    );
    expect(event).toMatchObject({ type: "Warning", note: message });
    // The hour passes: f-2 starts.
    clockOffsetMs += 61 * MINUTE;
    await waitForPhase(client, ns, "f-2", ["Succeeded"]);
  });

  it("a model named constructor ends its run with a cost, its reconcile never throwing", async () => {
    await definition("odd", "odd", "opencode/constructor");
    await stationWith("odd-station", "odd", "1s");
    const step = {
      type: "step_finish",
      part: {
        type: "step-finish",
        tokens: { input: 1000, output: 1000, cache: { read: 0, write: 0 } },
        cost: 0,
      },
    };
    await setPodLogs(ns, { [LABEL_AGENT]: "o-1" }, { agent: [JSON.stringify(step)] });
    await createAgent(client, ns, "o-1", "odd-station");
    const done = await waitForPhase(client, ns, "o-1", ["Succeeded"]);
    expect(done.status?.costUSD).toMatch(/^\d+(\.\d+)?$/);
    expect(Number(done.status?.costUSD)).toBeGreaterThan(0);
    expect(done.status?.unpricedModels).toEqual(["opencode/constructor"]);
  });
});
