/**
 * A sandbox for running the run-pod init in-process: tmp HOME and workspace, a fake supervisor
 * executable, a directory for fake executables to put on PATH, a file sink, and a runner that
 * captures stdout, stderr, the events the sink received and the argv of every spawned command.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Env } from "../../src/run-pod/common/run-env.js";
import { type Command, spawnRunner } from "../../src/run-pod/init/commands.js";
import { type InitDeps, runInitWith } from "../../src/run-pod/init/main.js";

export interface InitSandbox {
  root: string;
  home: string;
  workspace: string;
  /** Put fake executables here; it is first on the sandbox PATH. */
  bin: string;
  /** The file sink every run writes envelopes to. */
  sinkFile: string;
  /** The run env: tmp HOME/WORKSPACE_DIR, PATH = bin:/usr/bin:/bin, model exec, a file sink. */
  env(extra?: Record<string, string | undefined>): Env;
  cleanup(): void;
}

export function initSandbox(): InitSandbox {
  const root = mkdtempSync(join(tmpdir(), "init-sandbox-"));
  const home = join(root, "agent");
  const workspace = join(root, "workspace");
  const bin = join(root, "bin");
  const image = join(root, "image");
  for (const d of [home, workspace, bin, image]) mkdirSync(d, { recursive: true });
  const supervisor = join(image, "ai-agent-supervisor");
  writeFileSync(supervisor, "#!/bin/sh\necho supervisor\n");
  const sinkFile = join(root, "sink.jsonl");
  return {
    root,
    home,
    workspace,
    bin,
    sinkFile,
    env: (extra = {}) => {
      const env: Record<string, string | undefined> = {
        HOME: home,
        WORKSPACE_DIR: workspace,
        PATH: `${bin}:/usr/bin:/bin`,
        AGENT_MODEL: "exec",
        AGENT_SINKS: JSON.stringify([{ type: "file", path: sinkFile }]),
        AGENT_SUPERVISOR_SOURCE: supervisor,
        AGENT_NAME: "a1",
        STATION_NAME: "s1",
        POD_NAME: "agent-job-a1-xyz",
        POD_NAMESPACE: "ai-agents",
        ...extra,
      };
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
      return env;
    },
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** Writes an executable shell script `name` into `dir`. */
export function fakeExecutable(dir: string, name: string, script: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${script}\n`);
  chmodSync(path, 0o755);
  return path;
}

export interface InitRun {
  code: number;
  stdout: string[];
  stderr: string[];
  /** The bare events on stdout, parsed. */
  events: Array<Record<string, unknown>>;
  /** `phase/status[ key=value…]` per stdout event, for order assertions. */
  summary: string[];
  /** The events the file sink received (unwrapped from their envelopes). */
  sinkEvents: Array<Record<string, unknown>>;
  /** The raw sink file. */
  sinkText: string;
  commands: Command[];
}

export function summarize(event: Record<string, unknown>): string {
  const extra = ["tool", "reason", "exitCode"]
    .filter((k) => event[k] !== undefined)
    .map((k) => ` ${k}=${String(event[k])}`)
    .join("");
  return `${String(event.phase)}/${String(event.status)}${extra}`;
}

export async function runInitCaptured(sandbox: InitSandbox, env: Env, deps: InitDeps = {}): Promise<InitRun> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const commands: Command[] = [];
  const real = spawnRunner((line) => stderr.push(line));
  const code = await runInitWith([], env, {
    stdout: (line) => stdout.push(line),
    stderr: (line) => stderr.push(line),
    runCommand: (command) => {
      commands.push(command);
      return real(command);
    },
    ...deps,
  });
  const events = stdout.map((l) => JSON.parse(l) as Record<string, unknown>);
  const sinkText = existsSync(sandbox.sinkFile) ? readFileSync(sandbox.sinkFile, "utf8") : "";
  const sinkEvents = sinkText
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => (JSON.parse(l) as { event: Record<string, unknown> }).event);
  return { code, stdout, stderr, events, summary: events.map(summarize), sinkEvents, sinkText, commands };
}

function git(args: string[], cwd: string): void {
  const r = spawnSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_AUTHOR_NAME: "fixture",
      GIT_AUTHOR_EMAIL: "fixture@example.test",
      GIT_COMMITTER_NAME: "fixture",
      GIT_COMMITTER_EMAIL: "fixture@example.test",
    },
  });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
}

/**
 * A bare repo `<root>/<name>.git` whose one commit on `main` is whatever `build` puts in the work
 * tree, symlinks included (createBareRepo in test/fakes/git-http.ts takes file contents only).
 */
export function createBareRepoFrom(root: string, name: string, build: (workTree: string) => void): string {
  const bare = join(root, `${name}.git`);
  mkdirSync(dirname(bare), { recursive: true });
  git(["init", "--quiet", "--bare", "--initial-branch=main", bare], root);
  const work = mkdtempSync(join(tmpdir(), "git-fixture-"));
  try {
    git(["init", "--quiet", "--initial-branch=main"], work);
    build(work);
    git(["add", "--all"], work);
    git(["commit", "--quiet", "-m", "initial"], work);
    git(["push", "--quiet", bare, "main:main"], work);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return bare;
}
