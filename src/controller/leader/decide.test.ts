import { describe, expect, it } from "vitest";
import { decide, type LeaseView, type Observation } from "./decide.js";

const D = 15_000;
const lease = (holderIdentity: string, renewTime: string): LeaseView => ({
  holderIdentity,
  renewTime,
  resourceVersion: "1",
});
const obs = (holderIdentity: string, renewTime: string, firstSeenAt: number): Observation => ({
  holderIdentity,
  renewTime,
  firstSeenAt,
});

describe("decide", () => {
  it.each<[string, LeaseView | undefined, Observation | undefined, number, string, number | undefined]>([
    ["no Lease → create", undefined, undefined, 1000, "create", undefined],
    ["no Lease, stale observation → create", undefined, obs("b", "t1", 0), 1000, "create", undefined],
    ["we hold it → renew", lease("me", "t1"), undefined, 1000, "renew", 1000],
    ["we hold it, long unchanged → still renew", lease("me", "t1"), obs("me", "t1", 0), 99_000, "renew", 0],
    ["other holder, first sight → standby", lease("b", "t1"), undefined, 1000, "standby", 1000],
    [
      "other holder, unchanged < duration → standby",
      lease("b", "t1"),
      obs("b", "t1", 1000),
      15_999,
      "standby",
      1000,
    ],
    [
      "other holder, unchanged = duration → takeover",
      lease("b", "t1"),
      obs("b", "t1", 1000),
      16_000,
      "takeover",
      1000,
    ],
    [
      "other holder renewed → clock restarts",
      lease("b", "t2"),
      obs("b", "t1", 1000),
      50_000,
      "standby",
      50_000,
    ],
    [
      "holder changed, same renewTime → clock restarts",
      lease("c", "t1"),
      obs("b", "t1", 1000),
      50_000,
      "standby",
      50_000,
    ],
    ["released Lease (empty holder) → takeover", lease("", "t1"), undefined, 1000, "takeover", 1000],
  ])("%s", (_name, l, previous, now, action, firstSeenAt) => {
    const d = decide({ identity: "me", lease: l, previous, now, leaseDurationMs: D });
    expect(d.action).toBe(action);
    expect(d.observation?.firstSeenAt).toBe(firstSeenAt);
  });

  it("ignores the remote timestamp's value: a renewTime far in the past is not expired on first sight", () => {
    const d = decide({
      identity: "me",
      lease: lease("b", "1970-01-01T00:00:00.000000Z"),
      previous: undefined,
      now: Date.parse("2030-01-01T00:00:00Z"),
      leaseDurationMs: D,
    });
    expect(d.action).toBe("standby");
  });

  it("takes over only after a full duration of silence across ticks", () => {
    let previous: Observation | undefined;
    const actions: string[] = [];
    for (let now = 0; now <= 20_000; now += 5_000) {
      const d = decide({ identity: "me", lease: lease("b", "t1"), previous, now, leaseDurationMs: D });
      previous = d.observation;
      actions.push(d.action);
    }
    expect(actions).toEqual(["standby", "standby", "standby", "takeover", "takeover"]);
  });
});
