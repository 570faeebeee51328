/**
 * One delivery (runtime.md §11, OQ-47, OQ-49), after the agent succeeded: commit the delivered
 * clone's changes, push HEAD to the branch of the target repository, open (or reuse) the pull
 * request. Returns the delivery event to report; never throws for an expected failure.
 *
 * The forge is only ever talked to from a bare repository the courier creates in a temp
 * directory, borrowing the clone's objects through `objects/info/alternates`: that repository's
 * config is the courier's, so the agent's edits to the clone's `.git/config` (credential helpers,
 * `url.*.insteadOf`, hooks) never meet the token. The clone itself is only staged and committed,
 * by git processes that do not have the token in their environment.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Candidate, chooseClone, declaredClones, scanClones } from "./clone.js";
import { gitEnv, gitMessage, type ProcessResult, type RunProcess, redact } from "./git.js";
import { fullName, type GitHubRepo, parseOwnerName, pushUrl, repoOfRemote } from "./github-repo.js";
import { ensurePullRequest, type Fetch } from "./pulls.js";
import { type CourierSettings, defaultBody } from "./settings.js";

export type DeliveryEvent =
  | { kind: "delivery"; status: "succeeded"; url: string; repo: string; branch: string }
  | { kind: "delivery"; status: "skipped"; reason: string; repo?: string; branch?: string }
  | { kind: "delivery"; status: "failed"; reason: string; repo?: string; branch?: string };

export interface DeliverDeps {
  run: RunProcess;
  /** The courier's environment (PATH and HOME for git). */
  env: Readonly<Record<string, string | undefined>>;
  /** A progress line on stderr; never given the token. */
  log: (line: string) => void;
  fetch?: Fetch;
  /** Per git command, default 120 s. */
  gitTimeoutMs?: number;
  /** Where the push repository is made, default the OS temp dir. */
  tmpDir?: string;
}

const DEFAULT_GIT_TIMEOUT_MS = 120_000;

class DeliveryFailure extends Error {}

export async function deliver(s: CourierSettings, deps: DeliverDeps): Promise<DeliveryEvent> {
  const token = s.token;
  const where: { repo?: string; branch?: string } = {};
  try {
    return await deliverSteps(s, deps, where);
  } catch (err) {
    const reason = err instanceof DeliveryFailure ? err.message : `courier error: ${(err as Error).message}`;
    return { kind: "delivery", status: "failed", reason: redact(reason, token), ...where };
  }
}

