/**
 * The pod runner runs opted-in pods as local processes, like a kubelet: init then main containers,
 * a shared emptyDir, env from value/secretKeyRef/fieldRef, statuses and phase, logs through the real
 * `pods/log` API, graceful deletion, and Job pods through the real job controller. Only `npm run dev`
 * uses it (on a machine without the real node), so this file starts a plane of its own with it.
 */
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { BatchV1Api, CoreV1Api, KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, startControlPlane } from "../../harness/cluster.js";
import { eventually, eventuallyPasses } from "../../harness/context.js";
import { RUNNER_NODE_NAME, RUNNER_SCHEDULING } from "../../harness/pod-runner/index.js";

const run = promisify(execFile);
const ns = "pod-runner";
let runnerPlane: ControlPlane;
let core: CoreV1Api;
let batch: BatchV1Api;
let scratch: string;

const runnerPodTemplate = () => structuredClone(RUNNER_SCHEDULING) as unknown as Partial<V1Pod["spec"]>;

beforeAll(async () => {
  runnerPlane = await startControlPlane({ podRunner: true });
  const kc = new KubeConfig();
  kc.loadFromFile(runnerPlane.kubeconfig);
  core = kc.makeApiClient(CoreV1Api);
  batch = kc.makeApiClient(BatchV1Api);
  await core.createNamespace({ body: { metadata: { name: ns } } });
  scratch = mkdtempSync(join(tmpdir(), "pod-runner-it-"));
  chmodSync(scratch, 0o777);
});
afterAll(async () => {
  await runnerPlane?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

const sh = (script: string) => ["/bin/sh", "-c", script];

async function createPod(
  name: string,
  spec: Partial<V1Pod["spec"]> & { containers: unknown[] },
): Promise<void> {
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name },
      spec: { restartPolicy: "Never", ...runnerPodTemplate(), ...spec } as V1Pod["spec"],
    },
  });
}

const readPod = (name: string) => core.readNamespacedPod({ namespace: ns, name });

async function finished(name: string): Promise<V1Pod> {
  return eventually(`pod ${name} Succeeded or Failed`, async () => {
    const pod = await readPod(name);
    return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed" ? pod : undefined;
  });
}

const log = (name: string, container: string, extra: { tailLines?: number; limitBytes?: number } = {}) =>
  core.readNamespacedPodLog({ namespace: ns, name, container, ...extra });

