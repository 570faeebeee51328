/**
 * `npm run dev`: a local control plane with the project's CRDs and the example Station and
 * AgentDefinition, then the controller in the foreground. Ctrl-C, or a signal to this process
 * (a timeout, a process manager), tears everything down; so does the death of the shell that
 * started it.
 *
 * Where the machine can run the real node (docs/real-node.md: root, containerd, runc, the CNI
 * plugins), the example Station's runs go there: the agent image built from the Dockerfile and a
 * Station image with the REAL pinned claude CLI (deploy/station-image/Dockerfile), talking to a
 * local Anthropic Messages server started here, whose scripted answer writes a file in the run's
 * workspace through claude's own Write tool. Those runs call their model through the model gateway
 * (src/gateway/main.ts, started here in cluster mode in front of that server): the run pod holds a
 * run credential, never the key, and the run's cost is the gateway's meter (docs/gateway.md);
 * DEV_GATEWAY=0 gives the pod the key instead, as the seeds describe. Otherwise, or when the node does not start (another
 * plane's node still running after DEV_NODE_WAIT_S, default 60 s; an image build or import failing),
 * the log says why and, with dist/agent built, the runs go to the pod runner (this project's
 * stand-in kubelet). DEV_FAKE_CLI=1 keeps a fake
 * claude (machines without the CLIs or the network to get them); DEV_REAL_NODE=0 skips the real
 * node; DEV_POD_RUNNER=0 keeps kwok.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AGENT_BASE_URL_SETTINGS } from "../../src/core/cli/agent-clis.js";
import { fakeCliEnv } from "../fakes/cli/script.js";
import { type AnthropicMessagesServer, startAnthropicMessages } from "../fakes/models/anthropic-messages.js";
import type { ModelStep } from "../fakes/models/base.js";
import { ensureAgentClis } from "./agent-clis.js";
import { applyYamlFile, type ControlPlane, installCrds, REPO_ROOT, startControlPlane } from "./cluster.js";
import { buildImages } from "./images.js";
import { REAL_CLI_AGENT_IMAGE, RUNNER_AGENT_IMAGE, runPodProgramsBuilt } from "./pod-runner/images.js";
import { RUNNER_SCHEDULING } from "./pod-runner/index.js";
import { freePorts } from "./ports.js";
import { MACHINE } from "./real-node/config.js";
import { REAL_NODE_SCHEDULING, realNodeProblem } from "./real-node/index.js";
import { buildStationImages, FAKE_CLI_STATION_IMAGE, REAL_CLI_STATION_IMAGE } from "./station-images.js";

const NAMESPACE = process.env.NAMESPACE ?? "ai-agents";
/** Why the example does not run on the real node ("" when it does); DEV_REAL_NODE=0 says so. */
const NODE_PROBLEM = process.env.DEV_REAL_NODE === "0" ? "DEV_REAL_NODE=0" : realNodeProblem();
/** How long to wait for another plane's real node (DEV_NODE_WAIT_S, default 60) before falling back. */
const DEV_NODE_WAIT_MS = (() => {
  const raw = process.env.DEV_NODE_WAIT_S ?? "60";
  const s = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(s) || s < 0)
    throw new Error(`DEV_NODE_WAIT_S must be a number of seconds ≥ 0, got: "${raw}"`);
  return s * 1000;
})();
/** DEV_FAKE_CLI=1 runs the fake claude on the pod runner instead of the real one. */
const WANT_REAL_CLI = process.env.DEV_FAKE_CLI !== "1";
/** DEV_GATEWAY=0: the example's runs hold the key themselves instead of going through the model gateway. */
const WANT_GATEWAY = process.env.DEV_GATEWAY !== "0";
const log = (m: string) => process.stderr.write(`[dev] ${m}\n`);
/** The dev key: the local model server accepts any key, the real CLI insists on having one. */
const DEV_API_KEY = "sk-ant-api03-dev-local-model-server";
/** What the local model answers each run: write a file with claude's own Write tool, then say so. */
const DEV_RUN_STEPS: ModelStep[] = [
  {
    toolCall: {
      name: "Write",
      input: {
        file_path: "/workspace/summary.md",
        content:
          "# Summary\n\nWritten by the real claude CLI, answered by the local model server (npm run dev).\n",
      },
    },
    text: "I'll write the summary to summary.md.",
  },
  { text: "Wrote summary.md.", usage: { input: 1200, output: 40 } },
];
/** Runs the scripted answers cover; every later model call gets the server's default "Done.". */
const DEV_SCRIPTED_RUNS = 200;

