import { describe, expect, it } from "vitest";
import type { Agent } from "../core/types.js";
import { StationIndex } from "./station-index.js";

const agent = (name: string, station: string): Agent =>
  ({ metadata: { name, uid: `uid-${name}` }, spec: { stationRef: station } }) as Agent;

function indexOver(cache: Map<string, Agent>) {
  const index = new StationIndex((n) => cache.get(n));
  const put = (a: Agent) => {
    cache.set(a.metadata.name ?? "", a);
    index.apply({ type: "upsert", name: a.metadata.name ?? "", object: a });
  };
  const remove = (a: Agent) => {
    cache.delete(a.metadata.name ?? "");
    index.apply({ type: "delete", name: a.metadata.name ?? "", object: a });
  };
  return { index, put, remove };
}

const names = (agents: readonly Agent[]) => agents.map((a) => a.metadata.name).sort();

describe("StationIndex", () => {
  it("lists each Station's Agents and follows creations and deletions", () => {
    const { index, put, remove } = indexOver(new Map());
    put(agent("a", "s"));
    put(agent("b", "s"));
    put(agent("c", "t"));
    expect(names(index.agents("s"))).toEqual(["a", "b"]);
    expect(names(index.agents("t"))).toEqual(["c"]);
    remove(agent("a", "s"));
    expect(names(index.agents("s"))).toEqual(["b"]);
    expect([...index.names("s")]).toEqual(["b"]);
    expect(index.agents("nowhere")).toEqual([]);
  });

  it("moves an Agent whose stationRef changed", () => {
    const { index, put } = indexOver(new Map());
    put(agent("a", "s"));
    expect(names(index.agents("s"))).toEqual(["a"]);
    put(agent("a", "t"));
    expect(names(index.agents("s"))).toEqual([]);
    expect(names(index.agents("t"))).toEqual(["a"]);
  });

  it("hands out the same frozen view until one of the Station's Agents changes", () => {
    const { index, put } = indexOver(new Map());
    put(agent("a", "s"));
    put(agent("b", "t"));
    const first = index.agents("s");
    expect(Object.isFrozen(first)).toBe(true);
    expect(index.agents("s")).toBe(first);
    put(agent("b", "t")); // another Station's change keeps the view
    expect(index.agents("s")).toBe(first);
    put({ ...agent("a", "s"), status: { phase: "Running" } } as Agent);
    const second = index.agents("s");
    expect(second).not.toBe(first);
    expect(second[0]?.status?.phase).toBe("Running");
  });

  it("names every Station it has seen", () => {
    const { index, put } = indexOver(new Map());
    put(agent("a", "s"));
    put(agent("b", "t"));
    expect([...index.stations()].sort()).toEqual(["s", "t"]);
  });
});
