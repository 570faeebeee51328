import { lstat } from "node:fs/promises";
import { dirname } from "node:path";
import { lifecycleEvent } from "../../sinks/lifecycle.js";
import {
  DRAIN_TIMEOUT_MS,
  type LineWriter,
  RunEmitter,
  type RunEmitterOptions,
  stderrWriter,
  stdoutWriter,
} from "../common/emitter.js";
import { runPodLogger } from "../common/log.js";
import type { Env } from "../common/run-env.js";
import { lchownTree } from "./chown.js";
import { type CommandRunner, displayCommand, findOnPath, spawnRunner } from "./commands.js";
import { errnoOf, type InitContext, type InitFailure, type ToolResult } from "./context.js";
import type { DownloadOptions } from "./download.js";
import { buildInitPlan, type InitPlan, requiredExecutables, type ToolPlan } from "./plan.js";
import { packagesFor, pickPackageManager } from "./prerequisites.js";
import { redactUrlCredentials } from "./redact.js";
import { restoreConversation } from "./tools/conversation.js";
import { fetchFiles } from "./tools/files.js";
import { cloneRepos } from "./tools/git.js";
import { stageSkills } from "./tools/skills.js";
import { installSupervisor } from "./tools/supervisor.js";

/** Seams for tests; production uses the defaults. */
export interface InitDeps {
  stdout?: LineWriter;
  stderr?: LineWriter;
  /** Runs external steps (git, the package manager); default: spawn. */
  runCommand?: CommandRunner;
  /** Directory of the running executable (the supervisor is copied from there). */
  execDir?: string;
  /** Whether to re-own HOME and the workspace; default: running as uid 0. */
  isRoot?: boolean;
  download?: Partial<DownloadOptions>;
  dispatcher?: RunEmitterOptions["dispatcher"];
  drainTimeoutMs?: number;
}

export async function runInit(argv: string[], env: Env): Promise<number> {
  return runInitWith(argv, env, {});
}

function ignoreSigpipe(): void {
  // A closed log reader must not kill the init (docs/run-pod.md#the-init); Node ignores SIGPIPE already,
  // a listener makes that explicit. Registered once however often the init runs in one process.
  if (process.listenerCount("SIGPIPE") === 0) process.on("SIGPIPE", () => undefined);
}

