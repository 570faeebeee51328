/**
 * The install as docs/deploy.md tells a platform team, on a plane with a real node serving Services
 * (docs/deploy.md "The test install"): `kubectl apply -k` of deploy/ through test/install (image pull
 * policy and the real node's taint only), the controller as its Deployment from inside its pods,
 * the Secret, the first Station and Agent; the Agent ends Succeeded on the real node. No controller
 * process is started by the test and no permission is added.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HarnessApi } from "../harness/api.js";
import { type ControlPlane, startControlPlane } from "../harness/cluster.js";
import { MACHINE, REAL_NODE_SCHEDULING, realNodeProblem } from "../harness/real-node/index.js";

const run = promisify(execFile);
const problem = realNodeProblem();
const log = (m: string) => process.stderr.write(`[install test] ${m}\n`);
const REPO = resolve(import.meta.dirname, "../..");
const NS = "ai-agents";

async function until<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs / 1000} s: ${what}`);
    await sleep(500);
  }
}

describe.skipIf(problem !== "")(
  `the install on a real node${problem ? ` (skipped: ${problem})` : ""}`,
  () => {
    let plane: ControlPlane | undefined;
    let api: HarnessApi;
    const kubectl = async (...args: string[]) =>
      (await run("kubectl", [`--kubeconfig=${plane?.kubeconfig}`, ...args], { cwd: REPO })).stdout;

    beforeAll(async () => {
      while (existsSync(MACHINE.lockFile)) await sleep(1_000);
      plane = await startControlPlane({ realNode: { images: ["agent", "controller"], services: true }, log });
      api = plane.api();
    }, 1_500_000);

    afterAll(async () => {
      if (plane) {
        for (const pod of (
          (await api.ok("GET", `/api/v1/namespaces/${NS}/pods`)) as {
            items: { metadata: { name: string } }[];
          }
        ).items)
          log(
            `${pod.metadata.name}:\n${(await api.request("GET", `/api/v1/namespaces/${NS}/pods/${pod.metadata.name}/log?tailLines=20`)).body}`,
          );
      }
      await plane?.stop();
    });

    it("kubectl apply -k installs the base; both controller replicas become Ready, one holds the Lease", async () => {
      // CRDs and the namespace come in the same apply; a second apply is idempotent.
      await kubectl("apply", "-k", "test/install");
      await kubectl("apply", "-k", "test/install");
      const ready = await until("the Deployment's 2 replicas Ready", 180_000, async () => {
        const d = (await api.ok("GET", `/apis/apps/v1/namespaces/${NS}/deployments/agent-controller`)) as {
          status?: { readyReplicas?: number };
        };
        return d.status?.readyReplicas === 2 ? 2 : undefined;
      });
      expect(ready).toBe(2);
      const lease = (await api.ok(
        "GET",
        `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/agent-controller`,
      )) as {
        spec: { holderIdentity?: string };
      };
      expect(lease.spec.holderIdentity).toMatch(/^agent-controller-/);
    });

    it("the first Station and Agent: the run ends Succeeded on the real node", async () => {
      await kubectl(
        "-n",
        NS,
        "create",
        "secret",
        "generic",
        "agent-secrets",
        "--from-literal=anthropic-key=unused",
      );
      const agentImage = plane?.state.realNode?.images.agent?.name ?? "";
      const file = join(plane?.state.dir ?? "", "first-run.yaml");
      await writeFile(
        file,
        JSON.stringify({
          apiVersion: "v1",
          kind: "List",
          items: [
            {
              apiVersion: "agents.re-cinq.com/v1beta1",
              kind: "AgentDefinition",
              metadata: { name: "hello", namespace: NS },
              spec: {
                prompt: "say hello",
                model: "exec",
                tool_config: { command: ["sh", "-c", "echo hello from the real node"] },
              },
            },
            {
              apiVersion: "agents.re-cinq.com/v1beta1",
              kind: "Station",
              metadata: { name: "default", namespace: NS },
              spec: {
                agentDefRef: "hello",
                template: {
                  spec: { ...REAL_NODE_SCHEDULING, containers: [{ name: "agent", image: agentImage }] },
                },
              },
            },
            {
              apiVersion: "agents.re-cinq.com/v1beta1",
              kind: "Agent",
              metadata: { name: "first", namespace: NS },
              spec: { stationRef: "default" },
            },
          ],
        }),
      );
      await kubectl("apply", "-f", file);
      const status = await until("Agent first terminal", 150_000, async () => {
        const a = (await api.ok("GET", `/apis/agents.re-cinq.com/v1beta1/namespaces/${NS}/agents/first`)) as {
          status?: { phase?: string; output?: string };
        };
        return a.status?.phase === "Succeeded" || a.status?.phase === "Failed" ? a.status : undefined;
      });
      expect(status, JSON.stringify(status)).toMatchObject({ phase: "Succeeded" });
      const pods = (await api.ok(
        "GET",
        `/api/v1/namespaces/${NS}/pods?labelSelector=agents.re-cinq.com%2Fcomponent%3Djob`,
      )) as {
        items: { spec: { nodeName?: string } }[];
      };
      expect(pods.items.map((p) => p.spec.nodeName)).toEqual([MACHINE.nodeName]);
      const name = (pods.items[0] as unknown as { metadata: { name: string } }).metadata.name;
      const podLog = await api.request("GET", `/api/v1/namespaces/${NS}/pods/${name}/log?container=agent`);
      expect(podLog.body).toContain("hello from the real node");
    });

    it("killing the leader pod mid-run hands over: one Job per Agent, no run lost", async () => {
      const agentImage = plane?.state.realNode?.images.agent?.name ?? "";
      const file = join(plane?.state.dir ?? "", "slow-run.yaml");
      const agent = (name: string) => ({
        apiVersion: "agents.re-cinq.com/v1beta1",
        kind: "Agent",
        metadata: { name, namespace: NS },
        spec: { stationRef: "slow" },
      });
      await writeFile(
        file,
        JSON.stringify({
          apiVersion: "v1",
          kind: "List",
          items: [
            {
              apiVersion: "agents.re-cinq.com/v1beta1",
              kind: "AgentDefinition",
              metadata: { name: "slow", namespace: NS },
              spec: {
                prompt: "wait",
                model: "exec",
                tool_config: { command: ["sh", "-c", "sleep 20; echo slow done"] },
              },
            },
            {
              apiVersion: "agents.re-cinq.com/v1beta1",
              kind: "Station",
              metadata: { name: "slow", namespace: NS },
              spec: {
                agentDefRef: "slow",
                template: {
                  spec: { ...REAL_NODE_SCHEDULING, containers: [{ name: "agent", image: agentImage }] },
                },
              },
            },
            agent("during-handover"),
          ],
        }),
      );
      await kubectl("apply", "-f", file);
      const jobsOf = async (name: string) =>
        (
          (await api.ok(
            "GET",
            `/apis/batch/v1/namespaces/${NS}/jobs?labelSelector=agents.re-cinq.com%2Fagent%3D${name}`,
          )) as { items: unknown[] }
        ).items.length;
      await until("the run's Job", 60_000, async () =>
        (await jobsOf("during-handover")) > 0 ? true : undefined,
      );
      const holder = async () =>
        (
          (await api.ok("GET", `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/agent-controller`)) as {
            spec: { holderIdentity?: string };
          }
        ).spec.holderIdentity ?? "";
      const leader = await holder();
      await api.ok("DELETE", `/api/v1/namespaces/${NS}/pods/${leader}`, { gracePeriodSeconds: 0 });
      // An Agent created while the leader is gone is picked up by the next one.
      await api.ok(
        "POST",
        `/apis/agents.re-cinq.com/v1beta1/namespaces/${NS}/agents`,
        agent("after-handover"),
      );
      const next = await until("a new Lease holder", 120_000, async () => {
        const h = await holder();
        return h !== "" && h !== leader ? h : undefined;
      });
      expect(next).toMatch(/^agent-controller-/);
      for (const name of ["during-handover", "after-handover"]) {
        const status = await until(`Agent ${name} terminal`, 180_000, async () => {
          const a = (await api.ok(
            "GET",
            `/apis/agents.re-cinq.com/v1beta1/namespaces/${NS}/agents/${name}`,
          )) as {
            status?: { phase?: string };
          };
          return a.status?.phase === "Succeeded" || a.status?.phase === "Failed" ? a.status : undefined;
        });
        expect(status, `${name}: ${JSON.stringify(status)}`).toMatchObject({ phase: "Succeeded" });
        expect(await jobsOf(name), name).toBe(1);
      }
    });
  },
);
