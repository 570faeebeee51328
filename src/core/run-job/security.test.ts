import { describe, expect, it } from "vitest";
import { podSpec, wiredJob } from "../../../test/support/job-build.js";

describe("pod template wiring: volumes and the pod's security (docs/run-pod.md#the-job-and-its-pod-template)", () => {
  const job = wiredJob();
  const pod = podSpec(job);
  it("replaces pod-level settings", () => {
    expect(pod.restartPolicy).toBe("Never");
    expect(pod.securityContext).toEqual({ fsGroup: 1000, seccompProfile: { type: "RuntimeDefault" } });
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.volumes).toEqual([
      { name: "cache", emptyDir: {} },
      { name: "agent", emptyDir: {} },
      { name: "workspace", emptyDir: {} },
      { name: "agent-result", emptyDir: {} },
    ]);
    expect(pod.initContainers?.map((c) => c.name)).toEqual(["init", "station-init"]);
  });
});
