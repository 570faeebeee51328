import { describe, expect, it } from "vitest";
import type { Agent } from "../core/types.js";
import { agentAfterConflict } from "./fresh-after-conflict.js";

const agent = (rv: string, uid = "u-a"): Agent =>
  ({ metadata: { name: "a", uid, resourceVersion: rv }, spec: { stationRef: "s" } }) as Agent;

describe("agentAfterConflict: what a reconcile computes from after a 409", () => {
  const rows: {
    name: string;
    cached: string;
    conflictedAt?: string;
    server?: Agent;
    /** What the cache holds after the store (it never moves backwards). */
    stored?: Agent;
    want: string | undefined;
    reads: number;
  }[] = [
    { name: "no conflict: the cache, no read", cached: "7", want: "7", reads: 0 },
    {
      name: "the cache already moved past the refused version: the cache, no read",
      cached: "9",
      conflictedAt: "7",
      want: "9",
      reads: 0,
    },
    {
      name: "the cache still holds the refused version: re-read from the API server",
      cached: "7",
      conflictedAt: "7",
      server: agent("12"),
      want: "12",
      reads: 1,
    },
    {
      name: "the Agent is gone: nothing to compute from",
      cached: "7",
      conflictedAt: "7",
      want: undefined,
      reads: 1,
    },
    {
      name: "another Agent of the same name: nothing to compute from",
      cached: "7",
      conflictedAt: "7",
      server: agent("12", "u-other"),
      want: undefined,
      reads: 1,
    },
    {
      name: "the re-read returns the refused version itself: not computed again",
      cached: "7",
      conflictedAt: "7",
      server: agent("7"),
      want: undefined,
      reads: 1,
    },
  ];
  for (const r of rows) {
    it(r.name, async () => {
      let reads = 0;
      let stored: Agent | undefined;
      const got = await agentAfterConflict(agent(r.cached), {
        conflictedAt: (uid) => (uid === "u-a" ? r.conflictedAt : undefined),
        reread: async () => {
          reads++;
          return r.server;
        },
        store: (fresh) => {
          stored = fresh;
          return r.stored ?? fresh;
        },
      });
      expect(got?.metadata.resourceVersion).toBe(r.want);
      expect(reads).toBe(r.reads);
      // What was read is what the cache is given, so the watch event that follows is a no-op.
      if (r.server && r.server.metadata.uid === "u-a") expect(stored).toBe(r.server);
    });
  }
});
