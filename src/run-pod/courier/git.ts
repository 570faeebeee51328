/**
 * How the courier runs git. The clone was last touched by the agent, so nothing in it is trusted:
 * every git process runs in the courier's own repository (GIT_DIR, see clone-git-dir.ts), with a
 * minimal environment built here (never the courier's own, which holds DELIVERY_TOKEN), no global
 * or system config, HOME in the courier's temp directory, hardening config that outranks every
 * file, no transport but the forge's, and a PATH without the directories the agent could write
 * (HOME, the workspace): the run PATH starts with /agent/.local/bin, where an agent could
 * otherwise plant a `git` that the courier would run with the token.
 * Only the processes that talk to the forge get the token, as DELIVERY_TOKEN, which the
 * credential helper reads at use time: the token is never in argv, a config value or a log.
 */
import { spawn } from "node:child_process";
import { isAbsolute, resolve } from "node:path";

export interface ProcessResult {
  /** Exit status; -1 when the process could not be started or was killed by the timeout. */
  code: number;
  stdout: string;
  stderr: string;
}

export interface ProcessOptions {
  cwd?: string;
  env: Record<string, string>;
  timeoutMs: number;
}

/** Runs a program to completion; a test seam (argv spy) and the only place the courier spawns. */
export type RunProcess = (file: string, args: string[], options: ProcessOptions) => Promise<ProcessResult>;

export const runProcess: RunProcess = (file, args, options) =>
  new Promise((resolve) => {
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
      timeout: options.timeoutMs,
      killSignal: "SIGKILL",
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    let spawnError: Error | undefined;
    child.on("error", (e) => {
      spawnError = e;
    });
    child.on("close", (code, signal) => {
      const stderr = Buffer.concat(err).toString("utf8");
      resolve({
        code: code ?? -1,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: spawnError
          ? `${stderr}${spawnError.message}`
          : signal
            ? `${stderr}git killed by ${signal} after ${options.timeoutMs} ms`
            : stderr,
      });
    });
  });

/** The committer identity of every delivery (docs/run-pod.md#delivery). */
export const COMMIT_AUTHOR = { name: "ai-agent", email: "ai-agent@users.noreply.github.com" };

/**
 * A credential helper that answers GitHub's token convention from $DELIVERY_TOKEN at use time.
 * The script text holds the variable's name only.
 */
export const CREDENTIAL_HELPER =
  '!f() { test "$1" = get || exit 0; echo username=x-access-token; printf "password=%s\\n" "$DELIVERY_TOKEN"; }; f';

/**
 * Config every git process gets on top of the courier's own repository's (GIT_CONFIG_* outranks
 * every config file): no hooks, fsmonitor, signing or auto-gc; no ssh command, excludes or
 * attributes file from anywhere (the XDG defaults live under HOME, which the agent writes); no
 * commit-graph or multi-pack-index of the borrowed objects (the agent wrote those); an alternate's
 * refs are not listed by running git inside it (that git would read the clone's config); and no
 * transport at all unless GIT_ALLOW_PROTOCOL, which outranks `protocol.*`, names one.
 */
const HARDENING: ReadonlyArray<readonly [string, string]> = [
  ["core.hooksPath", "/dev/null"],
  ["core.fsmonitor", "false"],
  ["core.sshCommand", "false"],
  ["core.excludesFile", "/dev/null"],
  ["core.attributesFile", "/dev/null"],
  ["core.commitGraph", "false"],
  ["core.multiPackIndex", "false"],
  ["core.alternateRefsCommand", "true"],
  ["protocol.allow", "never"],
  ["credential.helper", ""],
  ["commit.gpgSign", "false"],
  ["gc.auto", "0"],
  ["maintenance.auto", "false"],
];

/** PATH for git when nothing trusted is left of the courier's (the agent image's system dirs). */
export const FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin";

/**
 * The courier's PATH without entries the agent could have written to: relative ones and those
 * inside HOME (the shared `agent` volume, `/agent/.local/bin` first on the run PATH) or the
 * workspace. The courier mounts /agent read-only, but a program the agent put there still runs.
 */
