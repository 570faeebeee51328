/**
 * What the `*-supervisor.test.ts` files share: the REAL CLI from the CLI cache (test/harness/agent-clis.ts)
 * under the BUILT supervisor (dist/agent/ai-agent-supervisor), run as an interactive run pod runs it
 * (fresh HOME and workspace, stdin /dev/null, the Job builder's agent-container environment), with
 * no control plane. Each file keeps its argv, its model server and what it asserts; the vendor's
 * model API key and base URL come in as `modelEnv`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll } from "vitest";
import type { CliVendor } from "../../../src/core/cli/agent-clis.js";
import { cachedCli } from "../../harness/agent-clis.js";

export const SUPERVISOR = resolve(import.meta.dirname, "../../../dist/agent/ai-agent-supervisor");

/** A run's HOME and workspace (both under the file's temporary root). */
export interface RunDir {
  home: string;
  workspace: string;
}

export interface SupervisedRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The CLI's own stdout lines, parsed (the supervisor's lifecycle events left out). */
  cliLines: Record<string, unknown>[];
  /** The same lines as the CLI printed them. */
  cliText: string[];
}

/**
 * A short deadline and a 1 s first backoff: the supervisor rides out a provider limit for a few
 * retries (docs/provider-limits.md#riding-out-a-limit), then ends the run as at its deadline (124).
 */
export const BRIEF_PROVIDER_RIDE: Readonly<Record<string, string>> = {
  AGENT_DEADLINE_MS: "25000",
  AGENT_PROVIDER_RETRY_BASE_MS: "1000",
};

/**
 * The 1 s first backoff with room to finish: for a run that is expected to succeed after a wait
 * (a CLI's own retries and a second start take half a minute and more on a loaded machine).
 */
export const PROVIDER_RIDE_TO_SUCCESS: Readonly<Record<string, string>> = {
  AGENT_DEADLINE_MS: "120000",
  AGENT_PROVIDER_RETRY_BASE_MS: "1000",
};