describe("pod runner", () => {
  it("runs the init container first, then both main containers on a shared emptyDir, and reports exit codes and phase", async () => {
    await createPod("order", {
      volumes: [{ name: "data", emptyDir: {} }],
      initContainers: [
        {
          name: "init",
          image: "busybox",
          command: sh("echo init > /data/order; echo init done"),
          volumeMounts: [{ name: "data", mountPath: "/data" }],
        },
      ],
      containers: [
        {
          name: "first",
          image: "busybox",
          command: sh("cat /data/order; echo first >> /data/order; exit 0"),
          volumeMounts: [{ name: "data", mountPath: "/data" }],
        },
        {
          name: "second",
          image: "busybox",
          command: sh("head -n 1 /data/order; echo failing >&2; exit 3"),
          volumeMounts: [{ name: "data", mountPath: "/data", readOnly: true }],
          terminationMessagePolicy: "FallbackToLogsOnError",
        },
      ],
    });
    const pod = await finished("order");
    expect(pod.spec?.nodeName).toBe(RUNNER_NODE_NAME);
    expect(pod.status?.phase).toBe("Failed");
    expect(pod.status?.podIP).toMatch(/^127\.\d+\.\d+\.\d+$/);
    expect(pod.status?.initContainerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 0,
      reason: "Completed",
    });
    const byName = Object.fromEntries(
      (pod.status?.containerStatuses ?? []).map((c) => [c.name, c.state?.terminated]),
    );
    expect(byName.first).toMatchObject({ exitCode: 0, reason: "Completed" });
    expect(byName.second).toMatchObject({ exitCode: 3, reason: "Error", message: "init\nfailing\n" });
    expect(await log("order", "init")).toBe("init done\n");
    // Both main containers saw what the init container wrote before they started.
    expect((await log("order", "first")).split("\n")[0]).toBe("init");
    expect((await log("order", "second")).split("\n")[0]).toBe("init");
  });

  it("resolves env from value, secretKeyRef and fieldRef, runs as the securityContext user, and nothing of the runner's env leaks", async () => {
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: "agent-secrets" }, stringData: { token: "s3cret" } },
    });
    await createPod("env", {
      securityContext: { fsGroup: 1000 },
      containers: [
        {
          name: "main",
          image: "busybox",
          command: sh(
            'echo "$PLAIN|$TOKEN|$POD_NAME|$POD_NAMESPACE|$POD_IP|$(id -u):$(id -g)|$HOME|$VITEST"',
          ),
          securityContext: { runAsUser: 1000, runAsGroup: 1000 },
          env: [
            { name: "PLAIN", value: "plain" },
            { name: "TOKEN", valueFrom: { secretKeyRef: { name: "agent-secrets", key: "token" } } },
            { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
            { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
            { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
          ],
        },
      ],
    });
    const pod = await finished("env");
    expect(pod.status?.phase).toBe("Succeeded");
    expect(await log("env", "main")).toBe(`plain|s3cret|env|${ns}|${pod.status?.podIP}|1000:1000|/|\n`);
  });

  it("waits with CreateContainerConfigError while a secret key is missing, then starts once it is added", async () => {
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: "later" }, stringData: { other: "x" } },
    });
    await createPod("missing-key", {
      containers: [
        {
          name: "main",
          image: "busybox",
          command: sh('echo "got $KEY"'),
          env: [{ name: "KEY", valueFrom: { secretKeyRef: { name: "later", key: "key" } } }],
        },
      ],
    });
    const waiting = await eventually("CreateContainerConfigError", async () => {
      const pod = await readPod("missing-key");
      const w = pod.status?.containerStatuses?.[0]?.state?.waiting;
      return w?.reason === "CreateContainerConfigError" ? { pod, w } : undefined;
    });
    expect(waiting.w.message).toBe(`couldn't find key key in Secret ${ns}/later`);
    expect(waiting.pod.status?.phase).toBe("Pending");
    const secret = await core.readNamespacedSecret({ namespace: ns, name: "later" });
    await core.replaceNamespacedSecret({
      namespace: ns,
      name: "later",
      body: { ...secret, data: { ...secret.data, key: Buffer.from("now").toString("base64") } },
    });
    expect((await finished("missing-key")).status?.phase).toBe("Succeeded");
    expect(await log("missing-key", "main")).toBe("got now\n");
  });

  it("serves logs through pods/log with tailLines and limitBytes, and to kubectl logs", async () => {
    await createPod("logs", {
      containers: [
        {
          name: "main",
          image: "busybox",
          command: sh("for i in 1 2 3 4 5; do echo line $i; done; echo err >&2"),
        },
      ],
    });
    await finished("logs");
    expect(await log("logs", "main")).toBe("line 1\nline 2\nline 3\nline 4\nline 5\nerr\n");
    expect(await log("logs", "main", { tailLines: 2 })).toBe("line 5\nerr\n");
    expect(await log("logs", "main", { limitBytes: 9 })).toBe("line 1\nli");
    const { stdout } = await run("kubectl", [
      `--kubeconfig=${runnerPlane.kubeconfig}`,
      "-n",
      ns,
      "logs",
      "logs",
      "--tail=1",
    ]);
    expect(stdout).toBe("err\n");
  });

  it("follows a log until the container ends", async () => {
    await createPod("follow", {
      containers: [{ name: "main", image: "busybox", command: sh("echo one; sleep 2; echo two") }],
    });
    await eventually("follow pod Running", async () => (await readPod("follow")).status?.phase === "Running");
    // Resolves only when the runner ends the stream, i.e. after the container has exited.
    const followed = await core.readNamespacedPodLog({
      namespace: ns,
      name: "follow",
      container: "main",
      follow: true,
    });
    expect(followed).toBe("one\ntwo\n");
  });

  it("ends a pod past its own activeDeadlineSeconds as Failed with reason DeadlineExceeded", async () => {
    await createPod("deadline", {
      activeDeadlineSeconds: 2,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "main", image: "busybox", command: sh("while :; do sleep 0.1; done") }],
    });
    const pod = await finished("deadline");
    expect(pod.status).toMatchObject({
      phase: "Failed",
      reason: "DeadlineExceeded",
      message: "Pod was active on the node longer than the specified deadline",
    });
    expect(pod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(143);
  });

  it("becomes Ready only once its readinessProbe answers on the pod IP", async () => {
    const server =
      "require('http').createServer((q,s)=>s.end('ok')).listen(8090, process.env.POD_IP, () => console.log('listening'))";
    await createPod("ready", {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: "main",
          image: "node",
          command: sh('sleep 1; exec /usr/bin/node -e "$0"'),
          args: [server],
          ports: [{ containerPort: 8090 }],
          readinessProbe: { httpGet: { path: "/healthz", port: 8090 } },
          env: [{ name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
        },
      ],
    });
    const pod = await eventually("pod ready Ready", async () => {
      const p = await readPod("ready");
      return p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? p : undefined;
    });
    expect(pod.status?.phase).toBe("Running");
    // The runner copies the container's stdout into its log as it comes: not necessarily before the probe.
    await eventuallyPasses("the ready pod's log", async () => {
      expect(await log("ready", "main")).toContain("listening");
    });
    await core.deleteNamespacedPod({ namespace: ns, name: "ready" });
  });

  it("on deletion sends SIGTERM to the containers, then removes the pod", async () => {
    const marker = join(scratch, "terminated");
    await createPod("deleted", {
      terminationGracePeriodSeconds: 20,
      containers: [
        {
          name: "main",
          image: "busybox",
          command: sh("trap 'echo TERM > \"$0\"; exit 0' TERM; echo started; while :; do sleep 0.1; done"),
          args: [marker],
        },
      ],
    });
    await eventually(
      "deleted pod Running",
      async () => (await readPod("deleted")).status?.phase === "Running",
    );
    await core.deleteNamespacedPod({ namespace: ns, name: "deleted" });
    await eventually(
      "deleted pod removed",
      async () => {
        try {
          await readPod("deleted");
          return undefined;
        } catch (err) {
          return (err as { code?: number }).code === 404;
        }
      },
      30_000,
    );
    expect(existsSync(marker) ? readFileSync(marker, "utf8") : "no marker").toBe("TERM\n");
  });

  it("runs a Job's pod to completion through the real job controller", async () => {
    await batch.createNamespacedJob({
      namespace: ns,
      body: {
        metadata: { name: "job" },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              ...runnerPodTemplate(),
              restartPolicy: "Never",
              containers: [{ name: "main", image: "busybox", command: sh("echo job ran") }],
            },
          },
        },
      },
    });
    const job = await eventually("Job complete", async () => {
      const j = await batch.readNamespacedJob({ namespace: ns, name: "job" });
      return j.status?.conditions?.some((c) => c.type === "Complete" && c.status === "True") ? j : undefined;
    });
    expect(job.status?.succeeded).toBe(1);
    const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: "job-name=job" });
    expect(pods.items[0]?.spec?.nodeName).toBe(RUNNER_NODE_NAME);
    expect(await log(pods.items[0]?.metadata?.name ?? "", "main")).toBe("job ran\n");
  });
});

