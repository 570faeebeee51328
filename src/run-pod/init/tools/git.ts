/**
 * Tool `git` (docs/run-pod.md#the-init, docs/decisions.md D-31): each repo is cloned into its destination, which must
 * lie strictly below the workspace, also after resolving symlinks an earlier clone may carry.
 *
 * A token never travels in argv: the credential helper is a tiny shell function that prints
 * `password=$<token_secret>`, expanded by the shell git starts at the moment git asks. The same
 * helper is written into the clone's .git/config (unexpanded), so later fetches and pushes work.
 */
import { rm } from "node:fs/promises";
import { displayCommand } from "../commands.js";
import { realAncestorProblem } from "../confine.js";
import { errnoOf, type InitContext, type InitFailure, stepFailure, type ToolResult } from "../context.js";
import type { RepoPlan, ToolPlan } from "../plan.js";

/** The credential helper for a token held in env var `tokenEnv` (a valid env name, so safe to splice). */
export function credentialHelper(tokenEnv: string): string {
  return `!f() { test "$1" = get || return 0; printf 'username=x-access-token\\npassword=%s\\n' "$${tokenEnv}"; }; f`;
}

/** `git clone` argv: the empty helper first drops inherited helpers, so none of them stores the token. */
export function cloneArgv(repo: RepoPlan): string[] {
  const helper =
    repo.tokenEnv !== undefined
      ? ["-c", "credential.helper=", "-c", `credential.helper=${credentialHelper(repo.tokenEnv)}`]
      : [];
  return ["git", "clone", ...helper, "--", repo.cloneUrl, repo.dest];
}

/** `git checkout` argv; a ref that looks like an option goes after `--`. */
export function checkoutArgv(repo: RepoPlan & { ref: string }): string[] {
  return ["git", "-C", repo.dest, "checkout", ...(repo.ref.startsWith("-") ? ["--"] : []), repo.ref];
}

function pathFailure(repo: RepoPlan, cause: string): InitFailure {
  return { tool: "git", reason: "path", exit: 1, message: `git: repo ${repo.name}: destination ${cause}` };
}

export async function cloneRepos(
  tool: Extract<ToolPlan, { tool: "git" }>,
  ctx: InitContext,
): Promise<ToolResult> {
  for (const line of tool.skipped) ctx.log(`git: ${line}`);
  // A clone must never wait for a password prompt nobody can answer.
  const env = { ...ctx.env, GIT_TERMINAL_PROMPT: "0" };
  for (const repo of tool.repos) {
    if (repo.destProblem !== undefined) return pathFailure(repo, repo.destProblem);
    const outside = await realAncestorProblem(ctx.plan.workspace, repo.dest);
    if (outside !== undefined) return pathFailure(repo, outside);

    ctx.log(`git: $ rm -rf ${repo.dest}`);
    try {
      await rm(repo.dest, { recursive: true, force: true });
    } catch (err) {
      return stepFailure("git", 1, `git: repo ${repo.name}: cannot remove ${repo.dest}: ${errnoOf(err)}`);
    }
    const clone = cloneArgv(repo);
    ctx.log(`git: $ ${displayCommand(clone)}`);
    const cloned = await ctx.run({ argv: clone, env });
    if (cloned !== 0) {
      return stepFailure(
        "git",
        cloned,
        `git: repo ${repo.name}: git clone into ${repo.dest} exited with code ${cloned}`,
      );
    }
    if (repo.ref !== undefined) {
      const checkout = checkoutArgv({ ...repo, ref: repo.ref });
      ctx.log(`git: $ ${displayCommand(checkout)}`);
      const checkedOut = await ctx.run({ argv: checkout, env });
      if (checkedOut !== 0) {
        return stepFailure(
          "git",
          checkedOut,
          `git: repo ${repo.name}: git checkout ${repo.ref} in ${repo.dest} exited with code ${checkedOut}`,
        );
      }
    }
  }
  return undefined;
}
