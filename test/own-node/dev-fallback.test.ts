/**
 * `npm run dev` on a machine that could run the real node but cannot have it now (another plane's
 * node holds the machine past DEV_NODE_WAIT_S): it says why, and runs the example the way a machine
 * without a real node does, instead of failing.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/cluster.js";
import { eventually } from "../harness/context.js";
import { MACHINE } from "../harness/real-node/config.js";
import { realNodeProblem } from "../harness/real-node/index.js";

const problem = realNodeProblem();
let holder: ChildProcess | undefined;
let dev: ChildProcess | undefined;

afterAll(async () => {
  if (dev && dev.exitCode === null) {
    dev.kill("SIGINT");
    await new Promise((r) => dev?.once("exit", r));
  }
  if (holder?.pid !== undefined) {
    // Our stand-in owner's lock only: another plane's is not ours to remove.
    try {
      if (readFileSync(MACHINE.lockFile, "utf8").startsWith(`${holder.pid}\n`)) rmSync(MACHINE.lockFile);
    } catch {}
    holder.kill("SIGKILL");
  }
});

describe.skipIf(problem !== "")(
  `npm run dev when the real node is taken${problem ? ` (skipped: ${problem})` : ""}`,
  () => {
    it("says the real node did not start and why, runs the example without it, and Ctrl-C stops it", async () => {
      // The machine's node lock held by a live process (ours, unless another plane holds it already).
      holder = spawn("sleep", ["600"], { stdio: "ignore" });
      try {
        writeFileSync(MACHINE.lockFile, `${holder.pid}\n\n`, { flag: "wx" });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
      let said = "";
      dev = spawn(process.execPath, ["--import", "tsx", "test/harness/dev.ts"], {
        cwd: REPO_ROOT,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, NAMESPACE: "ai-agents", DEV_NODE_WAIT_S: "1" },
      });
      const exited = new Promise<number | null>((r) => dev?.once("exit", (code) => r(code)));
      dev.stderr?.on("data", (c: Buffer) => {
        said += c.toString();
      });
      dev.stdout?.on("data", (c: Buffer) => {
        said += c.toString();
      });
      await eventually(
        "npm run dev's controller",
        () => said.includes("starting the controller") || dev?.exitCode !== null,
        600_000,
        500,
      );
      expect(said).toContain(
        "no real node (it did not start: real node: another plane's real node is running on this machine (pid ",
      );
      expect(said).toMatch(/the example's run pods run on the pod runner|the example Station stays on kwok/);
      expect(said).not.toContain("Station default runs on the real node");
      dev.kill("SIGINT");
      expect(await exited, said.slice(-3000)).toBe(0);
    });
  },
);
