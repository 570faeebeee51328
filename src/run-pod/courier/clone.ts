/**
 * Which workspace clone the courier delivers (crds.md §3.6 `pullRequest.repo`, OQ-47).
 *
 * With AGENT_REPOS (the spec's resources.repos) the candidates are the declared destinations
 * (`path`, else `<workspace>/<name>`) and the URL is the declared one, never the clone's config,
 * which the agent could have rewritten. Without it (a definition with no resources.repos) the
 * candidates are the git work trees found under the workspace, at most
 * three levels deep, not descending into a repository once found.
 *
 * The choice: `repo` names a candidate (by declared name or directory name); else the candidate
 * whose URL is TARGET_REPO; else the first declared repo, or the only clone found. Several clones
 * and nothing to choose by is a failure naming them.
 */
import { readdirSync, statSync } from "node:fs";
import { basename, isAbsolute, join, relative, resolve } from "node:path";
import { fullName, type GitHubRepo, repoOfRemote } from "./github-repo.js";
import type { RepoSpec } from "./settings.js";

export interface Candidate {
  /** Absolute work tree. */
  dir: string;
  /** The declared name, else the directory's name. */
  name: string;
  /** The declared URL; undefined = read the clone's origin. */
  url?: string;
}

export type Choice = { ok: true; clone: Candidate } | { ok: false; reason: string };

const MAX_DEPTH = 3;
const MAX_DIRS = 5000;

function isGitWorkTree(dir: string): boolean {
  try {
    statSync(join(dir, ".git"));
    return true;
  } catch {
    return false;
  }
}

/** Git work trees under `workspace` (the workspace itself included), sorted by path. */
export function scanClones(workspace: string): Candidate[] {
  const found: Candidate[] = [];
  let visited = 0;
  const walk = (dir: string, depth: number) => {
    if (visited++ > MAX_DIRS) return;
    if (isGitWorkTree(dir)) {
      found.push({ dir, name: basename(dir) });
      return;
    }
    if (depth >= MAX_DEPTH) return;
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      // Symlinks are not followed: a clone is a real directory the init created.
      if (e.isDirectory() && e.name !== "node_modules") walk(join(dir, e.name), depth + 1);
    }
  };
  walk(resolve(workspace), 0);
  return found;
}

/** The declared clones (runtime.md §7.2 destinations) that exist as work trees. */
export function declaredClones(workspace: string, repos: readonly RepoSpec[]): Candidate[] {
  return repos
    .map((r) => {
      const dir = r.path
        ? isAbsolute(r.path)
          ? resolve(r.path)
          : resolve(workspace, r.path)
        : resolve(workspace, r.name);
      return { dir, name: r.name, url: r.url };
    })
    .filter((c) => {
      const rel = relative(resolve(workspace), c.dir);
      return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) && isGitWorkTree(c.dir);
    });
}

export interface ChooseInput {
  candidates: Candidate[];
  /** Candidates came from AGENT_REPOS (their order is the spec's). */
  declared: boolean;
  workspace: string;
  /** delivery.pullRequest.repo, "" when unset. */
  repo: string;
  target: GitHubRepo | undefined;
  serverUrl: string;
  /** The clone's origin URL when the candidate declares none. */
  originOf(dir: string): Promise<string | undefined>;
}

export async function chooseClone(input: ChooseInput): Promise<Choice> {
  const { candidates, workspace } = input;
  if (candidates.length === 0) {
    return {
      ok: false,
      reason: input.declared
        ? `none of the declared repositories is a git clone under ${workspace}`
        : `no git clone found under ${workspace}`,
    };
  }
  if (input.repo !== "") {
    const named = candidates.find((c) => c.name === input.repo);
    if (named) return { ok: true, clone: named };
    return {
      ok: false,
      reason: `delivery.pullRequest.repo ${input.repo} is not a clone under ${workspace} (found: ${names(candidates)})`,
    };
  }
  if (input.target) {
    const want = fullName(input.target).toLowerCase();
    for (const c of candidates) {
      const url = c.url ?? (await input.originOf(c.dir));
      if (url === undefined) continue;
      const repo = repoOfRemote(url, input.serverUrl);
      if ("owner" in repo && fullName(repo).toLowerCase() === want) return { ok: true, clone: c };
    }
  }
  const first = candidates[0] as Candidate;
  if (input.declared || candidates.length === 1) return { ok: true, clone: first };
  return {
    ok: false,
    reason: `several clones under ${workspace} (${names(candidates)}) and none is the target repository; set delivery.pullRequest.repo`,
  };
}

const names = (cs: Candidate[]) => cs.map((c) => c.name).join(", ");
