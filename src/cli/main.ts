#!/usr/bin/env node
import path from "node:path";
/**
 * Entry point of `kubectl-agent`, the kubectl plugin (docs/kubectl-plugin.md). kubectl finds it on
 * PATH by its name; invoked as `kubectl_complete-agent` (the name kubectl ≥ 1.26 runs for a
 * plugin's shell completion) it answers completion requests.
 */
import { setTimeout as sleepMs } from "node:timers/promises";
import { AgentsClient } from "../client/agents.js";
import { exitAfterFlush } from "../process-exit.js";
import { runCli } from "./cli.js";
import type { CliIo } from "./io.js";

const COMPLETE_NAME = "kubectl_complete-agent";

function invokedAs(): string {
  // Under a single executable argv[1] repeats the invoked name; under node it is the script.
  return (
    [process.argv0, process.argv[1] ?? ""]
      .map((p) => path.basename(p))
      .find((n) => n.startsWith(COMPLETE_NAME)) ?? ""
  );
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function main(): Promise<number> {
  const interrupted = new AbortController();
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => interrupted.abort());
  const io: CliIo = {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    env: process.env,
    readStdin,
    now: () => Date.now(),
    sleep: async (ms, signal) => {
      await sleepMs(ms, undefined, signal ? { signal } : undefined);
    },
    connect: (g) =>
      AgentsClient.connect({
        ...(g.kubeconfig ? { kubeconfig: g.kubeconfig } : {}),
        ...(g.context ? { context: g.context } : {}),
        ...(g.namespace ? { namespace: g.namespace } : {}),
      }),
    signal: interrupted.signal,
  };
  const args = process.argv.slice(2);
  return runCli(invokedAs() ? ["__complete", ...args] : args, io);
}

main().then(exitAfterFlush, (err: unknown) => {
  process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  exitAfterFlush(1);
});
