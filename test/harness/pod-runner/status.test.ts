import { describe, expect, it } from "vitest";
import { exitCodeOf, type PodView, podPhase, podStatus, type RunState } from "./status.js";
import type { PodJson } from "./types.js";

const waiting = (reason = "PodInitializing"): RunState => ({ kind: "waiting", reason });
const running = (ready = true): RunState => ({ kind: "running", startedAt: "t0", ready, containerID: "c" });
const exited = (exitCode: number): RunState => ({
  kind: "terminated",
  exitCode,
  reason: exitCode === 0 ? "Completed" : "Error",
  startedAt: "t0",
  finishedAt: "t1",
  containerID: "c",
});
const view = (init: RunState[], main: RunState[], extra: Partial<PodView> = {}): PodView => ({
  init,
  main,
  hostIP: "127.0.0.1",
  podIP: "127.9.0.2",
  ...extra,
});

const pod: PodJson = {
  metadata: { name: "p", namespace: "ns", uid: "u" },
  spec: {
    initContainers: [{ name: "init", image: "img" }],
    containers: [
      { name: "agent", image: "img" },
      { name: "courier", image: "img" },
    ],
  },
};

describe("podPhase (restartPolicy Never)", () => {
  it.each([
    ["init waiting", view([waiting()], [waiting(), waiting()]), "Pending"],
    ["init running", view([running()], [waiting(), waiting()]), "Pending"],
    ["init failed", view([exited(2)], [waiting(), waiting()]), "Failed"],
    ["init done, mains not started", view([exited(0)], [waiting(), waiting()]), "Pending"],
    ["one main running", view([exited(0)], [running(), waiting("CreateContainerConfigError")]), "Running"],
    ["one main failed, one running", view([exited(0)], [exited(3), running()]), "Running"],
    ["all mains exited 0", view([exited(0)], [exited(0), exited(0)]), "Succeeded"],
    ["a main exited non-zero", view([exited(0)], [exited(0), exited(1)]), "Failed"],
    [
      "ended by activeDeadlineSeconds",
      view([exited(0)], [running(), running()], { ended: { reason: "DeadlineExceeded", message: "m" } }),
      "Failed",
    ],
  ])("%s -> %s", (_, v, phase) => {
    expect(podPhase(v)).toBe(phase);
  });
});

describe("podStatus", () => {
  it("reports init progress, waiting mains and unready conditions while initializing", () => {
    const s = podStatus(pod, view([running()], [waiting(), waiting()]), "now");
    expect(s.phase).toBe("Pending");
    expect(s.initContainerStatuses?.[0]?.state).toEqual({ running: { startedAt: "t0" } });
    expect(s.containerStatuses?.map((c) => c.state)).toEqual([
      { waiting: { reason: "PodInitializing" } },
      { waiting: { reason: "PodInitializing" } },
    ]);
    const initialized = s.conditions?.find((c) => c.type === "Initialized");
    expect(initialized).toMatchObject({
      status: "False",
      reason: "ContainersNotInitialized",
      message: "containers with incomplete status: [init]",
    });
    expect(s.conditions?.find((c) => c.type === "Ready")).toMatchObject({
      status: "False",
      message: "containers with unready status: [agent courier]",
    });
    expect(s.podIP).toBe("127.9.0.2");
  });

  it("is Ready only when every main container is running and ready", () => {
    const notYet = podStatus(pod, view([exited(0)], [running(true), running(false)]), "now");
    expect(notYet.conditions?.find((c) => c.type === "Ready")?.status).toBe("False");
    const ready = podStatus(pod, view([exited(0)], [running(true), running(true)]), "now");
    expect(ready.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    expect(ready.containerStatuses?.every((c) => c.ready && c.started)).toBe(true);
  });

  it("keeps lastTransitionTime of unchanged conditions", () => {
    const first = podStatus(pod, view([exited(0)], [running(false), running(false)]), "t1");
    const second = podStatus(
      { ...pod, status: { conditions: first.conditions ?? [] } },
      view([exited(0)], [running(true), running(true)]),
      "t2",
    );
    expect(second.conditions?.find((c) => c.type === "Initialized")?.lastTransitionTime).toBe("t1");
    expect(second.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime).toBe("t2");
  });

  it("carries the terminated exit code, reason and message, and DeadlineExceeded", () => {
    const failed: RunState = {
      ...(exited(1) as Extract<RunState, { kind: "terminated" }>),
      message: "boom\n",
    };
    const s = podStatus(
      pod,
      view([exited(0)], [failed, exited(0)], { ended: { reason: "DeadlineExceeded", message: "too long" } }),
      "now",
    );
    expect(s.containerStatuses?.[0]?.state).toMatchObject({
      terminated: { exitCode: 1, reason: "Error", message: "boom\n" },
    });
    expect(s).toMatchObject({ phase: "Failed", reason: "DeadlineExceeded", message: "too long" });
  });
});

describe("exitCodeOf", () => {
  it.each([
    [0, null, 0],
    [3, null, 3],
    [null, "SIGKILL", 137],
    [null, "SIGTERM", 143],
  ] as const)("code %s signal %s -> %s", (code, signal, expected) => {
    expect(exitCodeOf(code, signal)).toBe(expected);
  });
});
