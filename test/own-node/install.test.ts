/**
 * The install as docs/deploy.md tells a platform team, on a plane with a real node serving Services
 * (docs/deploy.md "The test install"), step by step: the images, the Prometheus Operator CRDs a
 * cluster with monitoring has, `kubectl apply -k` of deploy/ with the batch, realtime and monitoring
 * components through test/install (image pull policy and the real node's taint) and a user overlay
 * pointing the controller at this machine's servers, then the Secrets. Then runs through the
 * installed system: an exec run, the real claude delivering a pull request through the courier, a
 * realtime session through the prompt API's Service, a batch run, `kubectl agent`, the leader killed
 * mid-run and a rolling update mid-run. No controller process is started by the test and no
 * permission is added.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildKubectlAgent } from "../../scripts/build-kubectl-agent.js";
import { createBareRepo, type GitHttpServer, startGitHttpServer } from "../fakes/git-http.js";
import { type FakeGitHub, startFakeGitHub } from "../fakes/github.js";
import { type AnthropicMessagesServer, startAnthropicMessages } from "../fakes/models/anthropic-messages.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/providers/anthropic.js";
import type { HarnessApi } from "../harness/api.js";
import { type ControlPlane, startControlPlane } from "../harness/cluster.js";
import { eventually, eventuallyPasses } from "../harness/eventually.js";
import { buildImages } from "../harness/images.js";
import { MACHINE, REAL_NODE_SCHEDULING, realNodeProblem } from "../harness/real-node/index.js";
import { buildStationImages, REAL_CLI_STATION_IMAGE } from "../harness/station-images.js";
import {
  AGENTS,
  type AgentObject,
  condition,
  controllerPodEvents,
  eventReasons,
  jobsOf,
  type Kubectl,
  kubectlWith,
  kubeletPodMessages,
  leaseHolder,
  NS,
  prometheusOperatorCrds,
  REPO,
  terminalAgent,
  writeUserOverlay,
} from "./install-support.js";

const run = promisify(execFile);
const problem = realNodeProblem();
const log = (m: string) => process.stderr.write(`[install test] ${m}\n`);
const HOST = MACHINE.gateway;
const CLAUDE_MODEL = "claude-sonnet-4-6";
const ANTHROPIC_KEY = "sk-ant-api03-install-test-key";
const CLONE_TOKEN = "ghp_installclone0123456789";
const DELIVERY_TOKEN = "ghs_installdeliver0123456789";
const API_TOKEN = "install-test-api-token-0123456789abcdef";
/** A run with the real claude starts in seconds on an idle machine, much later on a loaded one. */
const CLAUDE_RUN_MS = 240_000;

const agentDefinition = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "agents.re-cinq.com/v1beta1",
  kind: "AgentDefinition",
  metadata: { name, namespace: NS },
  spec,
});
const station = (name: string, definition: string, image: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: "agents.re-cinq.com/v1beta1",
  kind: "Station",
  metadata: { name, namespace: NS },
  spec: {
    agentDefRef: definition,
    ...spec,
    template: { spec: { ...REAL_NODE_SCHEDULING, containers: [{ name: "agent", image }] } },
  },
});
const agent = (name: string, stationRef: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: "agents.re-cinq.com/v1beta1",
  kind: "Agent",
  metadata: { name, namespace: NS },
  spec: { stationRef, ...spec },
});
/** An exec definition and Station running `command` in the agent image. */
const execObjects = (name: string, command: string, agentImage: string) => [
  agentDefinition(name, { prompt: "run", model: "exec", tool_config: { command: ["sh", "-c", command] } }),
  station(name, name, agentImage),
];