export function trustedPath(env: Readonly<Record<string, string | undefined>>): string {
  const agentWritable = [env.HOME || "/agent", env.WORKSPACE_DIR || "/workspace"].map((d) => resolve(d));
  const inside = (dir: string, root: string) =>
    dir === root || dir.startsWith(root === "/" ? "/" : `${root}/`);
  const kept = (env.PATH ?? "")
    .split(":")
    .filter((e) => e !== "" && isAbsolute(e))
    .filter((e) => !agentWritable.some((root) => inside(resolve(e), root)));
  return kept.length > 0 ? [...new Set(kept)].join(":") : FALLBACK_PATH;
}

/** The egress proxy variables a forge call passes on from the courier's env. */
const FORGE_PROXY_VARIABLES = [
  "https_proxy",
  "HTTPS_PROXY",
  "http_proxy",
  "HTTP_PROXY",
  "no_proxy",
  "NO_PROXY",
];

export interface GitEnvOptions {
  /** The courier's environment: only PATH (see trustedPath) and, for the forge, the proxy variables. */
  env: Readonly<Record<string, string | undefined>>;
  /** HOME for git: a directory the courier made, never the agent's HOME. */
  home: string;
  /** The courier's own repository (GIT_DIR); never the clone's `.git`. */
  gitDir: string;
  /** The work tree to stage (the clone) and the index to stage into, for the staging steps. */
  workTree?: string;
  indexFile?: string;
  /** Extra config entries, after the hardening (later entries win for single-valued keys). */
  config?: ReadonlyArray<readonly [string, string]>;
  /** Talk to the forge: the token (as DELIVERY_TOKEN, through the helper) and the one protocol allowed. */
  forge?: { token: string; protocol: string };
}

export function gitEnv(options: GitEnvOptions): Record<string, string> {
  const config: Array<readonly [string, string]> = [...HARDENING, ...(options.config ?? [])];
  if (options.forge) config.push(["credential.helper", CREDENTIAL_HELPER]);
  const env: Record<string, string> = {
    PATH: trustedPath(options.env),
    HOME: options.home,
    LANG: "C",
    LC_ALL: "C",
    GIT_DIR: options.gitDir,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    // No protocol names the empty string: every transport is refused, a lazy fetch's included.
    GIT_ALLOW_PROTOCOL: options.forge?.protocol ?? "",
    // Git 2.45+ refuses lazy fetches outright; older ones are held by the protocol list above.
    GIT_NO_LAZY_FETCH: "1",
    GIT_NO_REPLACE_OBJECTS: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_AUTHOR_NAME: COMMIT_AUTHOR.name,
    GIT_AUTHOR_EMAIL: COMMIT_AUTHOR.email,
    GIT_COMMITTER_NAME: COMMIT_AUTHOR.name,
    GIT_COMMITTER_EMAIL: COMMIT_AUTHOR.email,
    GIT_CONFIG_COUNT: String(config.length),
  };
  if (options.workTree !== undefined) env.GIT_WORK_TREE = options.workTree;
  if (options.indexFile !== undefined) env.GIT_INDEX_FILE = options.indexFile;
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  if (options.forge) {
    env.DELIVERY_TOKEN = options.forge.token;
    // The way out when the pod's egress goes through the gateway's proxy (docs/gateway.md#egress):
    // git's transport (curl) reads these, set by the controller, never by the agent.
    for (const name of FORGE_PROXY_VARIABLES) {
      const value = options.env[name];
      if (value) env[name] = value;
    }
  }
  return env;
}

/**
 * Git's complaint in one line for a delivery reason: the `fatal:`/`error:`/`remote:`/rejection
 * lines of stderr (else its last line), credentials in URLs and the token itself removed.
 */
export function gitMessage(stderr: string, token: string): string {
  const lines = stderr
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  const telling = lines.filter((l) => /^(fatal:|error:|remote:|!|\[remote rejected\]|\[rejected\])/.test(l));
  const picked = (telling.length > 0 ? telling : lines.slice(-1)).join("; ") || "no message from git";
  return redact(picked, token).slice(0, 500);
}

/** Removes the token and any URL userinfo from text that may be logged or put in an event. */
export function redact(text: string, token: string): string {
  let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s']*@/gi, "$1");
  if (token !== "") out = out.split(token).join("<redacted>");
  return out;
}
