/**
 * runSupervisor in a process of its own, as the agent container runs it: real stdout (bare
 * lines, written before the process exits), real signals from outside, a reader that goes away.
 */
import { type ChildProcessByStdio, spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type RunPodDirs, runPodDirs, writeScript } from "../../../test/support/run-pod.js";

const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));
const REPO = fileURLToPath(new URL("../../../", import.meta.url));

let dirs: RunPodDirs;
beforeEach(async () => {
  dirs = await runPodDirs();
});
afterEach(async () => {
  await dirs.remove();
});

type Supervisor = ChildProcessByStdio<null, Readable, Readable>;

/** Starts `runSupervisor(argv, process.env)` under tsx; the entry exits with the returned code. */
async function startSupervisor(argv: string[]): Promise<Supervisor> {
  const entry = join(dirs.root, "entry.mjs");
  await writeFile(
    entry,
    [
      `import { runSupervisor } from ${JSON.stringify(pathToFileURL(MAIN).href)};`,
      "process.exit(await runSupervisor(process.argv.slice(2), process.env));",
    ].join("\n"),
  );
  return spawn(process.execPath, ["--import", "tsx", entry, ...argv], {
    cwd: REPO,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PATH: `${dirs.bin}:/usr/bin:/bin`,
      HOME: dirs.home,
      WORKSPACE_DIR: dirs.workspace,
      AGENT_MODEL: "claude-sonnet-4-6",
      AGENT_EXECUTION: "interactive",
      AGENT_EXIT_GRACE_MS: "300",
    },
  });
}

/** Collects stdout lines; calls `onLine` for each as it arrives. */
function collectLines(stream: Readable, onLine: (line: string) => void = () => {}): string[] {
  const lines: string[] = [];
  let rest = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop() ?? "";
    for (const line of parts) {
      lines.push(line);
      onLine(line);
    }
  });
  return lines;
}

function exitOf(child: Supervisor): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => child.once("close", (code, signal) => resolve({ code, signal })));
}

describe("the supervisor as a process", () => {
  it("forwards SIGTERM to the agent and writes every line bare to its stdout before exiting with the agent's code", async () => {
    await writeScript(
      dirs.bin,
      "agent",
      ["trap 'echo got-TERM; exit 7' TERM", "echo ready", "while :; do sleep 0.05; done"].join("\n"),
    );
    const supervisor = await startSupervisor(["--", "agent"]);
    const stdout = collectLines(supervisor.stdout, (line) => {
      if (line === "ready") supervisor.kill("SIGTERM");
    });
    const stderr = collectLines(supervisor.stderr);
    const exit = await exitOf(supervisor);
    expect(exit).toEqual({ code: 7, signal: null });
    expect(stdout).toEqual([
      '{"kind":"lifecycle","phase":"agent","status":"started"}',
      "ready",
      "got-TERM",
      '{"kind":"lifecycle","phase":"agent","status":"failed","exitCode":7}',
    ]);
    expect(stderr.join("\n")).toContain("received SIGTERM; forwarding it to the agent");
    expect(await readFile(join(dirs.home, "run", "exit-code"), "utf8")).toBe("7\n");
  });

  it("survives a reader of its stdout going away (SIGPIPE ignored) and still reports the exit code", async () => {
    await writeScript(
      dirs.bin,
      "agent",
      [
        "echo ready",
        "sleep 0.3",
        "i=0",
        "while [ $i -lt 50 ]; do echo line-$i; i=$((i+1)); done",
        "exit 3",
      ].join("\n"),
    );
    const supervisor = await startSupervisor(["--", "agent"]);
    collectLines(supervisor.stdout, (line) => {
      if (line === "ready") supervisor.stdout.destroy();
    });
    const exit = await exitOf(supervisor);
    expect(exit).toEqual({ code: 3, signal: null });
    expect(await readFile(join(dirs.home, "run", "exit-code"), "utf8")).toBe("3\n");
  });
});
