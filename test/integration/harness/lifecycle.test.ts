import { existsSync } from "node:fs";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  COMPONENTS,
  compactEtcd,
  planePortsFree,
  restartApiServer,
  startControlPlane,
} from "../../harness/cluster.js";
import { processAlive } from "../../harness/processes.js";

// A second, private plane next to the run's shared one: proves several planes coexist, that
// kube-apiserver restarts in place, and that stop leaves no process, port or directory behind.
describe("a private control plane", () => {
  it("starts beside the shared one, restarts its API server, and stops leaving nothing behind", async () => {
    const plane = await startControlPlane();
    const state = plane.state;
    let last = state;
    try {
      for (const name of COMPONENTS) expect(processAlive(state.pids[name]), name).toBe(true);

      const kc = new KubeConfig();
      kc.loadFromFile(plane.kubeconfig);
      const core = kc.makeApiClient(CoreV1Api);
      await core.createNamespace({ body: { metadata: { name: "before-restart" } } });

      const oldPid = state.pids["kube-apiserver"];
      await restartApiServer(plane.stateFile);
      const newPid = plane.state.pids["kube-apiserver"];
      expect(newPid).not.toBe(oldPid);
      expect(processAlive(oldPid)).toBe(false);
      // Same port, same data: the namespace created before the restart is still there.
      const ns = await core.readNamespace({ name: "before-restart" });
      expect(ns.metadata?.name).toBe("before-restart");

      expect(await compactEtcd(plane.stateFile)).toBeGreaterThan(1);
    } finally {
      last = plane.state;
      await plane.stop();
    }
    for (const name of COMPONENTS) expect(processAlive(last.pids[name]), `${name} pid`).toBe(false);
    expect(await planePortsFree(last)).toBe(true);
    expect(existsSync(state.dir)).toBe(false);
    expect(existsSync(state.etcdDataDir)).toBe(false);
  });
});