/** The real claude CLI is ready (installing it on first use), or why the fake one runs instead. */
async function realCliReady(): Promise<true | string> {
  if (!WANT_REAL_CLI) return "DEV_FAKE_CLI=1";
  try {
    await ensureAgentClis({ log: (m) => log(`agent CLIs: ${m}`) });
    return true;
  } catch (err) {
    return (err as Error).message;
  }
}

/** The example Station's agent container: the real claude with the dev key, or the scripted fake. */
function stationPatch(
  where: "real-node" | "pod-runner",
  realCli: boolean,
  gateway: boolean,
): Record<string, unknown> {
  const agent = realCli
    ? {
        name: "agent",
        image: where === "real-node" ? REAL_CLI_STATION_IMAGE : REAL_CLI_AGENT_IMAGE,
        // Through the gateway the pod gets a run credential from the Job builder, never the key
        // (a Station naming the key would be refused: docs/gateway.md#issued-by-the-job-builder).
        env: gateway
          ? []
          : [
              {
                name: "ANTHROPIC_API_KEY",
                valueFrom: { secretKeyRef: { name: "agent-secrets", key: "ANTHROPIC_API_KEY" } },
              },
            ],
      }
    : {
        name: "agent",
        image: where === "real-node" ? FAKE_CLI_STATION_IMAGE : "ghcr.io/example/agent-runtime:dev",
        env: fakeCliEnv({ answer: `dev run finished (fake claude on the ${where})`, durationMs: 3000 }),
      };
  const scheduling = where === "real-node" ? REAL_NODE_SCHEDULING : RUNNER_SCHEDULING;
  return { spec: { template: { spec: { ...scheduling, containers: [agent] } } } };
}

function nodeWords(where: "real-node" | "pod-runner"): string {
  return where === "real-node"
    ? `the real node (${MACHINE.nodeName}: kubelet, containerd, runc; images built from the Dockerfile)`
    : "the pod runner (node runner-node-0, this project's stand-in kubelet); DEV_POD_RUNNER=0 keeps kwok";
}

/**
 * The plane with the real node, the agent image and the example's Station image imported (the
 * real pinned CLIs, or the fakes). A failure stops what started and throws.
 */
async function startOnRealNode(realCli: boolean): Promise<{ plane: ControlPlane; agentImage?: string }> {
  const plane = await startControlPlane({
    log: (m) => log(m),
    // A developer waits a minute for another plane's node (an integration run), not ten.
    realNode: { images: ["agent"], lockTimeoutMs: DEV_NODE_WAIT_MS },
  });
  try {
    const node = plane.realNode;
    if (!node) throw new Error("the plane started without its real node");
    const manifest = await buildImages(["agent"], log);
    const { realClis, fakeClis } = await buildStationImages(
      manifest,
      [realCli ? "realClis" : "fakeClis"],
      log,
    );
    for (const image of [realClis, fakeClis]) if (image) await node.importImage(image, log);
    return { plane, agentImage: node.state.images.agent?.name };
  } catch (err) {
    await plane.stop();
    throw err;
  }
}

function yamlFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((f) => join(dir, f));
}

/**
 * The model gateway as its own process (src/gateway/main.ts, cluster mode with the plane's admin
 * kubeconfig) in front of the local model server, on the node's bridge where the run pods reach it;
 * its key and agent-secrets as files in a directory of its own. Resolves once it serves.
 */
