import { describe, expect, it } from "vitest";
import { TokenBucket, TtlCache } from "./budget.js";

describe("TokenBucket", () => {
  it("gives its capacity at once, then refills at its rate and never past its capacity", () => {
    let t = 0;
    const bucket = new TokenBucket(3, 2, () => t);
    expect([bucket.take(), bucket.take(), bucket.take(), bucket.take()]).toEqual([true, true, true, false]);
    t = 500; // half a second: one token
    expect([bucket.take(), bucket.take()]).toEqual([true, false]);
    t = 60_000;
    expect([bucket.take(), bucket.take(), bucket.take(), bucket.take()]).toEqual([true, true, true, false]);
  });
});

describe("TtlCache", () => {
  it("forgets an entry after its time and drops the oldest entry when full", () => {
    let t = 0;
    const cache = new TtlCache<string>(1000, 2, () => t);
    cache.set("a", "A");
    cache.set("b", "B");
    cache.set("c", "C");
    expect([cache.get("a"), cache.get("b"), cache.get("c")]).toEqual([undefined, "B", "C"]);
    t = 1000;
    expect(cache.get("b")).toBeUndefined();
  });
});