/** The init with injectable I/O. `argv` is accepted for the dispatcher's sake; the init takes no arguments. */
export async function runInitWith(_argv: string[], env: Env, deps: InitDeps): Promise<number> {
  ignoreSigpipe();
  const stderr = deps.stderr ?? stderrWriter;
  // Tracks whether the sinks logged after the failure cause, which would then no longer be last.
  let sinkLoggedSinceCause = false;
  const sinkLog = runPodLogger("sinks", (line) => {
    sinkLoggedSinceCause = true;
    stderr(line);
  });

  const plan = buildInitPlan(env, { execDir: deps.execDir ?? dirname(process.execPath) });
  const emitter = new RunEmitter({
    env,
    vendor: plan.vendor,
    stdout: deps.stdout ?? stdoutWriter,
    log: sinkLog,
    ...(deps.dispatcher !== undefined ? { dispatcher: deps.dispatcher } : {}),
  });
  const ctx: InitContext = {
    env,
    plan,
    log: (line) => stderr(`[init] ${redactUrlCredentials(line)}`),
    run: deps.runCommand ?? spawnRunner(stderr),
    download: deps.download ?? {},
  };
  const drainMs = deps.drainTimeoutMs ?? DRAIN_TIMEOUT_MS;

  emitter.event(lifecycleEvent("init", "started"));
  let failure: InitFailure | undefined;
  try {
    failure = await runPlan(plan, ctx, emitter, deps.isRoot ?? process.getuid?.() === 0);
  } catch (err) {
    failure = {
      exitCode: 1,
      exit: 1,
      message: `unexpected error: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (failure === undefined) {
    emitter.event(lifecycleEvent("init", "succeeded"));
    ctx.log("succeeded");
    await emitter.drain(drainMs);
    return 0;
  }
  emitter.event(
    lifecycleEvent("init", "failed", {
      ...(failure.tool !== undefined ? { tool: failure.tool } : {}),
      ...(failure.reason !== undefined ? { reason: failure.reason } : {}),
      ...(failure.exitCode !== undefined ? { exitCode: failure.exitCode } : {}),
    }),
  );
  const cause = `[init] ${redactUrlCredentials(failure.message)}`;
  stderr(cause);
  sinkLoggedSinceCause = false;
  await emitter.drain(drainMs);
  if (sinkLoggedSinceCause) stderr(cause);
  return failure.exit;
}

async function runPlan(
  plan: InitPlan,
  ctx: InitContext,
  emitter: RunEmitter,
  reown: boolean,
): Promise<InitFailure | undefined> {
  for (const notice of plan.notices) ctx.log(notice);

  const prerequisites = await installPrerequisites(plan, ctx, emitter);
  if (prerequisites !== undefined) return prerequisites;

  for (const tool of plan.tools) {
    emitter.event(lifecycleEvent("init", "running", { tool: tool.tool }));
    const result = await runTool(tool, ctx);
    if (result !== undefined) return result;
  }

  if (reown) {
    for (const root of [plan.home, plan.workspace]) {
      try {
        if (!(await exists(root))) continue;
        await lchownTree(root);
      } catch (err) {
        return { reason: "chown", exit: 2, message: `chown: ${errnoOf(err)}` };
      }
    }
  }
  return undefined;
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

function runTool(tool: ToolPlan, ctx: InitContext): Promise<ToolResult> {
  switch (tool.tool) {
    case "supervisor":
      return installSupervisor(tool, ctx);
    case "git":
      return cloneRepos(tool, ctx);
    case "files":
      return fetchFiles(tool, ctx);
    case "skills":
      return stageSkills(tool, ctx);
    case "conversation":
      return restoreConversation(tool, ctx);
  }
}

async function installPrerequisites(
  plan: InitPlan,
  ctx: InitContext,
  emitter: RunEmitter,
): Promise<InitFailure | undefined> {
  const pathVar = ctx.env.PATH;
  const needed = requiredExecutables(plan);
  const missingNow = async () => {
    const missing: string[] = [];
    for (const exe of needed) if ((await findOnPath(exe, pathVar)) === undefined) missing.push(exe);
    return missing;
  };
  const missing = await missingNow();
  if (missing.length === 0) return undefined;

  const present = new Set<string>();
  for (const bin of ["apt-get", "dnf", "apk"])
    if ((await findOnPath(bin, pathVar)) !== undefined) present.add(bin);
  const pm = pickPackageManager((bin) => present.has(bin));
  if (pm === undefined) {
    return {
      reason: "no-package-manager",
      exit: 2,
      message: `prerequisites: ${missing.join(", ")} missing and no package manager (apt-get, dnf, apk) on PATH`,
    };
  }
  emitter.event(lifecycleEvent("init", "installing", { tool: pm.tool }));
  const packages = packagesFor(missing);
  ctx.log(`prerequisites: installing ${packages.join(" ")} for ${missing.join(", ")} with ${pm.binary}`);
  for (const command of pm.commands(packages, ctx.env)) {
    ctx.log(`prerequisites: $ ${displayCommand(command.argv)}`);
    const code = await ctx.run(command);
    if (code !== 0) {
      return {
        tool: pm.tool,
        reason: "install",
        exitCode: code,
        exit: code,
        message: `prerequisites: ${displayCommand(command.argv)} exited with code ${code}`,
      };
    }
  }
  const stillMissing = await missingNow();
  if (stillMissing.length > 0) {
    return {
      reason: "prerequisites",
      exit: 2,
      message: `prerequisites: ${stillMissing.join(", ")} still missing after installing with ${pm.binary}`,
    };
  }
  return undefined;
}
