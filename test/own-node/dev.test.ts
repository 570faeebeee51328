/**
 * `npm run dev` as a developer runs it, on a machine that can run the real node: the example Agent
 * (deploy/examples/agent.yaml, created with kubectl) runs on the real node with the real pinned
 * claude CLI against the local model server, and Ctrl-C takes everything down again.
 */
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/cluster.js";
import { eventually } from "../harness/context.js";
import { MACHINE, realNodeProblem } from "../harness/real-node/index.js";

const run = promisify(execFile);
const problem = realNodeProblem();
const dev = problem
  ? undefined
  : spawn(process.execPath, ["--import", "tsx", "test/harness/dev.ts"], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NAMESPACE: "ai-agents" },
    });
let said = "";
dev?.stderr?.on("data", (c: Buffer) => {
  said += c.toString();
});
dev?.stdout?.on("data", (c: Buffer) => {
  said += c.toString();
});
const exited = dev ? new Promise<number | null>((r) => dev.once("exit", (code) => r(code))) : undefined;

afterAll(async () => {
  if (dev && dev.exitCode === null) {
    dev.kill("SIGINT");
    await exited;
  }
});

const kubectl = async (kubeconfig: string, ...args: string[]) =>
  (await run("kubectl", [`--kubeconfig=${kubeconfig}`, "-n", "ai-agents", ...args])).stdout.trim();

describe.skipIf(problem !== "")(
  `npm run dev on the real node${problem ? ` (skipped: ${problem})` : ""}`,
  () => {
    it("runs the example Agent with the real claude on the real node, and Ctrl-C stops it all", async () => {
      const kubeconfig = await eventually(
        "npm run dev's KUBECONFIG and its controller",
        () => (said.includes("starting the controller") ? /KUBECONFIG=(\S+)/.exec(said)?.[1] : undefined),
        600_000,
        500,
      );
      expect(said).toContain("Station default runs on the real node");
      expect(said).toContain("with the REAL claude CLI");
      expect(said).toContain("the runs call their model through the model gateway");
      const created = await kubectl(kubeconfig, "create", "-f", "deploy/examples/agent.yaml", "-o", "name");
      const name = created.replace(/^.*\//, "");
      const phase = await eventually(
        `${created} Succeeded or Failed`,
        async () => {
          const p = await kubectl(kubeconfig, "get", "agt", name, "-o", "jsonpath={.status.phase}");
          return p === "Succeeded" || p === "Failed" ? p : undefined;
        },
        240_000,
        1000,
      );
      const status = JSON.parse(await kubectl(kubeconfig, "get", "agt", name, "-o", "jsonpath={.status}"));
      expect(phase, JSON.stringify(status)).toBe("Succeeded");
      expect(status.output).toContain("Wrote summary.md.");
      // Through the gateway: the cost is its meter of the model's answers (docs/gateway.md#metering).
      expect(status.costSource).toBe("metered");
      expect(Number(status.costUSD)).toBeGreaterThan(0);
      const node = await kubectl(
        kubeconfig,
        "get",
        "pods",
        "-l",
        `agents.re-cinq.com/agent=${name}`,
        "-o",
        "jsonpath={.items[0].spec.nodeName}",
      );
      expect(node).toBe(MACHINE.nodeName);

      dev?.kill("SIGINT");
      expect(await exited).toBe(0);
      // The node is off the machine: no bridge left.
      const { stdout } = await run("ip", ["-o", "link"]);
      expect(stdout).not.toContain(`${MACHINE.bridge}:`);
    });
  },
);
