/**
 * One delivery (docs/run-pod.md#delivery, docs/decisions.md D-47, D-49), after the agent succeeded: commit the delivered
 * clone's changes, push HEAD to the branch of the target repository, open (or reuse) the pull
 * request. Returns the delivery event to report; never throws for an expected failure.
 *
 * No git process ever runs in the clone's repository: its `.git` is the agent's (and whatever
 * `spec.files` wrote there), so its config could name commands (a promisor remote's
 * `core.sshCommand` reached by a lazy fetch, filters, hooks) or another work tree. The courier
 * makes its own bare repository in a temp directory, borrows the clone's objects through
 * `objects/info/alternates`, reads HEAD, the index and `info/exclude` as data
 * (clone-git-dir.ts), stages the clone's work tree into its own index, commits there and pushes
 * from there. Only the processes that talk to the forge get the token.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Candidate, chooseClone, declaredClones } from "./clone.js";
import { CloneGitDirError, type CloneHead, readCloneHead, readInside } from "./clone-git-dir.js";
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
  if (s.token === "") throw new DeliveryFailure("DELIVERY_TOKEN is empty");
  if (s.branch === "") throw new DeliveryFailure("BRANCH_NAME is empty");
  where.branch = s.branch;

  let target: GitHubRepo | undefined;
  if (s.targetRepo !== "") {
    target = parseOwnerName(s.targetRepo);
    if (!target) throw new DeliveryFailure(`TARGET_REPO ${JSON.stringify(s.targetRepo)} is not owner/name`);
  }
  if (s.repos === undefined || s.repos.length === 0) {
    // Only a declared clone has a URL the agent did not write (docs/run-pod.md, Delivery).
    throw new DeliveryFailure("AGENT_REPOS declares no repository: delivery needs resources.repos");
  }
  const choice = chooseClone({
    candidates: declaredClones(s.workspaceDir, s.repos),
    workspace: s.workspaceDir,
    repo: s.delivery.repo,
    target,
    serverUrl: s.serverUrl,
  });
  if (!choice.ok) throw new DeliveryFailure(choice.reason);
  const clone = choice.clone;
  if (!target) target = targetOfDeclared(clone, s.serverUrl);
  const repo = fullName(target);
  where.repo = repo;
  deps.log(`delivering ${clone.dir} to ${repo} branch ${s.branch}`);

  const work = await mkdtemp(join(deps.tmpDir ?? tmpdir(), "ai-agent-courier-"));
  try {
    const head = await readHead(clone);
    const repoDir = join(work, "repo.git");
    const git = gitRunner(s, deps, work, repoDir);
    await git.must(work, ["init", "-q", "--bare", repoDir], "preparing the courier's repository");
    // Objects only: the clone's refs, config and hooks stay where they are, unread by git.
    await writeFile(join(repoDir, "objects", "info", "alternates"), `${join(head.gitDir, "objects")}\n`);
    if (head.commit !== undefined) {
      const found = await git.run(work, ["rev-parse", "--verify", "-q", `${head.commit}^{commit}`]);
      if (found.code !== 0) {
        throw new DeliveryFailure(
          `the clone ${clone.dir} is damaged: its HEAD names commit ${head.commit}, which is not in its objects`,
        );
      }
    }

    const message = s.agentUid ? `${s.delivery.title}\n\n${UID_TRAILER}: ${s.agentUid}` : s.delivery.title;
    const commit = await commitChanges(git, { work, repoDir, clone, head }, message, deps.log);
    if (commit === undefined)
      return { kind: "delivery", status: "skipped", reason: "no-changes", repo, branch: s.branch };
    // A ref on the commit lets the base fetch negotiate with it instead of downloading history.
    await git.must(work, ["update-ref", "refs/courier/head", commit], "preparing the push");

    const remote = pushUrl(s.serverUrl, target);
    const base = await baseBranch(git, work, remote, s, clone, repo);
    if (base === s.branch) {
      throw new DeliveryFailure(`branch ${s.branch} is the pull request's base; refusing to push to it`);
    }
    const fetched = await git.forge(work, [
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
      work,
      ["rev-list", "--count", `refs/courier/base..${commit}`],
      "comparing with the base",
    );
    if (Number(ahead.trim()) === 0) {
      deps.log(`nothing to deliver: HEAD has no commits ahead of ${base}`);
      return { kind: "delivery", status: "skipped", reason: "no-changes", repo, branch: s.branch };
    }
    // docs/security.md#deliveries: a branch is created, advanced (a fast-forward), or rewritten only
    // when this Agent created it; the lease makes the push fail should the branch move between our
    // look and our push.
    const lease = await leaseOf(git, work, remote, s, repo, commit);
    const pushed = await git.forge(work, [
      "push",
      "-q",
      `--force-with-lease=refs/heads/${s.branch}:${lease}`,
      remote,
      `${commit}:refs/heads/${s.branch}`,
    ]);
    if (pushed.code !== 0) {
      throw new DeliveryFailure(
        `push to ${repo} branch ${s.branch} failed: ${gitMessage(pushed.stderr, s.token)}`,
      );
    }
    deps.log(`pushed ${commit} to ${repo} branch ${s.branch}`);

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
    await rm(work, { recursive: true, force: true });
  }
}

/** The trailer the courier's commits carry: which Agent created the branch they are pushed to. */
export const UID_TRAILER = "Agent-UID";