async function deliverSteps(
  s: CourierSettings,
  deps: DeliverDeps,
  where: { repo?: string; branch?: string },
): Promise<DeliveryEvent> {
  const git = gitRunner(s, deps);
  if (s.token === "") throw new DeliveryFailure("DELIVERY_TOKEN is empty");
  if (s.branch === "") throw new DeliveryFailure("BRANCH_NAME is empty");
  where.branch = s.branch;

  let target: GitHubRepo | undefined;
  if (s.targetRepo !== "") {
    target = parseOwnerName(s.targetRepo);
    if (!target) throw new DeliveryFailure(`TARGET_REPO ${JSON.stringify(s.targetRepo)} is not owner/name`);
  }
  const declared = s.repos !== undefined;
  const choice = await chooseClone({
    candidates: declared ? declaredClones(s.workspaceDir, s.repos ?? []) : scanClones(s.workspaceDir),
    declared,
    workspace: s.workspaceDir,
    repo: s.delivery.repo,
    target,
    serverUrl: s.serverUrl,
    originOf: (dir) => originOf(git, dir),
  });
  if (!choice.ok) throw new DeliveryFailure(choice.reason);
  const clone = choice.clone;
  if (!target) target = await targetFromOrigin(git, clone, s.serverUrl);
  const repo = fullName(target);
  where.repo = repo;
  deps.log(`delivering ${clone.dir} to ${repo} branch ${s.branch}`);

  const head = await commitChanges(git, clone.dir, s.delivery.title, deps.log);
  if (head === undefined)
    return { kind: "delivery", status: "skipped", reason: "no-changes", repo, branch: s.branch };
  const objects = resolve(
    clone.dir,
    (await git.must(clone.dir, ["rev-parse", "--git-path", "objects"], "reading the clone")).trim(),
  );
  const upstream = await upstreamBranch(git, clone.dir);

  const remote = pushUrl(s.serverUrl, target);
  const pushRepo = mkdtempSync(join(deps.tmpDir ?? tmpdir(), "ai-agent-courier-"));
  try {
    await git.must(pushRepo, ["init", "-q", "--bare", pushRepo], "preparing the push repository");
    writeFileSync(join(pushRepo, "objects", "info", "alternates"), `${objects}\n`);
    // A ref on the commit lets the base fetch negotiate with it instead of downloading history.
    await git.must(pushRepo, ["update-ref", "refs/courier/head", head], "preparing the push repository");

    let base = s.delivery.base || upstream;
    if (!base) {
      const r = await git.forge(pushRepo, ["ls-remote", "--symref", remote, "HEAD"]);
      base = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(r.stdout)?.[1] ?? "";
      if (r.code !== 0 || !base) {
        throw new DeliveryFailure(
          `finding the default branch of ${repo} failed: ${r.code !== 0 ? gitMessage(r.stderr, s.token) : "the remote has no HEAD branch"}`,
        );
      }
    }
    if (base === s.branch) {
      throw new DeliveryFailure(`branch ${s.branch} is the pull request's base; refusing to push to it`);
    }
    const fetched = await git.forge(pushRepo, [
      "fetch",
      "-q",
      "--no-tags",
      remote,
      `+refs/heads/${base}:refs/courier/base`,
    ]);
    if (fetched.code !== 0) {
      throw new DeliveryFailure(
        `fetching base branch ${base} of ${repo} failed: ${gitMessage(fetched.stderr, s.token)}`,
      );
    }
    const ahead = await git.must(
      pushRepo,
      ["rev-list", "--count", `refs/courier/base..${head}`],
      "comparing with the base",
    );
    if (Number(ahead.trim()) === 0) {
      deps.log(`nothing to deliver: HEAD has no commits ahead of ${base}`);
      return { kind: "delivery", status: "skipped", reason: "no-changes", repo, branch: s.branch };
    }
    // The branch is the run's: a later run on the same branch replaces it (its PR is reused).
    const pushed = await git.forge(pushRepo, [
      "push",
      "-q",
      "--force",
      remote,
      `${head}:refs/heads/${s.branch}`,
    ]);
    if (pushed.code !== 0) {
      throw new DeliveryFailure(
        `push to ${repo} branch ${s.branch} failed: ${gitMessage(pushed.stderr, s.token)}`,
      );
    }
    deps.log(`pushed ${head} to ${repo} branch ${s.branch}`);

    const pr = await ensurePullRequest({
      apiUrl: s.apiUrl,
      token: s.token,
      repo: target,
      branch: s.branch,
      base,
      title: s.delivery.title,
      body: s.delivery.body || defaultBody(s),
      draft: s.delivery.draft,
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
    });
    if (!pr.ok) throw new DeliveryFailure(pr.reason);
    deps.log(`${pr.reused ? "reused open" : "opened"} pull request #${pr.number}`);
    return { kind: "delivery", status: "succeeded", url: pr.url, repo, branch: s.branch };
  } finally {
    rmSync(pushRepo, { recursive: true, force: true });
  }
}

interface GitRunner {
  /** A git command in the (untrusted) clone or the push repository, without the token. */
  run(cwd: string, args: string[], config?: ReadonlyArray<readonly [string, string]>): Promise<ProcessResult>;
  /** Like run, but a non-zero exit is a delivery failure naming `step`; returns stdout. */
  must(
    cwd: string,
    args: string[],
    step: string,
    config?: ReadonlyArray<readonly [string, string]>,
  ): Promise<string>;
  /** A git command in the push repository that talks to the forge, with the token. */
  forge(cwd: string, args: string[]): Promise<ProcessResult>;
}