/** The supervisor's provider-limit events on a run's stdout. */
export function providerLimitEvents(stdout: string): Record<string, unknown>[] {
  return stdout
    .split("\n")
    .filter((l) => l.startsWith('{"kind":"provider-limit"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export interface SupervisorHarnessOptions<M> {
  vendor: CliVendor;
  /** AGENT_MODEL. */
  model: string;
  /** Starts a local model server (test/fakes/models/*). */
  startModel: () => Promise<M>;
  /** The API key and base URL variables the agent container gets for `model`. */
  modelEnv: (model: M) => Record<string, string>;
  /** AGENT_DEADLINE_MS; default DEFAULT_DEADLINE_MS. */
  deadlineMs?: number;
  /**
   * Which of the stdout JSON lines with a string `type` are the CLI's own; default all of them (the
   * supervisor's own events have `kind`, not `type`).
   */
  isCliLine?: (line: Record<string, unknown>) => boolean;
}

export interface SupervisorHarness<M> {
  /** Why the file cannot run here, or undefined: use as `describe.skipIf(skip)`. */
  skip: string | undefined;
  /**
   * The timeout for a test that runs the supervisor: past the run's deadline, so a run slowed by
   * load ends in the supervisor's own deadline handling and the test's assertions say what went
   * wrong, instead of vitest abandoning a run that keeps talking to the model.
   */
  testTimeoutMs: number;
  /** The file's temporary root (exists from beforeAll on). */
  root(): string;
  /** A fresh run dir (HOME and workspace), or an existing one to continue in. */
  runDir(name: string): RunDir;
  /** Another model server, closed after the file. */
  modelServer(): Promise<M>;
  /** The supervisor running `argv` in `dir` against `model`; `env` adds to or overrides the environment. */
  supervise(model: M, dir: RunDir, argv: string[], env?: Record<string, string>): Promise<SupervisedRun>;
}

/**
 * Registers the file's beforeAll (a temporary root with a bin dir holding the cached CLI) and
 * afterAll (closes every model server, removes the root). Skips, with the reason printed, while
 * dist/agent is not built or the CLI is not in the cache; in CI both are errors.
 */
const DEFAULT_DEADLINE_MS = 240_000;
/** What the supervisor needs after its deadline: stopping the CLI, its grace period, the exit. */
const DEADLINE_TAIL_MS = 60_000;
/** How long a run still going when the file ends gets to stop on SIGTERM before SIGKILL. */
const STOP_GRACE_MS = 10_000;

export function supervisorHarness<M extends { close(): Promise<void> }>(
  options: SupervisorHarnessOptions<M>,
): SupervisorHarness<M> {
  const { vendor } = options;
  const cli = cachedCli(vendor);
  const problems = [
    ...(existsSync(SUPERVISOR) ? [] : ["dist/agent is missing: run `npm run build:agent`"]),
    ...(existsSync(cli.executable) ? [] : [`${vendor} is not in the CLI cache (${cli.executable})`]),
  ];
  if (problems.length > 0 && process.env.CI === "true") throw new Error(problems.join("; "));
  const skip = problems.length === 0 ? undefined : problems.join("; ");
  if (skip) console.warn(`${vendor}-supervisor tests skipped: ${skip}`);

  let root = "";
  let binDir = "";
  const servers: M[] = [];
  // Runs still going when the file ends (a failed test does not wait for its run) are stopped
  // before their model servers close: SIGTERM lets the supervisor stop its CLI. Not per test: the
  // tests of a file may run concurrently (it.concurrent), and a finished test cannot tell which
  // runs are its own.
  const running = new Set<ChildProcess>();
  beforeAll(() => {
    if (skip) return;
    root = mkdtempSync(join(tmpdir(), `${vendor}-supervisor-`));
    binDir = join(root, "bin");
    mkdirSync(binDir);
    symlinkSync(cli.executable, join(binDir, vendor));
  });
  afterAll(async () => {
    if (skip) return;
    await Promise.all([...running].map(stopRun));
    await Promise.all(servers.map((s) => s.close()));
    rmSync(root, { recursive: true, force: true });
  });

  const runDir = (name: string): RunDir => {
    const home = join(root, name, "home");
    const workspace = join(root, name, "workspace");
    mkdirSync(home, { recursive: true });
    mkdirSync(workspace, { recursive: true });
    return { home, workspace };
  };

  const modelServer = async (): Promise<M> => {
    const server = await options.startModel();
    servers.push(server);
    return server;
  };

  const deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
  const isCliLine = options.isCliLine ?? (() => true);
  const supervise = (
    model: M,
    dir: RunDir,
    argv: string[],
    env: Record<string, string> = {},
  ): Promise<SupervisedRun> => {
    const child = spawn(SUPERVISOR, ["--", ...argv], {
      cwd: dir.workspace,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        HOME: dir.home,
        WORKSPACE_DIR: dir.workspace,
        PATH: `${binDir}:/usr/local/bin:/usr/bin:/bin`,
        AGENT_MODEL: options.model,
        AGENT_EXECUTION: "interactive",
        AGENT_SINKS: "[]",
        AGENT_DEADLINE_MS: String(deadlineMs),
        ...options.modelEnv(model),
        ...env,
      },
    });
    running.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    return new Promise((done) => {
      child.on("close", (code) => {
        running.delete(child);
        const cli = stdout
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((text) => ({ text, line: JSON.parse(text) as Record<string, unknown> }))
          .filter(({ line }) => typeof line.type === "string" && isCliLine(line));
        done({
          code,
          stdout,
          stderr,
          cliLines: cli.map(({ line }) => line),
          cliText: cli.map(({ text }) => text),
        });
      });
    });
  };

  return {
    skip,
    testTimeoutMs: deadlineMs + DEADLINE_TAIL_MS,
    root: () => root,
    runDir,
    modelServer,
    supervise,
  };
}

function stopRun(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
    child.once("close", () => {
      clearTimeout(kill);
      done();
    });
    child.kill("SIGTERM");
  });
}