/**
 * The commit the branch must still be at for the push (`--force-with-lease=<ref>:<expect>`): ""
 * (it must not exist) for a new branch; its tip when the delivery only advances it (the tip is an
 * ancestor of `commit`: a fast-forward, e.g. the user's branch the run cloned) or when this Agent
 * created it (the tip carries our Agent-UID trailer: a later delivery of the same run). Any other
 * existing branch (a release branch, another run's pull request) is never rewritten: the delivery
 * fails saying so.
 */
async function leaseOf(
  git: GitRunner,
  work: string,
  remote: string,
  s: CourierSettings,
  repo: string,
  commit: string,
): Promise<string> {
  const listed = await git.forge(work, ["ls-remote", "--heads", remote, `refs/heads/${s.branch}`]);
  if (listed.code !== 0) {
    throw new DeliveryFailure(
      `reading branch ${s.branch} of ${repo} failed: ${gitMessage(listed.stderr, s.token)}`,
    );
  }
  const tip = listed.stdout
    .split("\n")
    .map((line) => line.split("\t"))
    .find(([, ref]) => ref === `refs/heads/${s.branch}`)?.[0];
  if (tip === undefined || tip === "") return "";
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(tip)) {
    throw new DeliveryFailure(
      `branch ${s.branch} of ${repo}: the forge listed a tip that is not a commit id`,
    );
  }
  const refused = `branch ${s.branch} already exists in ${repo} and was not created by this Agent; refusing to overwrite it (the delivery is not a fast-forward of its tip; choose another spec.branch)`;
  const fetched = await git.forge(work, [
    "fetch",
    "-q",
    "--no-tags",
    remote,
    `+refs/heads/${s.branch}:refs/courier/existing`,
  ]);
  if (fetched.code !== 0) {
    throw new DeliveryFailure(
      `fetching branch ${s.branch} of ${repo} failed: ${gitMessage(fetched.stderr, s.token)}`,
    );
  }
  const ancestor = await git.run(work, ["merge-base", "--is-ancestor", tip, commit]);
  if (ancestor.code === 0) return tip;
  if (ancestor.code !== 1) {
    throw new DeliveryFailure(
      `comparing with branch ${s.branch} of ${repo} failed: git merge-base: ${gitMessage(ancestor.stderr, s.token)}`,
    );
  }
  if (s.agentUid === "") throw new DeliveryFailure(refused);
  const body = await git.must(work, ["cat-file", "commit", tip], "reading the branch's tip");
  const ours = body.split("\n").some((line) => line.trim() === `${UID_TRAILER}: ${s.agentUid}`);
  if (!ours) throw new DeliveryFailure(refused);
  return tip;
}

async function readHead(clone: Candidate): Promise<CloneHead> {
  try {
    return await readCloneHead(clone.dir);
  } catch (err) {
    if (err instanceof CloneGitDirError)
      throw new DeliveryFailure(`reading the clone failed: ${err.message}`);
    throw err;
  }
}

/** The repository a declared clone's URL names (the spec's URL, not the clone's config). */
function targetOfDeclared(clone: Candidate, serverUrl: string): GitHubRepo {
  const repo = repoOfRemote(clone.url, serverUrl);
  if ("problem" in repo) throw new DeliveryFailure(`TARGET_REPO is empty and ${repo.problem}`);
  return repo;
}

/**
 * The PR's base (docs/run-pod.md#delivery): `pullRequest.base`; else the declared repo's `ref` when the
 * target has a branch of that name; else the target's default branch. Asked of the forge, never
 * of the clone's config, which the agent could have rewritten.
 */
async function baseBranch(
  git: GitRunner,
  work: string,
  remote: string,
  s: CourierSettings,
  clone: Candidate,
  repo: string,
): Promise<string> {
  if (s.delivery.base) return s.delivery.base;
  const ref = clone.ref !== undefined && !clone.ref.startsWith("-") ? clone.ref : undefined;
  const r = await git.forge(work, [
    "ls-remote",
    "--symref",
    remote,
    "HEAD",
    ...(ref !== undefined ? [`refs/heads/${ref}`] : []),
  ]);
  if (r.code !== 0) {
    throw new DeliveryFailure(`finding the base branch of ${repo} failed: ${gitMessage(r.stderr, s.token)}`);
  }
  if (ref !== undefined && r.stdout.split("\n").some((l) => l.endsWith(`\trefs/heads/${ref}`))) return ref;
  const fallback = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(r.stdout)?.[1];
  if (!fallback)
    throw new DeliveryFailure(`finding the default branch of ${repo} failed: the remote has no HEAD branch`);
  return fallback;
}