describe("stopping a plane with a running runner pod", () => {
  it("kills the pod's processes (its whole process group) and removes its directories", async () => {
    const plane = await startControlPlane({ podRunner: true });
    const pidFile = join(scratch, "stop-pids");
    const podDir = join(plane.state.dir, "pod-runner");
    try {
      const kc = new KubeConfig();
      kc.loadFromFile(plane.kubeconfig);
      const privateCore = kc.makeApiClient(CoreV1Api);
      await privateCore.createNamespacedPod({
        namespace: "default",
        body: {
          metadata: { name: "lingers" },
          spec: {
            ...runnerPodTemplate(),
            restartPolicy: "Never",
            volumes: [{ name: "v", emptyDir: {} }],
            containers: [
              {
                name: "main",
                image: "busybox",
                // The shell and a background child: both must go.
                command: sh('sleep 300 & echo "$$ $!" > "$0"; wait'),
                args: [pidFile],
                volumeMounts: [{ name: "v", mountPath: "/lingers" }],
              },
            ],
          },
        },
      });
      await eventually("pid file", () =>
        existsSync(pidFile) ? readFileSync(pidFile, "utf8").trim() : undefined,
      );
    } finally {
      await plane.stop();
    }
    const pids = readFileSync(pidFile, "utf8").trim().split(" ").map(Number);
    expect(pids).toHaveLength(2);
    // A SIGKILLed orphan may stay a zombie until its new parent reaps it: that is gone too.
    const running = (pid: number) => {
      try {
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
      } catch {
        return false;
      }
    };
    await eventually("the pod's processes gone", () => pids.every((pid) => !running(pid)), 5_000);
    expect(existsSync(podDir)).toBe(false);
  });
});
