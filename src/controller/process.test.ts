import { afterEach, describe, expect, it } from "vitest";
import { eventually } from "../../test/harness/eventually.js";
import type { WatchEvent } from "../kube/client.js";
import type { Resource } from "../kube/resources.js";
import { parseConfig } from "./config.js";
import { ControllerReplica } from "./process.js";

/**
 * An API server for one replica: a Lease whose renewal can be refused, one Agent, watches that stay
 * open (the Agents watch first sends a bookmark), and status writes that hang until released, as
 * on a frozen connection.
 */
function fakeApi() {
  const calls: string[] = [];
  const hung: (() => void)[] = [];
  let lease:
    | { metadata: { name: string; resourceVersion: string }; spec: Record<string, unknown> }
    | undefined;
  let leaseRv = 0;
  const api = {
    refuseRenewal: false,
    calls,
    release: () => {
      for (const r of hung.splice(0)) r();
    },
    client: {
      async get(r: Resource, _ns: string, name: string) {
        if (r.plural === "leases") return lease && structuredClone(lease);
        if (r.plural === "agents" && name === "a") return agent();
        return undefined;
      },
      async create(
        r: Resource,
        _ns: string,
        obj: { metadata: { name: string }; spec?: Record<string, unknown> },
      ) {
        if (r.plural === "leases") {
          lease = {
            metadata: { name: obj.metadata.name, resourceVersion: String(++leaseRv) },
            spec: obj.spec ?? {},
          };
        }
        return { created: true, object: obj };
      },
      async mergePatch(r: Resource, _ns: string, _name: string, patch: { spec: Record<string, unknown> }) {
        if (r.plural !== "leases" || !lease) return {};
        if (api.refuseRenewal) throw new Error("connection reset");
        lease = { metadata: { ...lease.metadata, resourceVersion: String(++leaseRv) }, spec: patch.spec };
        return lease;
      },
      async list(r: Resource, _ns: string, o: { metadataOnly?: boolean; map?: (x: unknown) => unknown }) {
        calls.push(`${o.metadataOnly ? "list-metadata" : "list"} ${r.plural}`);
        const items = r.plural === "agents" ? [agent()] : [];
        const mapped = items.map((x) => (o.map ? o.map(x) : x)).filter((x) => x !== undefined);
        return { items: mapped, resourceVersion: "10" };
      },
      async watch(
        r: Resource,
        _ns: string,
        o: { resourceVersion: string; signal: AbortSignal },
        onEvent: (e: WatchEvent<unknown>) => void,
      ) {
        calls.push(`watch ${r.plural}@${o.resourceVersion}`);
        if (r.plural === "agents" && o.resourceVersion === "10") {
          onEvent({ type: "BOOKMARK", object: { metadata: { resourceVersion: "50" } } });
        }
        await new Promise<void>((done) => {
          if (o.signal.aborted) done();
          else o.signal.addEventListener("abort", () => done(), { once: true });
        });
      },
      async patchStatus() {
        calls.push("patchStatus");
        return new Promise<"ok">((r) => hung.push(() => r("ok")));
      },
      async jsonPatch() {
        return "ok";
      },
      async addFinalizer() {
        return "ok";
      },
      async delete() {
        return true;
      },
    },
  };
  return api;
}

/** A Pending Agent whose Station does not exist: its reconcile writes a Failed status. */
function agent() {
  return {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: {
      name: "a",
      namespace: "ns",
      uid: "u-a",
      resourceVersion: "5",
      creationTimestamp: "2026-01-01T00:00:00Z",
    },
    spec: { stationRef: "missing", prompt: "hello" },
  };
}

let replica: ControllerReplica | undefined;
let api: ReturnType<typeof fakeApi> | undefined;
afterEach(async () => {
  api?.release();
  await replica?.stop({ releaseLease: false });
  replica = undefined;
});

describe("ControllerReplica: a step-down and a new term (docs/controller.md#process-structure)", () => {
  it("a stop still waiting on a status write stuck on a frozen connection hands the Agents watch on: the next term resumes it from the last resourceVersion seen and counts it", async () => {
    api = fakeApi();
    const a = api;
    replica = new ControllerReplica({
      config: parseConfig(
        { NAMESPACE: "ns", POD_NAME: "r1" },
        {},
        { leaseTickMs: 20, leaseDurationMs: 200, pollIntervalMs: 600_000, watchTimeoutSeconds: 300 },
      ),
      client: a.client as never,
      noHealthServer: true,
      log: () => {},
      stopGraceMs: 50,
    });
    await replica.start();
    // First term: listed, the Agents watch opened and saw a bookmark; the reconcile's write hangs.
    await eventually(
      "the first term's Agents watch and its stuck write",
      () => a.calls.includes("watch agents@10") && a.calls.includes("patchStatus"),
    );
    // The renewal fails: the replica steps down while the write is still stuck, then leads again.
    a.refuseRenewal = true;
    await eventually("the step-down", () => replica?.isLeader === false);
    a.refuseRenewal = false;
    await eventually(
      "the next term's Agents watch",
      () => a.calls.filter((c) => c.startsWith("watch agents@")).length >= 2,
      20_000,
    );
    const agentCalls = a.calls.filter((c) => c.endsWith(" agents") || c.startsWith("watch agents"));
    expect(agentCalls).toEqual(["list agents", "watch agents@10", "list-metadata agents", "watch agents@50"]);
    const reconnects = await replica.metrics.watchReconnects.get();
    expect(reconnects.values[0]?.value).toBe(1);
  });
});
