import type { V1ContainerStatus } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { mayBeStuck, neverStartsReason } from "./stuck-pod.js";

const T0 = Date.parse("2026-12-01T10:00:00Z");
const waiting = (name: string, reason: string, message?: string): V1ContainerStatus =>
  ({
    name,
    image: "x",
    imageID: "",
    ready: false,
    restartCount: 0,
    state: { waiting: { reason, message } },
  }) as V1ContainerStatus;
const running = (name: string): V1ContainerStatus =>
  ({
    name,
    image: "x",
    imageID: "",
    ready: true,
    restartCount: 0,
    state: { running: {} },
  }) as V1ContainerStatus;

describe("neverStartsReason (docs/decisions.md D-22)", () => {
  const missingKey = waiting(
    "init",
    "CreateContainerConfigError",
    "couldn't find key k in Secret ns/agent-secrets",
  );
  it.each<[string, Parameters<typeof neverStartsReason>[0], number, string | undefined]>([
    [
      "init without a secret key, past 5 min",
      { createdAt: T0, initContainerStatuses: [missingKey] },
      301,
      "CreateContainerConfigError: couldn't find key k in Secret ns/agent-secrets",
    ],
    ["the same, 4 min 59 s old", { createdAt: T0, initContainerStatuses: [missingKey] }, 299, undefined],
    [
      "agent image cannot be pulled",
      {
        createdAt: T0,
        containerStatuses: [waiting("agent", "ImagePullBackOff", 'Back-off pulling image "bad"')],
      },
      600,
      'ImagePullBackOff: Back-off pulling image "bad"',
    ],
    [
      "no message: the reason alone",
      { createdAt: T0, containerStatuses: [waiting("agent", "InvalidImageName")] },
      600,
      "InvalidImageName",
    ],
    [
      "ErrImagePull",
      { createdAt: T0, containerStatuses: [waiting("agent", "ErrImagePull", "x")] },
      600,
      "ErrImagePull: x",
    ],
    [
      "imagePullPolicy Never and no such image on the node",
      {
        createdAt: T0,
        containerStatuses: [
          waiting(
            "agent",
            "ErrImageNeverPull",
            'Container image "x:1" is not present with pull policy of Never',
          ),
        ],
      },
      600,
      'ErrImageNeverPull: Container image "x:1" is not present with pull policy of Never',
    ],
    [
      "CreateContainerError",
      { createdAt: T0, containerStatuses: [waiting("agent", "CreateContainerError", "y")] },
      600,
      "CreateContainerError: y",
    ],
    [
      "agent waits for the init (PodInitializing)",
      { createdAt: T0, containerStatuses: [waiting("agent", "PodInitializing")] },
      600,
      undefined,
    ],
    [
      "a Station sidecar that cannot pull is not the run's container",
      { createdAt: T0, containerStatuses: [running("agent"), waiting("sidecar", "ImagePullBackOff", "z")] },
      600,
      undefined,
    ],
    ["running", { createdAt: T0, containerStatuses: [running("agent")] }, 600, undefined],
    ["no pod", undefined, 600, undefined],
  ])("%s", (_, pod, ageSeconds, expected) => {
    expect(neverStartsReason(pod, T0 + ageSeconds * 1000, 300)).toBe(expected);
  });
});

describe("mayBeStuck: the pod is read only for an old run without a ready pod", () => {
  it.each<[string, number | undefined, number | undefined, number, boolean]>([
    ["young run", T0, 0, 60, false],
    ["old run, no ready pod", T0, 0, 300, true],
    ["old run, ready unknown", T0, undefined, 301, true],
    ["old run, a ready pod", T0, 1, 3600, false],
    ["no startedAt", undefined, 0, 3600, false],
  ])("%s", (_, startedAt, ready, ageSeconds, expected) => {
    expect(mayBeStuck(startedAt, ready, T0 + ageSeconds * 1000, 300)).toBe(expected);
  });
});