function gitRunner(s: CourierSettings, deps: DeliverDeps): GitRunner {
  const timeoutMs = deps.gitTimeoutMs ?? DEFAULT_GIT_TIMEOUT_MS;
  const runner: GitRunner = {
    run: (cwd, args, config) =>
      deps.run("git", args, { cwd, env: gitEnv({ env: deps.env, config }), timeoutMs }),
    async must(cwd, args, step, config) {
      const r = await runner.run(cwd, args, config);
      if (r.code !== 0)
        throw new DeliveryFailure(`${step} failed: git ${args[0]}: ${gitMessage(r.stderr, s.token)}`);
      return r.stdout;
    },
    forge: (cwd, args) =>
      deps.run("git", args, {
        cwd,
        // No alternate-refs command: git would otherwise run for-each-ref in the clone's git dir.
        env: gitEnv({ env: deps.env, token: s.token, config: [["core.alternateRefsCommand", "true"]] }),
        timeoutMs,
      }),
  };
  return runner;
}

async function originOf(git: GitRunner, dir: string): Promise<string | undefined> {
  const r = await git.run(dir, ["config", "--get", "remote.origin.url"]);
  return r.code === 0 && r.stdout.trim() !== "" ? r.stdout.trim() : undefined;
}

async function targetFromOrigin(git: GitRunner, clone: Candidate, serverUrl: string): Promise<GitHubRepo> {
  const url = clone.url ?? (await originOf(git, clone.dir));
  if (url === undefined) {
    throw new DeliveryFailure(`TARGET_REPO is empty and the clone ${clone.dir} has no origin remote`);
  }
  const repo = repoOfRemote(url, serverUrl);
  if ("problem" in repo) throw new DeliveryFailure(`TARGET_REPO is empty and ${repo.problem}`);
  return repo;
}

/**
 * Stages everything and commits when the index differs from HEAD, with plumbing (write-tree,
 * commit-tree, update-ref) so no porcelain config of the clone applies. Content filters the
 * clone's config names are switched off: their commands are the agent's. Returns the commit to
 * deliver, or undefined when the clone has no commit at all.
 */
async function commitChanges(
  git: GitRunner,
  dir: string,
  message: string,
  log: (line: string) => void,
): Promise<string | undefined> {
  const noFilters = await filterOverrides(git, dir);
  await git.must(dir, ["add", "--all"], "staging the changes", noFilters);
  const tree = (await git.must(dir, ["write-tree"], "staging the changes", noFilters)).trim();
  const headRes = await git.run(dir, ["rev-parse", "--verify", "-q", "HEAD^{commit}"]);
  const head = headRes.code === 0 ? headRes.stdout.trim() : undefined;
  const headTree = head
    ? (await git.must(dir, ["rev-parse", `${head}^{tree}`], "reading HEAD")).trim()
    : undefined;
  if (tree === headTree) return head;
  if (!head && tree === EMPTY_TREE) return undefined;
  const commit = (
    await git.must(
      dir,
      ["commit-tree", "--no-gpg-sign", tree, ...(head ? ["-p", head] : []), "-m", message],
      "committing",
    )
  ).trim();
  await git.must(
    dir,
    ["update-ref", "-m", "ai-agent-courier: delivery commit", "HEAD", commit],
    "committing",
  );
  log(`committed the workspace changes as ${commit}`);
  return commit;
}

const EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

async function filterOverrides(git: GitRunner, dir: string): Promise<Array<readonly [string, string]>> {
  const r = await git.run(dir, ["config", "--name-only", "--get-regexp", "^filter\\."]);
  const drivers = new Set(
    r.stdout
      .split("\n")
      .map((k) => /^filter\.(.+)\.[^.]+$/.exec(k.trim())?.[1])
      .filter((d): d is string => d !== undefined),
  );
  return [...drivers].flatMap((d) => [
    [`filter.${d}.clean`, ""] as const,
    [`filter.${d}.smudge`, ""] as const,
    [`filter.${d}.process`, ""] as const,
    [`filter.${d}.required`, "false"] as const,
  ]);
}

/** The remote branch the clone's current branch tracks (the ref the init checked out), else "". */
async function upstreamBranch(git: GitRunner, dir: string): Promise<string> {
  const sym = await git.run(dir, ["symbolic-ref", "-q", "HEAD"]);
  const local = /^refs\/heads\/(.+)$/.exec(sym.stdout.trim())?.[1];
  if (sym.code !== 0 || !local) return "";
  const merge = await git.run(dir, ["config", "--get", `branch.${local}.merge`]);
  return /^refs\/heads\/(.+)$/.exec(merge.stdout.trim())?.[1] ?? "";
}
