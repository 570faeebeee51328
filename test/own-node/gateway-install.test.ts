/**
 * components/gateway installed as docs/gateway.md#installing tells a platform team, on a plane
 * with a real node serving Services: `kubectl apply -k` of deploy/ with the component and a user
 * overlay (images preloaded on the tainted node, the gateway's upstream and the forge on this
 * machine's servers), then the Secrets. The gateway runs as its two pods from the controller image,
 * as its own ServiceAccount with the shipped Role; the controller as shipped. Then the real claude
 * runs through it: the run pod holds no provider key, its init clones the forge's repository and
 * fetches its file through the gateway's egress proxy, claude calls its model through the gateway
 * (metered) and, told by its model, probes the network through the proxy as a prompt-injected agent
 * would, and the courier delivers the pull request through the proxy.
 *
 * The plane has no cluster DNS: the run pods name the gateway's Service by a host alias of its
 * ClusterIP, under the very name the component gives the controller
 * (`agent-gateway.ai-agents.svc`), so the shipped URLs are used as they are. The node enforces no
 * NetworkPolicy (test/own-node/network-policy.test.ts enforces the shipped ones).
 */
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBareRepo, type GitHttpServer, startGitHttpServer } from "../fakes/git-http.js";
import { type FakeGitHub, startFakeGitHub } from "../fakes/github.js";
import { type AnthropicMessagesServer, startAnthropicMessages } from "../fakes/models/anthropic-messages.js";
import type { HarnessApi } from "../harness/api.js";
import { type ControlPlane, startControlPlane } from "../harness/cluster.js";
import { eventuallyPasses } from "../harness/eventually.js";
import { buildImages } from "../harness/images.js";
import { MACHINE, REAL_NODE_SCHEDULING, realNodeProblem } from "../harness/real-node/index.js";
import { buildStationImages, REAL_CLI_STATION_IMAGE } from "../harness/station-images.js";
import { PROBE_DONE, probeOutputSeen, probeThen } from "../support/egress-probe.js";
import { startTestTarget, type TestTarget } from "../support/http-proxy.js";
import {
  type AgentObject,
  eventReasons,
  type Kubectl,
  kubectlWith,
  NS,
  REPO,
  terminalAgent,
} from "./install-support.js";

const run = promisify(execFile);
const problem = realNodeProblem();
const log = (m: string) => process.stderr.write(`[gateway install test] ${m}\n`);
const HOST = MACHINE.gateway;
const GATEWAY_HOST = `agent-gateway.${NS}.svc`;
const ANTHROPIC_KEY = "sk-ant-api03-gateway-install-key";
const CLONE_TOKEN = "ghp_gwinstallclone0123456789";
const DELIVERY_TOKEN = "ghs_gwinstalldeliver0123456789";
const CLAUDE_RUN_MS = 240_000;
const NOTES = "notes fetched through the gateway's egress proxy";

/** The shipped Deployments preloaded on the tainted real node, as test/install sets the controller's. */
const onTheRealNode = (name: string) => ({
  target: { kind: "Deployment", name },
  patch: JSON.stringify([
    { op: "add", path: "/spec/template/spec/containers/0/imagePullPolicy", value: "Never" },
    { op: "add", path: "/spec/template/spec/nodeSelector", value: REAL_NODE_SCHEDULING.nodeSelector },
    { op: "add", path: "/spec/template/spec/tolerations", value: REAL_NODE_SCHEDULING.tolerations },
  ]),
});
/** More env of one container of a Deployment, merged by name. */
const withEnv = (deployment: string, container: string, env: Record<string, string>) => ({
  patch: JSON.stringify({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: deployment, namespace: NS },
    spec: {
      template: {
        spec: {
          containers: [
            { name: container, env: Object.entries(env).map(([name, value]) => ({ name, value })) },
          ],
        },
      },
    },
  }),
});

