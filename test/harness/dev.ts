/**
 * `npm run dev`: a local control plane with the project's CRDs and the example Station and
 * AgentDefinition, then the controller in the foreground. Ctrl-C tears everything down.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fakeCliEnv } from "../fakes/cli/script.js";
import { applyYamlFile, type ControlPlane, installCrds, REPO_ROOT, startControlPlane } from "./cluster.js";
import { RUNNER_SCHEDULING } from "./pod-runner.js";
import { RUNNER_AGENT_IMAGE, runPodProgramsBuilt } from "./pod-runner-images.js";

const NAMESPACE = process.env.NAMESPACE ?? "ai-agents";
/** DEV_POD_RUNNER=0 keeps the example Station on kwok (scripted pods) even when dist/agent exists. */
const USE_RUNNER = process.env.DEV_POD_RUNNER !== "0" && runPodProgramsBuilt();
const log = (m: string) => process.stderr.write(`[dev] ${m}\n`);

function yamlFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((f) => join(dir, f));
}

async function main(): Promise<void> {
  let plane: ControlPlane | undefined;
  let controller: ChildProcess | undefined;
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    if (controller && controller.exitCode === null) {
      controller.kill("SIGTERM");
      await new Promise((r) => controller?.once("exit", r));
    }
    log("stopping the control plane");
    await plane?.stop();
    process.exit(code);
  };
  process.on("SIGINT", () => void shutdown(0));
  process.on("SIGTERM", () => void shutdown(0));

  plane = await startControlPlane({ log: (m) => log(m) });
  const api = plane.api();
  const crds = await installCrds(api, yamlFiles(join(REPO_ROOT, "deploy/crds")));
  log(crds.length > 0 ? `CRDs Established: ${crds.join(", ")}` : "no CRDs in deploy/crds yet");
  const nsRes = await api.request("POST", "/api/v1/namespaces", { metadata: { name: NAMESPACE } });
  if (nsRes.status !== 201 && nsRes.status !== 409)
    throw new Error(`creating namespace ${NAMESPACE}: ${nsRes.body}`);
  if (crds.length > 0) {
    for (const file of ["agentdefinition.yaml", "station.yaml"]) {
      const applied = await applyYamlFile(api, join(REPO_ROOT, "deploy/examples", file));
      log(`applied ${applied.map((a) => `${a.kind}/${a.name}`).join(", ")}`);
    }
    if (USE_RUNNER) {
      // Runs go to the pod runner: the real init and supervisor, with the fake claude answering.
      await api.ok(
        "PATCH",
        `/apis/agents.re-cinq.com/v1beta1/namespaces/${NAMESPACE}/stations/default`,
        {
          spec: {
            template: {
              spec: {
                ...RUNNER_SCHEDULING,
                containers: [
                  {
                    name: "agent",
                    image: "ghcr.io/example/agent-runtime:dev",
                    env: fakeCliEnv({
                      answer: "dev run finished (fake claude on the pod runner)",
                      durationMs: 3000,
                    }),
                  },
                ],
              },
            },
          },
        },
        "application/merge-patch+json",
      );
      log(
        "Station default runs on the pod runner (node runner-node-0) with a fake claude; DEV_POD_RUNNER=0 keeps kwok",
      );
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
    log("starting the controller (npm run controller)");
    controller = spawn("npm", ["run", "--silent", "controller"], {
      cwd: REPO_ROOT,
      stdio: "inherit",
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig,
        NAMESPACE,
        ...(USE_RUNNER ? { AGENT_IMAGE: RUNNER_AGENT_IMAGE } : {}),
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
