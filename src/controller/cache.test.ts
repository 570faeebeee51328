import { describe, expect, it } from "vitest";
import { isOlder, ObjectCache } from "./cache.js";

const o = (name: string, rv: string, extra = "") => ({ metadata: { name, resourceVersion: rv }, extra });

describe("ObjectCache.apply", () => {
  it("upserts ADDED/MODIFIED and evicts DELETED", () => {
    const c = new ObjectCache<ReturnType<typeof o>>();
    expect(c.apply("ADDED", o("a", "1"))?.type).toBe("upsert");
    expect(c.apply("MODIFIED", o("a", "2", "x"))?.type).toBe("upsert");
    expect(c.get("a")?.extra).toBe("x");
    expect(c.apply("DELETED", o("a", "3"))?.type).toBe("delete");
    expect(c.get("a")).toBeUndefined();
    expect(c.apply("DELETED", o("a", "3"))).toBeUndefined();
  });

  it("ignores a replayed or older version", () => {
    const c = new ObjectCache<ReturnType<typeof o>>();
    c.apply("ADDED", o("a", "5", "new"));
    expect(c.apply("MODIFIED", o("a", "5", "same"))).toBeUndefined();
    expect(c.apply("MODIFIED", o("a", "4", "old"))).toBeUndefined();
    expect(c.get("a")?.extra).toBe("new");
  });
});

describe("ObjectCache.replace", () => {
  it("reports new, changed and removed objects only", () => {
    const c = new ObjectCache<ReturnType<typeof o>>();
    c.replace([o("a", "1"), o("b", "2"), o("c", "3")], "3");
    const changes = c.replace([o("a", "1"), o("b", "4"), o("d", "5")], "5");
    expect(changes.map((ch) => `${ch.type}:${ch.name}`).sort()).toEqual(["delete:c", "upsert:b", "upsert:d"]);
    expect([...c.values()].map((x) => x.metadata.name).sort()).toEqual(["a", "b", "d"]);
  });

  it("never moves an object backwards to an older LIST snapshot", () => {
    const c = new ObjectCache<ReturnType<typeof o>>();
    c.apply("ADDED", o("a", "10", "from-watch"));
    c.apply("ADDED", o("late", "12"));
    const changes = c.replace([o("a", "8", "from-list")], "9");
    expect(c.get("a")?.extra).toBe("from-watch");
    // "late" was created after the LIST's snapshot, so its absence there means nothing.
    expect(c.get("late")).toBeDefined();
    expect(changes).toEqual([]);
  });
});

describe("isOlder", () => {
  it.each([
    ["1", "2", true],
    ["2", "1", false],
    ["2", "2", false],
    ["9", "10", true],
    ["abc", "1", false],
    [undefined, "1", false],
  ])("%s < %s → %s", (a, b, r) => {
    expect(isOlder(a, b)).toBe(r);
  });
});

describe("ObjectCache.replace keeps what it holds", () => {
  it("an object listed again at the same resourceVersion stays the cached one", () => {
    const c = new ObjectCache<ReturnType<typeof o>>();
    c.replace([o("a", "1", "first")], "1");
    const held = c.get("a");
    expect(c.replace([o("a", "1", "relisted")], "2")).toEqual([]);
    expect(c.get("a")).toBe(held);
  });
});