async function startDevGateway(
  kubeconfig: string,
  upstream: string,
): Promise<{ child: ChildProcess; url: string; controllerEnv: Record<string, string> }> {
  const dir = mkdtempSync(join(tmpdir(), "dev-gateway-"));
  const keyFile = join(dir, "credential-key");
  writeFileSync(keyFile, `${randomBytes(32).toString("hex")}\n`);
  const secretsDir = join(dir, "agent-secrets");
  mkdirSync(secretsDir);
  writeFileSync(join(secretsDir, "ANTHROPIC_API_KEY"), DEV_API_KEY);
  const [port, metricsPort] = await freePorts(2);
  const url = `http://${MACHINE.gateway}:${port}`;
  const child = spawn(process.execPath, ["--import", "tsx", "src/gateway/main.ts"], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "inherit", "inherit"],
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      GATEWAY_MODE: "cluster",
      GATEWAY_NAMESPACE: NAMESPACE,
      GATEWAY_AGENT_SECRETS_DIR: secretsDir,
      GATEWAY_CREDENTIAL_KEY_FILE: keyFile,
      GATEWAY_ANTHROPIC_UPSTREAM: upstream,
      GATEWAY_HOST: MACHINE.gateway,
      GATEWAY_PORT: String(port),
      GATEWAY_METRICS_PORT: String(metricsPort),
    },
  });
  child.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`the model gateway exited (${child.exitCode}) before it served`);
    try {
      const res = await fetch(`http://${MACHINE.gateway}:${metricsPort}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error("the model gateway did not serve within 60 s");
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    child,
    url,
    controllerEnv: { AGENT_GATEWAY_URL: url, AGENT_GATEWAY_CREDENTIAL_KEY_FILE: keyFile },
  };
}

async function main(): Promise<void> {
  let plane: ControlPlane | undefined;
  let controller: ChildProcess | undefined;
  let model: AnthropicMessagesServer | undefined;
  let gateway: ChildProcess | undefined;
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    if (controller && controller.exitCode === null && controller.signalCode === null) {
      controller.kill("SIGTERM");
      await new Promise((r) => controller?.once("exit", r));
    }
    if (gateway && gateway.exitCode === null && gateway.signalCode === null) {
      gateway.kill("SIGTERM");
      await new Promise((r) => gateway?.once("exit", r));
    }
    await model?.close();
    log("stopping the control plane");
    await plane?.stop();
    process.exit(code);
  };
  process.on("SIGINT", () => void shutdown(0));
  process.on("SIGTERM", () => void shutdown(0));
  process.on("SIGHUP", () => void shutdown(0));
  // npm runs this under `sh -c`, which does not pass a signal on: when whatever started us is
  // killed, we are re-parented, and stop instead of leaving the plane and the controller behind.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent && !stopping) {
      log("the process that started npm run dev is gone; stopping");
      void shutdown(0);
    }
  }, 1000).unref();

  let nodeProblem = NODE_PROBLEM;
  let agentImage: string | undefined;
  let realCli: true | string = process.env.DEV_FAKE_CLI === "1" ? "DEV_FAKE_CLI=1" : true;
  if (nodeProblem === "") {
    if (realCli !== true) log(`the fake claude runs instead of the real one: ${realCli}`);
    try {
      ({ plane, agentImage } = await startOnRealNode(realCli === true));
    } catch (err) {
      // The machine can, but the node did not start here (another plane's node held on past the
      // wait, a build or an import failed): say why, and run the example as a machine without one.
      nodeProblem = `it did not start: ${(err as Error).message.trim().split("\n").slice(0, 6).join(" | ")}`;
      plane = undefined;
    }
  }
  const onRealNode = nodeProblem === "";
  const useRunner = !onRealNode && process.env.DEV_POD_RUNNER !== "0" && runPodProgramsBuilt();
  if (!onRealNode) {
    log(
      `no real node (${nodeProblem}): ${useRunner ? "the example's run pods run on the pod runner, this project's stand-in kubelet" : "the example Station stays on kwok"}`,
    );
    // Before the plane: the pod runner's real-CLI image looks for the CLI cache when the plane starts.
    if (realCli === true) realCli = useRunner ? await realCliReady() : "no run pods run";
    if (useRunner && realCli !== true) log(`the fake claude runs instead of the real one: ${realCli}`);
    plane = await startControlPlane({ log: (m) => log(m), podRunner: useRunner });
    if (useRunner) agentImage = RUNNER_AGENT_IMAGE;
  }
  if (!plane) throw new Error("no control plane");
  const where = onRealNode ? ("real-node" as const) : ("pod-runner" as const);
  const api = plane.api();
  const crds = await installCrds(api, yamlFiles(join(REPO_ROOT, "deploy/crds")));
  log(crds.length > 0 ? `CRDs Established: ${crds.join(", ")}` : "no CRDs in deploy/crds yet");
  const nsRes = await api.request("POST", "/api/v1/namespaces", { metadata: { name: NAMESPACE } });
  if (nsRes.status !== 201 && nsRes.status !== 409)
    throw new Error(`creating namespace ${NAMESPACE}: ${nsRes.body}`);
  const controllerEnv: Record<string, string> = {};
  if (crds.length > 0) {
    for (const file of ["agentdefinition.yaml", "station.yaml"]) {
      const applied = await applyYamlFile(api, join(REPO_ROOT, "deploy/examples", file));
      log(`applied ${applied.map((a) => `${a.kind}/${a.name}`).join(", ")}`);
    }
    if (agentImage !== undefined) {
      const patch = (path: string, body: unknown) =>
        api.ok(
          "PATCH",
          `/apis/agents.re-cinq.com/v1beta1/namespaces/${NAMESPACE}/${path}`,
          body,
          "application/merge-patch+json",
        );
      // The gateway runs beside the real node's pods (it listens on the node's bridge).
      const throughGateway = WANT_GATEWAY && realCli === true && onRealNode;
      await patch("stations/default", stationPatch(where, realCli === true, throughGateway));
      if (realCli === true) {
        // Pods on the real node reach this machine on the node's bridge, not on 127.0.0.1.
        model = await startAnthropicMessages(onRealNode ? MACHINE.gateway : undefined);
        for (let i = 0; i < DEV_SCRIPTED_RUNS; i++) model.script(DEV_RUN_STEPS);
        controllerEnv[AGENT_BASE_URL_SETTINGS.anthropic.setting] = model.origin;
        if (throughGateway) {
          const started = await startDevGateway(plane.kubeconfig, model.origin);
          gateway = started.child;
          gateway.on("exit", (code, signal) => {
            log(`model gateway exited (${signal ?? code})`);
            void shutdown(signal ? 0 : (code ?? 1));
          });
          Object.assign(controllerEnv, started.controllerEnv);
          // The gateway sends the key the definition names for the vendor (docs/gateway.md#provider-keys).
          await patch("agentdefinitions/summarize", {
            spec: { resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "ANTHROPIC_API_KEY" }] } },
          });
          log(
            `the runs call their model through the model gateway at ${started.url} (a run credential in the pod, never the key; the cost is the gateway's meter). DEV_GATEWAY=0 gives the pod the key instead`,
          );
        }
        const secret = {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "agent-secrets" },
          stringData: { ANTHROPIC_API_KEY: DEV_API_KEY },
        };
        const res = await api.request("POST", `/api/v1/namespaces/${NAMESPACE}/secrets`, secret);
        if (res.status !== 201 && res.status !== 409) throw new Error(`creating agent-secrets: ${res.body}`);
        // claude may write files only with its tools allowed (the pod is the sandbox).
        await patch("agentdefinitions/summarize", { spec: { allowed_tools: ["Write", "Edit", "Read"] } });
        log(
          `Station default runs on ${nodeWords(where)} with the REAL claude CLI; its model is the local Anthropic Messages server at ${model.origin} (each run writes /workspace/summary.md). DEV_FAKE_CLI=1 runs a fake claude`,
        );
      } else {
        log(`Station default runs on ${nodeWords(where)} with a fake claude`);
      }
    } else {
      log("Station default runs on kwok (scripted pods); `npm run build:agent` first to run real run pods");
    }
  }
  const kubeconfig = plane.kubeconfig;
  log(`KUBECONFIG=${kubeconfig}`);
  log(
    `try: KUBECONFIG=${kubeconfig} kubectl create -f deploy/examples/agent.yaml && kubectl -n ${NAMESPACE} get agt -w`,
  );

  if (existsSync(join(REPO_ROOT, "src/controller/main.ts"))) {
    log("starting the controller (src/controller/main.ts)");
    // The controller itself, not npm in front of it: a signal from shutdown() reaches it, and it
    // stays in this process group, so a group-wide kill (Ctrl-C, timeout) reaches it too.
    controller = spawn(process.execPath, ["--import", "tsx", "src/controller/main.ts"], {
      cwd: REPO_ROOT,
      stdio: "inherit",
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig,
        NAMESPACE,
        ...(agentImage !== undefined ? { AGENT_IMAGE: agentImage } : {}),
        ...controllerEnv,
      },
    });
    controller.on("exit", (code, signal) => {
      log(`controller exited (${signal ?? code})`);
      // Killed by the Ctrl-C we also received: a normal end.
      void shutdown(signal ? 0 : (code ?? 1));
    });
  } else {
    log("src/controller/main.ts does not exist yet; the plane stays up until Ctrl-C");
    setInterval(() => {}, 1 << 30);
  }
}

main().catch((err) => {
  process.stderr.write(`[dev] ${(err as Error).message}\n`);
  process.exit(1);
});