describe.skipIf(problem !== "")(
  `components/gateway installed on a real node${problem ? ` (skipped: ${problem})` : ""}`,
  () => {
    let plane: ControlPlane | undefined;
    let api: HarnessApi;
    let model: AnthropicMessagesServer;
    let git: GitHttpServer;
    let github: FakeGitHub;
    let files: TestTarget;
    let elsewhere: TestTarget;
    let work: string;
    const kubectl: Kubectl = kubectlWith(() => plane?.kubeconfig ?? "");
    const apply = async (objects: unknown[]) => {
      const file = join(work, `objects-${Date.now()}.json`);
      await writeFile(file, JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }));
      return await kubectl("apply", "-f", file);
    };

    beforeAll(async () => {
      while (existsSync(MACHINE.lockFile)) await sleep(1_000);
      work = await mkdtemp(join(tmpdir(), "gateway-install-test-"));
      plane = await startControlPlane({ realNode: { images: ["agent", "controller"], services: true }, log });
      api = plane.api();
      const node = plane.realNode;
      if (!node) throw new Error("the plane started without its real node");
      const stations = await buildStationImages(await buildImages(["agent"], log), ["realClis"], log);
      if (stations.realClis) await node.importImage(stations.realClis, log);

      model = await startAnthropicMessages(HOST);
      const forgeRoot = join(work, "forge");
      createBareRepo(forgeRoot, "acme/app", { "README.md": "helo world\n" });
      git = await startGitHttpServer({
        root: forgeRoot,
        token: CLONE_TOKEN,
        moreTokens: { delivery: DELIVERY_TOKEN },
        host: HOST,
      });
      github = await startFakeGitHub({
        token: DELIVERY_TOKEN,
        gitRoot: forgeRoot,
        htmlUrl: "https://github.test",
        host: HOST,
      });
      [files, elsewhere] = await Promise.all([
        startTestTarget(NOTES, HOST),
        startTestTarget("elsewhere", HOST),
      ]);

      // The user's overlay: deploy/ with the component, as docs/gateway.md#installing adds it.
      const overlay = join(work, "overlay");
      await mkdir(overlay, { recursive: true });
      await writeFile(
        join(overlay, "kustomization.yaml"),
        JSON.stringify({
          apiVersion: "kustomize.config.k8s.io/v1beta1",
          kind: "Kustomization",
          resources: [relative(overlay, join(REPO, "deploy"))],
          components: [relative(overlay, join(REPO, "deploy", "components", "gateway"))],
          patches: [
            onTheRealNode("agent-controller"),
            onTheRealNode("agent-gateway"),
            withEnv("agent-controller", "controller", {
              GITHUB_API_URL: github.url,
              GITHUB_SERVER_URL: git.url,
              // The Stations name the gateway's Service by a host alias (no cluster DNS here).
              RUN_POD_FIELDS: "hostAliases",
            }),
            withEnv("agent-gateway", "gateway", {
              GATEWAY_ANTHROPIC_UPSTREAM: model.origin,
              // The forge and the file server are on this machine's private address.
              GATEWAY_EGRESS_PRIVATE_CIDRS: `${HOST}/32`,
            }),
          ],
        }),
      );
      await kubectl("apply", "-k", overlay);
      await kubectl(
        "-n",
        NS,
        "create",
        "secret",
        "generic",
        "agent-gateway",
        `--from-literal=credential-key=${randomBytes(32).toString("hex")}`,
      );
      await kubectl(
        "-n",
        NS,
        "create",
        "secret",
        "generic",
        "agent-secrets",
        `--from-literal=anthropic-key=${ANTHROPIC_KEY}`,
        `--from-literal=GIT_TOKEN=${CLONE_TOKEN}`,
        `--from-literal=github-token=${DELIVERY_TOKEN}`,
      );
      for (const d of ["agent-controller", "agent-gateway"]) {
        await kubectl("-n", NS, "rollout", "status", `deployment/${d}`, "--timeout=300s");
      }
    }, 1_500_000);

    afterAll(async () => {
      if (plane) {
        for (const c of ["controller", "gateway"]) {
          const pods = (await api.ok(
            "GET",
            `/api/v1/namespaces/${NS}/pods?labelSelector=agents.re-cinq.com%2Fcomponent%3D${c}`,
          )) as { items: { metadata: { name: string } }[] };
          for (const pod of pods.items)
            log(
              `${pod.metadata.name}:\n${(await api.request("GET", `/api/v1/namespaces/${NS}/pods/${pod.metadata.name}/log?tailLines=20`)).body}`,
            );
        }
      }
      await plane?.stop();
      await Promise.all([model?.close(), git?.close(), github?.close(), files?.close(), elsewhere?.close()]);
      if (work) await rm(work, { recursive: true, force: true });
    });

    it("the real claude runs through the installed gateway: no key in its pod, the model metered, everything else through the egress proxy, its own probes refused", async () => {
      const service = (await api.ok("GET", `/api/v1/namespaces/${NS}/services/agent-gateway`)) as {
        spec: { clusterIP: string };
      };
      const forge = new URL(git.url);
      const forgeTarget = `${forge.hostname}:${forge.port}`;
      const targets = [`${HOST}:${elsewhere.port}`, forgeTarget, `${HOST}:${files.port}`];
      model.script([
        {
          text: "Probing, then fixing the typo.",
          toolCall: {
            name: "Bash",
            input: {
              command: probeThen(
                targets,
                "cat /workspace/notes.txt",
                "sed -i s/helo/hello/ /workspace/app/README.md",
              ),
              description: "probe",
            },
          },
          usage: { input: 1000, output: 50 },
        },
        { text: "Fixed README.md.", usage: { input: 1200, output: 10 } },
      ]);
      await apply([
        {
          apiVersion: "agents.re-cinq.com/v1beta1",
          kind: "AgentDefinition",
          metadata: { name: "fix-typo", namespace: NS },
          spec: {
            model: "claude-sonnet-4-6",
            prompt: "Fix the typo in README.md.",
            permission_mode: "bypass",
            resources: {
              repos: [{ name: "app", url: git.repoUrl("acme/app"), token_secret: "GIT_TOKEN" }],
              secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }],
            },
            delivery: { pullRequest: { tokenSecret: "github-token", title: "Fix the README typo" } },
          },
        },
        {
          apiVersion: "agents.re-cinq.com/v1beta1",
          kind: "Station",
          metadata: { name: "fix-typo", namespace: NS },
          spec: {
            agentDefRef: "fix-typo",
            template: {
              spec: {
                ...REAL_NODE_SCHEDULING,
                hostAliases: [{ ip: service.spec.clusterIP, hostnames: [GATEWAY_HOST] }],
                containers: [{ name: "agent", image: REAL_CLI_STATION_IMAGE }],
              },
            },
          },
        },
        {
          apiVersion: "agents.re-cinq.com/v1beta1",
          kind: "Agent",
          metadata: { name: "fix-typo-1", namespace: NS },
          spec: {
            stationRef: "fix-typo",
            files: [{ path: "notes.txt", url: `http://${HOST}:${files.port}/notes.txt` }],
          },
        },
      ]);
      const done: AgentObject & {
        status?: { costSource?: string; egress?: { refused: number; destinations?: string[] } };
      } = await terminalAgent(api, "fix-typo-1", CLAUDE_RUN_MS);
      expect(done.status?.failureReason ?? "").toBe("");
      expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });

      // The courier delivered the edit, through the proxy.
      const pulls = github.pulls.filter((p) => p.head === "agent/fix-typo-1");
      expect(pulls).toHaveLength(1);
      expect(done.status?.prUrl).toBe(pulls[0]?.htmlUrl);
      const { stdout: readme } = await run("git", [
        "--git-dir",
        join(work, "forge", "acme/app.git"),
        "show",
        "agent/fix-typo-1:README.md",
      ]);
      expect(readme).toBe("hello world\n");

      // What claude saw went back to the model: the init's file, its probes refused, no key.
      const seen = probeOutputSeen(model.journal());
      expect(seen, "the probe ran and its output reached the model").toContain(PROBE_DONE);
      expect(seen).toContain(NOTES);
      expect(seen).toContain(`PROBE ${HOST}:${elsewhere.port} => HTTP/1.1 403 Forbidden`);
      expect(seen).toContain(`PROBE ${forgeTarget} => HTTP/1.1 403 Forbidden`);
      expect(seen).toContain(`PROBE ${HOST}:${files.port} => HTTP/1.1 403 Forbidden`);
      expect(seen).not.toContain(ANTHROPIC_KEY);
      expect(elsewhere.seen).toEqual([]);
      expect(files.seen.map((s) => s.path)).toEqual(["/notes.txt"]);

      // Every call reached the model with the key the gateway holds, and the cost is the gateway's
      // meter: 2,200 input and 60 output tokens at claude-sonnet-4-6's $3 / $15 per million.
      const keyDigest = createHash("sha256").update(ANTHROPIC_KEY).digest("hex");
      const calls = model.journal().filter((c) => c.path === "/v1/messages");
      expect(calls).toHaveLength(2);
      for (const call of calls) expect(call.credentialDigests["x-api-key"]).toBe(keyDigest);
      expect(done.status).toMatchObject({ costSource: "metered" });
      expect(Number(done.status?.costUSD)).toBe(0.0075);
      expect(done.status?.egress?.destinations).toEqual(
        expect.arrayContaining([
          `agent ${HOST}:${elsewhere.port}`,
          `agent ${forgeTarget}`,
          `agent ${HOST}:${files.port}`,
        ]),
      );
      await eventuallyPasses("the gateway's EgressRefused Events", async () => {
        expect(await eventReasons(api, "fix-typo-1")).toEqual(
          expect.arrayContaining(["EgressRefused", "Succeeded"]),
        );
      });

      // The run pod held no provider key: every provider-key variable of its Job is the run credential.
      const job = (await api.ok(
        "GET",
        `/apis/batch/v1/namespaces/${NS}/jobs?labelSelector=agents.re-cinq.com%2Fagent%3Dfix-typo-1`,
      )) as {
        items: {
          spec: {
            template: {
              spec: { containers: { env?: { name: string; value?: string; valueFrom?: unknown }[] }[] };
            };
          };
        }[];
      };
      const env = job.items[0]?.spec.template.spec.containers.flatMap((c) => c.env ?? []) ?? [];
      expect(env.find((e) => e.name === "ANTHROPIC_API_KEY")?.value).toMatch(/^agw1\./);
      expect(env.filter((e) => e.valueFrom !== undefined && /ANTHROPIC/.test(e.name))).toEqual([]);
    });
  },
);
