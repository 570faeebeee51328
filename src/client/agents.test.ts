/**
 * AgentsClient.watch and waitForTerminal over a stand-in KubeClient whose watch request, like the
 * real one, stays open until the server ends it (never, here) or its signal aborts. The client on
 * the real API server: test/integration/client/agents.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { Agent } from "../../generated/crds/agent.js";
import type { KubeClient, WatchEvent } from "../kube/client.js";
import { AgentsClient } from "./agents.js";

function agent(phase: "Pending" | "Running" | "Succeeded", resourceVersion: string): Agent {
  return {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: { name: "run-1", namespace: "ns", resourceVersion },
    spec: { stationRef: "s" },
    status: { phase },
  };
}

/** A KubeClient whose one watch request delivers `events` and then stays open; its signals are kept. */
function openWatchKube(events: WatchEvent<Agent>[]) {
  const watchSignals: AbortSignal[] = [];
  const kube = {
    get: async () => agent("Pending", "1"),
    request: async () => ({ metadata: { resourceVersion: "1" } }),
    watch: (
      _r: unknown,
      _ns: string,
      o: { signal?: AbortSignal },
      onEvent: (e: WatchEvent<Agent>) => void,
    ): Promise<void> => {
      const signal = o.signal as AbortSignal;
      watchSignals.push(signal);
      setImmediate(() => {
        for (const e of events) onEvent(e);
      });
      return new Promise((_resolve, reject) => {
        signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")), {
          once: true,
        });
      });
    },
  };
  return { client: new AgentsClient(kube as unknown as KubeClient, "ns"), watchSignals };
}

describe("AgentsClient ends its watch request when the caller is done", () => {
  it("waitForTerminal: the request is aborted once the terminal version arrived", async () => {
    const { client, watchSignals } = openWatchKube([
      { type: "MODIFIED", object: agent("Running", "2") },
      { type: "MODIFIED", object: agent("Succeeded", "3") },
    ]);
    const done = await client.waitForTerminal("run-1");
    expect(done.status?.phase).toBe("Succeeded");
    expect(watchSignals).toHaveLength(1);
    expect(watchSignals[0]?.aborted).toBe(true);
  });

  it("watch: breaking out of the loop aborts the request; the caller's signal is left alone", async () => {
    const { client, watchSignals } = openWatchKube([{ type: "ADDED", object: agent("Pending", "2") }]);
    const caller = new AbortController();
    for await (const event of client.watch({ signal: caller.signal })) {
      expect(event.type).toBe("ADDED");
      break;
    }
    expect(watchSignals[0]?.aborted).toBe(true);
    expect(caller.signal.aborted).toBe(false);
  });

  it("watch: the caller's abort still ends it", async () => {
    const { client, watchSignals } = openWatchKube([{ type: "ADDED", object: agent("Pending", "2") }]);
    const caller = new AbortController();
    const seen: string[] = [];
    for await (const event of client.watch({ signal: caller.signal })) {
      seen.push(event.type);
      caller.abort();
    }
    expect(seen).toEqual(["ADDED"]);
    expect(watchSignals[0]?.aborted).toBe(true);
  });
});
