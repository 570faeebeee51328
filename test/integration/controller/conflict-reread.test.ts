/**
 * A second client annotates an Agent every 100 ms while it runs, so the controller's status writes
 * meet 409s. The seed drops a conflicted write and has the next reconcile recompute from fresh
 * state (docs/controller.md#write-safety): no status write after a 409 on resourceVersion X may
 * carry X again (that would be the refused write computed from the same stale object).
 *
 * To make the race certain rather than rare, the controller's Agent watch is delivered late (a
 * lagging watch, as a busy API server's watch cache lags): the cache then still holds X when a Job
 * event or the poll reconciles the Agent right after the 409.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerReplica } from "../../../src/controller/process.js";
import type { KubeClient, WatchEvent, WriteOutcome } from "../../../src/kube/client.js";
import { AGENTS } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig, podScriptAnnotations } from "../../harness/context.js";
import { eventually } from "../../harness/eventually.js";
import {
  clientFor,
  createAgent,
  createDefinition,
  createStation,
  startReplica,
  waitForPhase,
} from "./helpers.js";

/** How late the controller sees each Agent watch event (longer than the annotation interval). */
const AGENT_WATCH_LAG_MS = 300;
const ANNOTATE_EVERY_MS = 100;

interface StatusWrite {
  agent: string;
  resourceVersion: string;
  outcome: WriteOutcome | "error";
}

let client: KubeClient;
let controllerClient: KubeClient;
let ns: string;
let replica: ControllerReplica;
const writes: StatusWrite[] = [];

/** The controller's own client: records each Agent status write's precondition; Agent watch lags. */
async function instrumentedClient(): Promise<KubeClient> {
  const c = await clientFor(kubeConfig());
  const patchStatus = c.patchStatus.bind(c);
  c.patchStatus = async (r, namespace, name, resourceVersion, status, written) => {
    try {
      const outcome = await patchStatus(r, namespace, name, resourceVersion, status, written);
      if (r === AGENTS) writes.push({ agent: name, resourceVersion, outcome });
      return outcome;
    } catch (err) {
      if (r === AGENTS) writes.push({ agent: name, resourceVersion, outcome: "error" });
      throw err;
    }
  };
  const watch = c.watch.bind(c);
  c.watch = (async (r, namespace, o, onEvent: (e: WatchEvent<unknown>) => void) => {
    if (r !== AGENTS) return watch(r, namespace, o, onEvent);
    return watch(r, namespace, o, (e) => {
      // In order (equal delays fire first-in first-out); a late ERROR event is not rethrown here.
      setTimeout(() => {
        try {
          onEvent(e);
        } catch {}
      }, AGENT_WATCH_LAG_MS);
    });
  }) as KubeClient["watch"];
  return c;
}

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  controllerClient = await instrumentedClient();
  ns = await createTestNamespace("ctrl-conflict");
  await createDefinition(client, ns, "def");
  replica = await startReplica(controllerClient, ns, "replica-a");
  await eventually("leadership", async () => replica.isLeader && replica.controller?.synced);
});

afterAll(async () => {
  await replica?.stop();
  await controllerClient?.close();
  await client?.close();
});

describe("status writes after a 409", () => {
  it("never carry the conflicted resourceVersion again while another client annotates the Agent", async () => {
    await createStation(client, ns, "busy", "def", {
      annotations: podScriptAnnotations({ exitCode: 0, runTime: "3s", logs: { agent: "done" } }),
    });
    await createAgent(client, ns, "busy-1", "busy");
    // The second client: an annotation every 100 ms while the run goes from Pending to terminal.
    let annotating = true;
    const annotator = (async () => {
      for (let i = 0; annotating && i < 300; i++) {
        await client
          .mergePatch(AGENTS, ns, "busy-1", { metadata: { annotations: { "test.example/tick": String(i) } } })
          .catch(() => {});
        await new Promise((r) => setTimeout(r, ANNOTATE_EVERY_MS));
      }
    })();
    try {
      await waitForPhase(client, ns, "busy-1", ["Succeeded", "Failed"], 120_000);
    } finally {
      annotating = false;
      await annotator;
    }
    const done = await waitForPhase(client, ns, "busy-1", ["Succeeded", "Failed"]);
    expect(done.status?.phase).toBe("Succeeded");

    const mine = writes.filter((w) => w.agent === "busy-1");
    const conflicts = mine.filter((w) => w.outcome === "conflict");
    // The annotations and the lagging watch make 409s certain; without one this proves nothing.
    expect(conflicts.length).toBeGreaterThan(0);
    const resent = mine.flatMap((w, i) =>
      w.outcome === "conflict"
        ? mine.slice(i + 1).filter((later) => later.resourceVersion === w.resourceVersion)
        : [],
    );
    expect(resent, JSON.stringify(mine)).toEqual([]);
  });
});
