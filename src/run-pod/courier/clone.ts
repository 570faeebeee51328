/**
 * Which workspace clone the courier delivers (docs/run-pod.md#delivery `pullRequest.repo`, docs/decisions.md D-47).
 *
 * The candidates are the declared repositories (AGENT_REPOS, the spec's resources.repos) at their
 * destinations (`path`, else `<workspace>/<name>`), with the declared URL and ref, never the
 * clone's config, which the agent could have rewritten. A definition with delivery and no
 * resources.repos never gets here: the controller refuses it at Pending.
 *
 * The choice: `repo` names a candidate (by declared name); else the candidate whose URL is
 * TARGET_REPO; else the first declared repo.
 */
import { lstatSync } from "node:fs";
import { isAbsolute, join, relative, resolve } from "node:path";
import { fullName, type GitHubRepo, repoOfRemote } from "./github-repo.js";
import type { RepoRef } from "./settings.js";

export interface Candidate {
  /** Absolute work tree. */
  dir: string;
  /** The declared name. */
  name: string;
  /** The declared URL. */
  url: string;
  /** The declared ref the init checked out, if any. */
  ref?: string;
}

export type Choice = { ok: true; clone: Candidate } | { ok: false; reason: string };

function isGitWorkTree(dir: string): boolean {
  try {
    return lstatSync(join(dir, ".git")).isDirectory();
  } catch {
    return false;
  }
}

/** The declared clones (docs/run-pod.md#the-init destinations) that exist as work trees. */
export function declaredClones(workspace: string, repos: readonly RepoRef[]): Candidate[] {
  return repos
    .map((r) => {
      const dir = r.path
        ? isAbsolute(r.path)
          ? resolve(r.path)
          : resolve(workspace, r.path)
        : resolve(workspace, r.name);
      return { dir, name: r.name, url: r.url, ...(r.ref !== undefined ? { ref: r.ref } : {}) };
    })
    .filter((c) => {
      const rel = relative(resolve(workspace), c.dir);
      return (
        rel !== "" &&
        !rel.startsWith("..") &&
        !isAbsolute(rel) &&
        !c.dir.includes("\n") &&
        isGitWorkTree(c.dir)
      );
    });
}

export interface ChooseInput {
  /** The declared clones, in the spec's order. */
  candidates: Candidate[];
  workspace: string;
  /** delivery.pullRequest.repo, "" when unset. */
  repo: string;
  target: GitHubRepo | undefined;
  serverUrl: string;
}

export function chooseClone(input: ChooseInput): Choice {
  const { candidates, workspace } = input;
  if (candidates.length === 0) {
    return { ok: false, reason: `none of the declared repositories is a git clone under ${workspace}` };
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
      const repo = repoOfRemote(c.url, input.serverUrl);
      if ("owner" in repo && fullName(repo).toLowerCase() === want) return { ok: true, clone: c };
    }
  }
  return { ok: true, clone: candidates[0] as Candidate };
}

const names = (cs: Candidate[]) => cs.map((c) => c.name).join(", ");
