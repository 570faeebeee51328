/** What a plugin command may touch, injected so commands run in-process under tests. */
import type { AgentsClient } from "../client/agents.js";
import type { GlobalFlags } from "./args.js";

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
  readStdin(): Promise<string>;
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** A client for the kubeconfig, context and namespace the flags choose. */
  connect(flags: GlobalFlags): Promise<AgentsClient>;
  /** Aborted on SIGINT/SIGTERM. */
  signal?: AbortSignal;
  /** For the prompt API; global fetch by default. */
  fetch?: typeof fetch;
  /** How often `-f` re-reads the Agent and its pod log (default 2000 ms). */
  followIntervalMs?: number;
}

/** Thrown by a command to end with a message on stderr and this exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = "CliError";
  }
}