interface StageOptions {
  workTree?: string;
  indexFile?: string;
}

interface GitRunner {
  /** A git command in the courier's repository, without the token. */
  run(cwd: string, args: string[], stage?: StageOptions): Promise<ProcessResult>;
  /** Like run, but a non-zero exit is a delivery failure naming `step`; returns stdout. */
  must(cwd: string, args: string[], step: string, stage?: StageOptions): Promise<string>;
  /** A git command in the courier's repository that talks to the forge, with the token. */
  forge(cwd: string, args: string[]): Promise<ProcessResult>;
}

function gitRunner(s: CourierSettings, deps: DeliverDeps, home: string, gitDir: string): GitRunner {
  const timeoutMs = deps.gitTimeoutMs ?? DEFAULT_GIT_TIMEOUT_MS;
  const protocol = new URL(s.serverUrl).protocol.replace(/:$/, "");
  const runner: GitRunner = {
    run: (cwd, args, stage) =>
      deps.run("git", args, { cwd, env: gitEnv({ env: deps.env, home, gitDir, ...stage }), timeoutMs }),
    async must(cwd, args, step, stage) {
      const r = await runner.run(cwd, args, stage);
      if (r.code !== 0)
        throw new DeliveryFailure(`${step} failed: git ${args[0]}: ${gitMessage(r.stderr, s.token)}`);
      return r.stdout;
    },
    forge: (cwd, args) =>
      deps.run("git", args, {
        cwd,
        env: gitEnv({ env: deps.env, home, gitDir, forge: { token: s.token, protocol } }),
        timeoutMs,
      }),
  };
  return runner;
}

/** The clone's index may be as big as its work tree has files; past this it is not copied. */
const MAX_INDEX_BYTES = 128 * 1024 * 1024;

interface Workspace {
  work: string;
  repoDir: string;
  clone: Candidate;
  head: CloneHead;
}

/**
 * Stages the clone's work tree into the courier's own index and commits when the tree differs
 * from HEAD, with plumbing (write-tree, commit-tree) in the courier's repository. The clone's
 * index is copied as a start (what the agent staged stays staged, unchanged files are not
 * re-read); when git cannot use it, staging starts from HEAD's tree. Returns the commit to
 * deliver, or undefined when the clone has no commit and nothing to commit.
 */
async function commitChanges(
  git: GitRunner,
  w: Workspace,
  message: string,
  log: (line: string) => void,
): Promise<string | undefined> {
  const index = join(w.work, "index");
  const stage: StageOptions = { workTree: w.clone.dir, indexFile: index };
  const exclude = await readInside(w.head.gitDir, "info/exclude", 1024 * 1024).catch(() => undefined);
  if (exclude !== undefined) await writeFile(join(w.repoDir, "info", "exclude"), exclude);
  const copied = await copyIndex(w.head.gitDir, index);
  let added = copied ? await git.run(w.clone.dir, ["add", "--all"], stage) : undefined;
  if (added?.code !== 0) {
    if (added) log(`the clone's index is not usable (${gitMessage(added.stderr, "")}); staging from HEAD`);
    await rm(index, { force: true });
    if (w.head.commit !== undefined) {
      await git.must(w.clone.dir, ["read-tree", w.head.commit], "staging the changes", stage);
    }
    added = await git.run(w.clone.dir, ["add", "--all"], stage);
    if (added.code !== 0) {
      throw new DeliveryFailure(`staging the changes failed: git add: ${gitMessage(added.stderr, "")}`);
    }
  }
  const tree = (await git.must(w.clone.dir, ["write-tree"], "staging the changes", stage)).trim();
  const head = w.head.commit;
  const headTree = head
    ? (await git.must(w.work, ["rev-parse", `${head}^{tree}`], "reading HEAD")).trim()
    : undefined;
  if (tree === headTree) return head;
  if (!head && tree === EMPTY_TREE) return undefined;
  const commit = (
    await git.must(
      w.work,
      ["commit-tree", "--no-gpg-sign", tree, ...(head ? ["-p", head] : []), "-m", message],
      "committing",
    )
  ).trim();
  log(`committed the workspace changes as ${commit}`);
  return commit;
}

/** Copies the clone's index for staging; false when there is none or it is not a plain file inside `.git`. */
async function copyIndex(gitDir: string, to: string): Promise<boolean> {
  try {
    const content = await readInside(gitDir, "index", MAX_INDEX_BYTES);
    if (content === undefined) return false;
    await writeFile(to, content);
    return true;
  } catch {
    return false;
  }
}

const EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
