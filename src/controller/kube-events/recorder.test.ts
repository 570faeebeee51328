import { describe, expect, it } from "vitest";
import type { KubeEvent } from "../../core/actions.js";
import {
  type EventSeries,
  type EventsV1Event,
  type EventWriter,
  eventObject,
  microTime,
  truncateBytes,
} from "../../kube/event-writer.js";
import { EventRecorder } from "./recorder.js";

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const regarding = { namespace: "ai-agents", name: "run-1", uid: "uid-run-1" };
const started: KubeEvent = { type: "Normal", reason: "Started", action: "Start", note: "the run started" };

/** A writer that records calls; `gate` holds every write until released. */
class FakeWriter implements EventWriter {
  created: EventsV1Event[] = [];
  patched: { name: string; series: EventSeries }[] = [];
  failures = 0;
  patchAnswer: "ok" | "not_found" = "ok";
  private release: (() => void) | undefined;
  private gate: Promise<void> | undefined;

  hold(): void {
    this.gate = new Promise((r) => {
      this.release = r;
    });
  }
  open(): void {
    this.release?.();
    this.gate = undefined;
  }
  async create(e: EventsV1Event): Promise<void> {
    await this.gate;
    if (this.failures > 0) {
      this.failures--;
      throw new Error("503 ServiceUnavailable");
    }
    this.created.push(e);
  }
  async patchSeries(_ns: string, name: string, series: EventSeries): Promise<"ok" | "not_found"> {
    await this.gate;
    this.patched.push({ name, series });
    return this.patchAnswer;
  }
}

function recorder(writer: EventWriter, extra: Partial<ConstructorParameters<typeof EventRecorder>[0]> = {}) {
  let now = T0;
  const logs: string[] = [];
  const r = new EventRecorder({
    writer,
    reportingInstance: "agent-controller-7d9f-abcde",
    now: () => now++,
    sleep: async () => {},
    log: (m) => logs.push(m),
    ...extra,
  });
  return { r, logs };
}

describe("EventRecorder", () => {
  it("record() returns at once while the API write is still pending (never blocks a reconcile)", async () => {
    const writer = new FakeWriter();
    writer.hold();
    const { r } = recorder(writer);
    r.record(regarding, started);
    expect(writer.created).toEqual([]);
    writer.open();
    await r.flush();
    expect(writer.created).toHaveLength(1);
  });

  it("writes an events.k8s.io/v1 Event about the Agent, from the controller and this pod", async () => {
    const writer = new FakeWriter();
    const { r } = recorder(writer);
    r.record(regarding, started);
    await r.flush();
    expect(writer.created[0]).toEqual({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: expect.stringMatching(/^run-1\.[0-9a-f]+$/), namespace: "ai-agents" },
      eventTime: "2026-12-01T12:00:00.000000Z",
      reportingController: "agents.re-cinq.com/agent-controller",
      reportingInstance: "agent-controller-7d9f-abcde",
      action: "Start",
      reason: "Started",
      type: "Normal",
      note: "the run started",
      regarding: {
        apiVersion: "agents.re-cinq.com/v1beta1",
        kind: "Agent",
        namespace: "ai-agents",
        name: "run-1",
        uid: "uid-run-1",
      },
    });
  });

  it("a repeat bumps the first Event's series instead of creating another", async () => {
    const writer = new FakeWriter();
    const { r } = recorder(writer);
    r.record(regarding, started);
    r.record(regarding, started);
    r.record(regarding, started);
    await r.flush();
    expect(writer.created).toHaveLength(1);
    const name = writer.created[0]?.metadata.name;
    expect(writer.patched).toEqual([
      { name, series: { count: 2, lastObservedTime: microTime(T0 + 1) } },
      { name, series: { count: 3, lastObservedTime: microTime(T0 + 2) } },
    ]);
  });

  it("a repeat of an Event that expired on the server creates it again with its series", async () => {
    const writer = new FakeWriter();
    const { r } = recorder(writer);
    r.record(regarding, started);
    await r.flush();
    writer.patchAnswer = "not_found";
    r.record(regarding, started);
    await r.flush();
    expect(writer.created).toHaveLength(2);
    expect(writer.created[1]?.series).toEqual({ count: 2, lastObservedTime: microTime(T0 + 1) });
    expect(writer.created[1]?.metadata.name).toBe(writer.created[0]?.metadata.name);
  });

  it("a full queue drops the newest Events and counts them", async () => {
    const writer = new FakeWriter();
    writer.hold();
    const { r, logs } = recorder(writer, { queueCapacity: 2 });
    for (let i = 0; i < 5; i++) r.record(regarding, { ...started, note: `n${i}` });
    writer.open();
    await r.flush();
    // The first one was taken by the worker at once; two more fit in the queue.
    expect(writer.created.map((e) => e.note)).toEqual(["n0", "n1", "n2"]);
    expect(r.dropped).toBe(2);
    expect(logs[0]).toBe("event queue full (2); 1 Kubernetes Events dropped so far");
  });

  it("a failed write is retried, then dropped with a log line naming the Event", async () => {
    const writer = new FakeWriter();
    const { r, logs } = recorder(writer, { maxAttempts: 3 });
    writer.failures = 2;
    r.record(regarding, started);
    await r.flush();
    expect(writer.created).toHaveLength(1);
    writer.failures = 3;
    r.record(regarding, { ...started, note: "other" });
    await r.flush();
    expect(writer.created).toHaveLength(1);
    expect(r.dropped).toBe(1);
    expect(logs).toEqual([
      "Kubernetes Event Started for Agent run-1 dropped after 3 attempts: Error: 503 ServiceUnavailable",
    ]);
  });

  it("after stop() nothing more is accepted", async () => {
    const writer = new FakeWriter();
    const { r } = recorder(writer);
    await r.stop(10);
    r.record(regarding, started);
    await r.flush();
    expect(writer.created).toEqual([]);
  });
});

describe("Event object limits", () => {
  it("caps the note at 1024 bytes at a character boundary", () => {
    const e = eventObject({
      name: "run-1.1",
      regarding,
      event: started,
      note: "ü".repeat(2000),
      at: T0,
      reportingInstance: "p",
    });
    expect(Buffer.byteLength(e.note)).toBeLessThanOrEqual(1024);
    expect(e.note.endsWith("…")).toBe(true);
  });

  it.each([
    ["short", 10, "short"],
    ["abcdef", 4, "a…"],
  ])("truncateBytes(%j, %d) = %j", (text, max, out) => {
    expect(truncateBytes(text, max)).toBe(out);
  });

  it("eventTime is a MicroTime (six fractional digits)", () => {
    expect(microTime(T0 + 123)).toBe("2026-12-01T12:00:00.123000Z");
  });
});