describe.skipIf(problem !== "")(
  `the install on a real node${problem ? ` (skipped: ${problem})` : ""}`,
  () => {
    let plane: ControlPlane | undefined;
    let api: HarnessApi;
    let model: AnthropicMessagesServer;
    let batchApi: FakeAnthropic;
    let git: GitHttpServer;
    let github: FakeGitHub;
    let work: string;
    let agentImage: string;
    let controllerImage: string;
    const kubectl: Kubectl = kubectlWith(() => plane?.kubeconfig ?? "");
    /** kubectl with the plugin on PATH, as docs/kubectl-plugin.md installs it. */
    let kubectlAgent: Kubectl;
    /** The user's overlay: test/install plus where this machine's servers are. */
    let controllerEnv: Record<string, string>;
    /** The admission policy's pod CIDR in the user's overlay; unset at first, as a user may forget. */
    let podCidr: string | undefined;
    const apply = async (objects: unknown[]) => {
      const file = join(work, `objects-${Date.now()}.json`);
      await writeFile(file, JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }));
      return await kubectl.both("apply", "-f", file);
    };
    const applyOverlay = async (controllerTag?: string) =>
      await kubectl(
        "apply",
        "-k",
        await writeUserOverlay(join(work, "overlay"), {
          env: controllerEnv,
          ...(controllerTag ? { controllerTag } : {}),
          ...(podCidr ? { podCidr } : {}),
        }),
      );
    /** docs/admission.md#without-cert-manager. */
    const issueCertificate = async (...args: string[]) =>
      (
        await run(
          "bash",
          ["deploy/components/admission/issue-certificate.sh", ...args, `--kubeconfig=${plane?.kubeconfig}`],
          {
            cwd: REPO,
          },
        )
      ).stdout;
    const restartControllers = async () => {
      await kubectl("-n", NS, "rollout", "restart", "deployment/agent-controller");
      await kubectl("-n", NS, "rollout", "status", "deployment/agent-controller", "--timeout=240s");
    };
    /** kubectl apply's stderr for an Agent naming a Station that does not exist. */
    const applyStrayAgent = async () => {
      const { stderr } = await apply([agent("stray", "nowhere")]);
      await kubectl("-n", NS, "delete", "agent", "stray", "--wait=false");
      return stderr;
    };
    const STRAY_WARNING = `Warning: Station nowhere does not exist in namespace ${NS}`;
    const readyReplicas = async () =>
      (
        (await api.ok("GET", `/apis/apps/v1/namespaces/${NS}/deployments/agent-controller`)) as {
          status?: { readyReplicas?: number; updatedReplicas?: number; replicas?: number };
        }
      ).status ?? {};

    beforeAll(async () => {
      while (existsSync(MACHINE.lockFile)) await sleep(1_000);
      work = await mkdtemp(join(tmpdir(), "install-test-"));
      plane = await startControlPlane({ realNode: { images: ["agent", "controller"], services: true }, log });
      api = plane.api();
      const node = plane.realNode;
      if (!node) throw new Error("the plane started without its real node");
      agentImage = plane.state.realNode?.images.agent?.name ?? "";
      controllerImage = plane.state.realNode?.images.controller?.name ?? "";
      // The Station image with the pinned real CLIs (deploy/station-image/Dockerfile, docs/agent-clis.md).
      const stations = await buildStationImages(await buildImages(["agent"], log), ["realClis"], log);
      if (stations.realClis) await node.importImage(stations.realClis, log);

      const pluginDir = join(work, "plugin");
      await buildKubectlAgent(() => {}, pluginDir);
      kubectlAgent = kubectlWith(() => plane?.kubeconfig ?? "", {
        PATH: `${pluginDir}:${process.env.PATH ?? ""}`,
        HOME: work,
      });

      model = await startAnthropicMessages(HOST);
      batchApi = await startFakeAnthropic({ apiKey: ANTHROPIC_KEY, host: HOST });
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
      controllerEnv = {
        AGENT_ANTHROPIC_BASE_URL: model.origin,
        ANTHROPIC_BASE_URL: batchApi.url,
        GITHUB_API_URL: github.url,
        GITHUB_SERVER_URL: git.url,
        BATCH_POLL_SECONDS: "2",
      };
    }, 1_500_000);

    afterAll(async () => {
      if (plane) {
        const pods = (await api.ok(
          "GET",
          `/api/v1/namespaces/${NS}/pods?labelSelector=agents.re-cinq.com%2Fcomponent%3Dcontroller`,
        )) as {
          items: { metadata: { name: string } }[];
        };
        for (const pod of pods.items)
          log(
            `${pod.metadata.name}:\n${(await api.request("GET", `/api/v1/namespaces/${NS}/pods/${pod.metadata.name}/log?tailLines=20`)).body}`,
          );
      }
      await plane?.stop();
      await Promise.all([model?.close(), batchApi?.close(), git?.close(), github?.close()]);
      if (work) await rm(work, { recursive: true, force: true });
    });

    it("kubectl apply -k installs the base and the components; without its Secret a pod says which, with it both replicas become Ready, one holds the Lease", async () => {
      // docs/deploy.md: components/monitoring needs the Prometheus Operator CRDs (a cluster with
      // kube-prometheus-stack has them).
      for (const crd of await prometheusOperatorCrds()) await kubectl("apply", "--server-side", "-f", crd);
      // CRDs and the namespace come in the same apply; a second apply is idempotent.
      await applyOverlay();
      const again = (await applyOverlay()).split("\n").filter((l) => l !== "" && !l.endsWith(" unchanged"));
      expect(again).toEqual([]);
      for (const [kind, name] of [
        ["podmonitors.monitoring.coreos.com", "agent-controller"],
        ["prometheusrules.monitoring.coreos.com", "agent-controller"],
        ["configmap", "agent-controller-dashboard"],
      ] as const)
        expect(await kubectl("-n", NS, "get", kind, name, "-o", "name")).toContain(name);

      // Until the webhook's certificate exists the kubelet cannot mount it, and says so.
      const mount = await eventually(
        "the kubelet reporting the missing certificate Secret",
        async () =>
          (await kubeletPodMessages(api, "FailedMount")).find((m) =>
            m.includes("agent-controller-admission-tls"),
          ),
        120_000,
      );
      expect(mount).toContain('secret "agent-controller-admission-tls" not found');
      expect(await issueCertificate()).toContain(
        `issued the webhook's serving certificate for agent-controller-admission.${NS}.svc`,
      );
      // The Secrets come after the apply (docs/install.md): until agent-realtime exists the
      // kubelet holds the controller pods, naming the Secret where `kubectl get pods` shows it.
      const waiting = await eventually(
        "a controller pod waiting for its Secret",
        async () => {
          const pods = (await api.ok(
            "GET",
            `/api/v1/namespaces/${NS}/pods?labelSelector=agents.re-cinq.com%2Fcomponent%3Dcontroller`,
          )) as {
            items: {
              status?: {
                containerStatuses?: { state?: { waiting?: { reason?: string; message?: string } } }[];
              };
            }[];
          };
          return pods.items
            .map((p) => p.status?.containerStatuses?.[0]?.state?.waiting)
            .find((w) => w?.reason === "CreateContainerConfigError");
        },
        120_000,
      );
      expect(waiting?.message).toBe('secret "agent-realtime" not found');
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
      await kubectl(
        "-n",
        NS,
        "create",
        "secret",
        "generic",
        "agent-realtime",
        `--from-literal=api-token=${API_TOKEN}`,
        "--from-literal=signing-key=install-test-signing-key-0123456789abcdef",
      );
      const ready = await eventually(
        "the Deployment's 2 replicas Ready",
        async () => ((await readyReplicas()).readyReplicas === 2 ? 2 : undefined),
        180_000,
      );
      expect(ready).toBe(2);
      // A standby is Ready too: the Lease is taken on the elector's own beat.
      await eventuallyPasses("a Lease holder", async () => {
        expect(await leaseHolder(api)).toMatch(/^agent-controller-/);
      });
    });

    it("the API server calls the webhook through its Service: kubectl apply shows its warnings; a wrong pod CIDR and a certificate for another name are told on the controller's Pods", async () => {
      // The overlay left the shipped pod CIDR (10.244.0.0/16); this cluster's pods are elsewhere.
      const open = await eventually(
        "AdmissionNetworkOpen on the controller's Pods",
        async () => {
          const found = await controllerPodEvents(api, "AdmissionNetworkOpen");
          return found.length > 0 ? found : undefined;
        },
        60_000,
      );
      expect(open[0]?.note).toMatch(
        /^this controller pod's address 10\.213\.0\.\d+ is not in the pod CIDR excepted by NetworkPolicy agent-controller-admission-ingress \(0\.0\.0\.0\/0 except 10\.244\.0\.0\/16\): every pod on the pod network can reach the admission webhook's port 9443/,
      );
      expect(await applyStrayAgent()).toContain(STRAY_WARNING);
      // The fix the Event names: the cluster's pod CIDR in the overlay. The caBundle survives the apply.
      podCidr = MACHINE.subnet;
      await applyOverlay();
      expect(
        await kubectl(
          "get",
          "validatingwebhookconfiguration",
          "agent-controller-admission",
          "-o",
          "jsonpath={.webhooks[0].clientConfig.caBundle}",
        ),
      ).not.toBe("");
      expect(await applyStrayAgent()).toContain(STRAY_WARNING);

      // A certificate for another Service name: the API server refuses it (writes go through
      // without warnings) and the controller says so on its Pods.
      await issueCertificate("--service", "agent-webhook");
      await restartControllers();
      const invalid = await eventually(
        "AdmissionCertificateInvalid on the controller's Pods",
        async () => (await controllerPodEvents(api, "AdmissionCertificateInvalid"))[0],
        90_000,
      );
      expect(invalid.note).toBe(
        `the admission webhook's certificate is for agent-webhook.${NS}.svc, agent-webhook.${NS}.svc.cluster.local, not agent-controller-admission.${NS}.svc: the API server refuses it and writes go through without the webhook's warnings; reissue it (docs/admission.md#certificates) for agent-controller-admission.${NS}.svc`,
      );
      expect(await applyStrayAgent()).not.toContain("Warning:");
      await issueCertificate();
      await restartControllers();
      expect(
        await eventually(
          "the warnings back",
          async () => {
            const stderr = await applyStrayAgent();
            return stderr.includes(STRAY_WARNING) ? stderr : undefined;
          },
          60_000,
        ),
      ).toContain(STRAY_WARNING);
    });

    it("the metrics are scraped through the Service agent-controller-metrics", async () => {
      const service = (await api.ok("GET", `/api/v1/namespaces/${NS}/services/agent-controller-metrics`)) as {
        spec: { clusterIP: string };
      };
      // From this machine through kube-proxy's ClusterIP rules, as a scraper in the cluster would
      // (and as a scraper does, again after a failed scrape: the replicas were just restarted).
      let attempts = 0;
      const text = await eventually(
        "a scrape through the Service",
        async () => {
          attempts += 1;
          try {
            const res = await fetch(`http://${service.spec.clusterIP}:8081/metrics`, {
              signal: AbortSignal.timeout(3_000),
            });
            return res.status === 200 ? await res.text() : undefined;
          } catch (err) {
            const slices = await api.ok(
              "GET",
              `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dagent-controller-metrics`,
            );
            log(
              `scrape ${attempts} failed (${(err as Error).cause ?? err}); endpoints: ${JSON.stringify((slices as { items: { endpoints?: unknown }[] }).items.map((i) => i.endpoints))}`,
            );
            return undefined;
          }
        },
        60_000,
      );
      log(`metrics scraped through the Service at attempt ${attempts}`);
      expect(text).toContain("# TYPE controller_resyncs_total counter");
      expect(text).toContain("controller_reconcile_errors_total");
    });

    it("the first Station and Agent: the run ends Succeeded on the real node, with its conditions and Events", async () => {
      await apply([
        ...execObjects("hello", "echo hello from the real node", agentImage),
        agent("first", "hello"),
      ]);
      const first = await terminalAgent(api, "first", 150_000);
      expect(first.status, JSON.stringify(first.status)).toMatchObject({ phase: "Succeeded", exitCode: 0 });
      expect(condition(first, "Complete")).toBe("True Succeeded");
      expect(condition(first, "Ready")).toBe("False Succeeded");
      // The controller's recorder writes Events after the patch they tell of: wait for them.
      await eventuallyPasses("the Events of first", async () => {
        expect(await eventReasons(api, "first")).toEqual(["JobCreated", "Started", "Succeeded"]);
      });
      const pods = (await api.ok(
        "GET",
        `/api/v1/namespaces/${NS}/pods?labelSelector=agents.re-cinq.com%2Fagent%3Dfirst`,
      )) as {
        items: { metadata: { name: string }; spec: { nodeName?: string } }[];
      };
      expect(pods.items.map((p) => p.spec.nodeName)).toEqual([MACHINE.nodeName]);
      const podLog = await api.request(
        "GET",
        `/api/v1/namespaces/${NS}/pods/${pods.items[0]?.metadata.name}/log?container=agent`,
      );
      expect(podLog.body).toContain("hello from the real node");
    });

    it("the real claude edits a clone from the local forge and the courier delivers it as a pull request", async () => {
      model.script([
        {
          text: "Fixing the typo.",
          toolCall: {
            name: "Edit",
            input: { file_path: "/workspace/app/README.md", old_string: "helo", new_string: "hello" },
          },
          usage: { input: 1000, output: 50 },
        },
        { text: "Fixed README.md.", usage: { input: 1200, output: 10 } },
      ]);
      await apply([
        agentDefinition("fix-typo", {
          model: CLAUDE_MODEL,
          prompt: "Fix the typo in README.md.",
          permission_mode: "bypass",
          resources: {
            repos: [{ name: "app", url: git.repoUrl("acme/app"), token_secret: "GIT_TOKEN" }],
            secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }],
          },
          delivery: { pullRequest: { tokenSecret: "github-token", title: "Fix the README typo" } },
        }),
        station("fix-typo", "fix-typo", REAL_CLI_STATION_IMAGE),
        agent("fix-typo-1", "fix-typo"),
      ]);
      const done = await terminalAgent(api, "fix-typo-1", CLAUDE_RUN_MS);
      expect(done.status?.failureReason ?? "").toBe("");
      expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
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
      // The cost: 2,200 input and 60 output tokens at claude-sonnet-4-6's $3 / $15 per million.
      expect(Number(done.status?.costUSD)).toBe(0.0075);
      expect(done.status?.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      // The controller's recorder writes Events after the patch they tell of: wait for them.
      await eventuallyPasses("the Events of fix-typo-1", async () => {
        expect(await eventReasons(api, "fix-typo-1")).toEqual(["JobCreated", "Started", "Succeeded"]);
      });
    });

    it("a realtime session takes three prompts through the prompt API's Service and is closed", async () => {
      model.script([{ text: "Ready." }, { text: "One." }, { text: "Two." }, { text: "Three." }]);
      const before = model.modelCalls().length;
      await apply([
        agentDefinition("pair", {
          model: CLAUDE_MODEL,
          execution: "realtime",
          prompt: "Count with me.",
          permission_mode: "bypass",
          resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }] },
        }),
        station("pair", "pair", REAL_CLI_STATION_IMAGE),
        agent("pair-1", "pair"),
      ]);
      const service = (await api.ok("GET", `/api/v1/namespaces/${NS}/services/agent-controller-api`)) as {
        spec: { clusterIP: string };
      };
      const post = async (route: string, body?: unknown) => {
        const res = await fetch(
          `http://${service.spec.clusterIP}:8082/v1/namespaces/${NS}/agents/pair-1/${route}`,
          {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${API_TOKEN}` },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          },
        );
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      // 409 while Pending, 503 until the run pod is Ready.
      // Any other answer ends the wait and fails below (a wait would retry a failed expect).
      const first = await eventually(
        "the session answering a prompt with other than 409 or 503",
        async () => {
          const reply = await post("prompt", { prompt: "One?" });
          return [409, 503].includes(reply.status) ? undefined : reply;
        },
        CLAUDE_RUN_MS,
      );
      expect(first.status, JSON.stringify(first)).toBe(202);
      // The definition's prompt is turn 1.
      expect(first.body).toMatchObject({ turn: 2 });
      expect(await post("prompt", { prompt: "Two?" })).toMatchObject({ status: 202, body: { turn: 3 } });
      // The third and the close through `kubectl agent`, the token read from agent-realtime.
      const apiUrl = `--api-url=http://${service.spec.clusterIP}:8082`;
      expect(await kubectlAgent("agent", "prompt", "pair-1", "Three?", "-n", NS, apiUrl)).toMatch(
        /^turn=4 queued=\d+ sessionId=/,
      );
      expect(await kubectlAgent("agent", "close", "pair-1", "-n", NS, apiUrl)).toMatch(/^queued=\d+/);
      const done = await terminalAgent(api, "pair-1", CLAUDE_RUN_MS);
      expect(done.status?.failureReason ?? "").toBe("");
      expect(done.status).toMatchObject({ phase: "Succeeded" });
      expect(done.status?.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      // The definition's prompt, then the three through the Service, each a turn of one session.
      expect(model.modelCalls().length - before).toBe(4);
      expect(done.status?.output ?? "").toContain("Three.");
      expect(Number(done.status?.costUSD)).toBeGreaterThan(0);
    });

    it("a batch Agent goes through the provider's batch API and ends Succeeded with its cost", async () => {
      await apply([
        agentDefinition("summary", {
          model: CLAUDE_MODEL,
          execution: "batch",
          prompt: "Summarise: {ticket}",
          resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }] },
        }),
        station("summary", "summary", agentImage),
        agent("summary-1", "summary", { parameters: { ticket: "login fails" } }),
      ]);
      const running = await eventually(
        "the batch submitted",
        async () => {
          const a = (await api.ok("GET", `${AGENTS}/summary-1`)) as AgentObject;
          return a.status?.batchId ? a : undefined;
        },
        60_000,
      );
      const batchId = running.status?.batchId ?? "";
      expect(running.status).toMatchObject({ phase: "Running", batchProvider: "anthropic" });
      // The key came from agent-secrets through the batch component's Secret grant.
      expect(batchApi.requests.find((r) => r.method === "POST")?.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
      batchApi.setOutcome(batchId, { type: "succeeded", text: "Login fails for SSO users." });
      batchApi.finish(batchId);
      const done = await terminalAgent(api, "summary-1", 60_000);
      expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
      expect(done.status?.output ?? "").toContain("Login fails for SSO users.");
      // 48 input and 75 output tokens at the batch price, half of $3 / $15 per million: $0.0006345,
      // recorded in whole micro-dollars.
      expect(Number(done.status?.costUSD)).toBe(0.000635);
      expect(await jobsOf(api, "summary-1")).toBe(0);
      // The controller's recorder writes Events after the patch they tell of: wait for them.
      await eventuallyPasses("the Events of summary-1", async () => {
        expect(await eventReasons(api, "summary-1")).toEqual(["BatchSubmitted", "Started", "Succeeded"]);
      });
    });

    it("kubectl agent shows, prints the logs of and runs the installed system's Agents", async () => {
      const table = await kubectlAgent("agent", "status", "-n", NS);
      for (const name of ["first", "fix-typo-1", "pair-1", "summary-1"])
        expect(table).toMatch(new RegExp(`^${name}\\s.*Succeeded`, "m"));
      const status = await kubectlAgent("agent", "status", "fix-typo-1", "-n", NS);
      expect(status).toContain("Succeeded");
      expect(status).toContain(github.pulls.find((p) => p.head === "agent/fix-typo-1")?.htmlUrl ?? "<no PR>");
      expect(await kubectlAgent("agent", "logs", "first", "-n", NS)).toContain("hello from the real node");
      // run --wait: created from Station hello, followed to its end, its exit code.
      const name =
        (await kubectlAgent("agent", "run", "hello", "--wait", "-n", NS)).trim().split("\n")[0] ?? "";
      expect(name).toMatch(/^hello-/);
      expect((await api.ok("GET", `${AGENTS}/${name}`)) as AgentObject).toMatchObject({
        status: { phase: "Succeeded" },
      });
    });

    it("killing the leader pod mid-run hands over: one Job per Agent, no run lost", async () => {
      await apply([
        ...execObjects("slow", "sleep 20; echo slow done", agentImage),
        agent("during-handover", "slow"),
      ]);
      await eventually(
        "the run's Job",
        async () => ((await jobsOf(api, "during-handover")) > 0 ? true : undefined),
        60_000,
      );
      const leader = await eventually(
        "a Lease holder",
        async () => (await leaseHolder(api)) || undefined,
        60_000,
      );
      await api.ok("DELETE", `/api/v1/namespaces/${NS}/pods/${leader}`, { gracePeriodSeconds: 0 });
      // An Agent created while the leader is gone is picked up by the next one.
      await api.ok("POST", AGENTS, agent("after-handover", "slow"));
      const next = await eventually(
        "a new Lease holder",
        async () => {
          const h = await leaseHolder(api);
          return h !== "" && h !== leader ? h : undefined;
        },
        120_000,
      );
      expect(next).toMatch(/^agent-controller-/);
      for (const name of ["during-handover", "after-handover"]) {
        const done = await terminalAgent(api, name, 180_000);
        expect(done.status, `${name}: ${JSON.stringify(done.status)}`).toMatchObject({ phase: "Succeeded" });
        expect(await jobsOf(api, name), name).toBe(1);
      }
    });

    it("a rolling update to a new controller image tag mid-run loses nothing", async () => {
      await eventually(
        "both replicas Ready again",
        async () => ((await readyReplicas()).readyReplicas === 2 ? true : undefined),
        180_000,
      );
      // The new release's image, preloaded as a registry pull would bring it.
      const node = plane?.state.realNode;
      const nextTag = "v0.1.0-next";
      const nextImage = controllerImage.replace(/:[^:/]+$/, `:${nextTag}`);
      await run("ctr", [
        "--address",
        node?.containerdSocket ?? "",
        "-n",
        "k8s.io",
        "images",
        "tag",
        "--force",
        controllerImage,
        nextImage,
      ]);
      await apply([agent("during-rollout", "slow")]);
      await eventually(
        "the run's Job",
        async () => ((await jobsOf(api, "during-rollout")) > 0 ? true : undefined),
        60_000,
      );
      await applyOverlay(nextTag);
      await api.ok("POST", AGENTS, agent("while-rolling", "slow"));
      await eventually(
        "the rollout to the new tag",
        async () => {
          const pods = (await api.ok(
            "GET",
            `/api/v1/namespaces/${NS}/pods?labelSelector=agents.re-cinq.com%2Fcomponent%3Dcontroller`,
          )) as {
            items: {
              metadata: { deletionTimestamp?: string };
              spec: { containers: { image: string }[] };
              status?: { conditions?: { type: string; status: string }[] };
            }[];
          };
          const ready = pods.items.filter(
            (p) =>
              !p.metadata.deletionTimestamp &&
              p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
          );
          return pods.items.length === 2 &&
            ready.length === 2 &&
            ready.every((p) => p.spec.containers[0]?.image === nextImage)
            ? true
            : undefined;
        },
        240_000,
      );
      // The old leader released the Lease on its way out; a new replica takes it.
      expect(
        await eventually(
          "a Lease holder after the rollout",
          async () => (await leaseHolder(api)) || undefined,
          60_000,
        ),
      ).toMatch(/^agent-controller-/);
      for (const name of ["during-rollout", "while-rolling"]) {
        const done = await terminalAgent(api, name, 180_000);
        expect(done.status, `${name}: ${JSON.stringify(done.status)}`).toMatchObject({ phase: "Succeeded" });
        expect(await jobsOf(api, name), name).toBe(1);
      }
    });
    it("a wedged leader (its process stopped): readiness takes it out of its Services, the other replica leads, liveness restarts it", async () => {
      await eventually(
        "both replicas Ready",
        async () => ((await readyReplicas()).readyReplicas === 2 ? true : undefined),
        180_000,
      );
      const leader = await eventually(
        "a Lease holder",
        async () => (await leaseHolder(api)) || undefined,
        60_000,
      );
      const podOf = async (name: string) =>
        (await api.ok("GET", `/api/v1/namespaces/${NS}/pods/${name}`)) as {
          status: {
            podIP?: string;
            conditions?: { type: string; status: string }[];
            containerStatuses?: { containerID?: string; restartCount: number }[];
          };
        };
      const before = await podOf(leader);
      const containerId = (before.status.containerStatuses?.[0]?.containerID ?? "").replace(
        /^containerd:\/\//,
        "",
      );
      const tasks = await run("ctr", [
        "--address",
        plane?.state.realNode?.containerdSocket ?? "",
        "-n",
        "k8s.io",
        "tasks",
        "ls",
      ]);
      const pid = Number(
        tasks.stdout
          .split("\n")
          .find((l) => l.startsWith(containerId))
          ?.split(/\s+/)[1],
      );
      expect(pid, `the controller's process in ${tasks.stdout}`).toBeGreaterThan(1);
      process.kill(pid, "SIGSTOP");
      // A run asked for while the leader hangs.
      await apply([agent("while-wedged", "slow")]);
      const ready = (p: Awaited<ReturnType<typeof podOf>>) =>
        p.status.conditions?.find((c) => c.type === "Ready")?.status === "True";
      await eventually(
        "the wedged pod not Ready",
        async () => (ready(await podOf(leader)) ? undefined : true),
        90_000,
      );
      // The EndpointSlice controller follows the pod's Ready condition on its own time.
      await eventuallyPasses("the wedged pod's endpoint not ready", async () => {
        const slices = (await api.ok(
          "GET",
          `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dagent-controller-api`,
        )) as { items: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[] }[] };
        const endpoint = slices.items
          .flatMap((s) => s.endpoints ?? [])
          .find((e) => e.addresses.includes(before.status.podIP ?? ""));
        expect(endpoint?.conditions?.ready ?? false).toBe(false);
      });
      const next = await eventually(
        "another Lease holder",
        async () => {
          const h = await leaseHolder(api);
          return h !== "" && h !== leader ? h : undefined;
        },
        120_000,
      );
      expect(next).toMatch(/^agent-controller-/);
      const restarted = await eventually(
        "the wedged container restarted and Ready",
        async () => {
          const p = await podOf(leader);
          return (p.status.containerStatuses?.[0]?.restartCount ?? 0) >= 1 && ready(p) ? p : undefined;
        },
        180_000,
      );
      expect(restarted.status.containerStatuses?.[0]?.restartCount).toBeGreaterThanOrEqual(1);
      const done = await terminalAgent(api, "while-wedged", 180_000);
      expect(done.status, JSON.stringify(done.status)).toMatchObject({ phase: "Succeeded" });
      expect(await jobsOf(api, "while-wedged")).toBe(1);
    });

    it("uninstall as docs/install.md says: runs deleted first (the batch cancelled and cleaned up at the provider), then kubectl delete -k leaves nothing", async () => {
      await apply([
        agent("leftover-batch", "summary", { parameters: { ticket: "x" } }),
        agent("leftover-run", "slow"),
      ]);
      const batchId = await eventually(
        "the leftover batch submitted",
        async () => {
          const a = (await api.ok("GET", `${AGENTS}/leftover-batch`)) as AgentObject;
          return a.status?.batchId || undefined;
        },
        60_000,
      );
      await eventually(
        "the leftover run's Job",
        async () => ((await jobsOf(api, "leftover-run")) > 0 ? true : undefined),
        60_000,
      );
      // Step 1, while the controller runs.
      const deleting = kubectl("-n", NS, "delete", "agents", "--all", "--wait", "--timeout=180s");
      const cancel = `/v1/messages/batches/${batchId}/cancel`;
      await eventually(
        "the batch cancelled at the provider",
        async () =>
          batchApi.requests.some((r) => r.method === "POST" && r.path === cancel) ? true : undefined,
        60_000,
      );
      // The provider ends the cancelled batch (30 s on the fake's clock); the next cleanup deletes it.
      batchApi.advance(30_000);
      await deleting;
      expect(batchApi.batches.get(batchId)?.deleted).toBe(true);
      expect(((await api.ok("GET", AGENTS)) as { items: unknown[] }).items).toEqual([]);
      await eventually(
        "the leftover run's Job collected",
        async () => ((await jobsOf(api, "leftover-run")) === 0 ? true : undefined),
        60_000,
      );
      // Step 2.
      await kubectl("delete", "-k", join(work, "overlay"), "--wait", "--timeout=180s");
      const gone = async (path: string) => (await api.request("GET", path)).status === 404;
      expect(await gone(`/api/v1/namespaces/${NS}`)).toBe(true);
      for (const crd of ["agents", "stations", "agentdefinitions"])
        expect(
          await gone(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}.agents.re-cinq.com`),
          crd,
        ).toBe(true);
    });
  },
);
