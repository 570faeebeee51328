// @module-tag slow
/**
 * branchNameProblem against the real `git check-ref-format --branch`: for every name of the
 * table both must agree, so spec.branch accepts exactly what git accepts (docs/security.md#deliveries).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { branchNameProblem } from "./branch-name.js";

/** Outside any repository, so git never expands `@` or `@{-N}` against a current branch. */
const outside = mkdtempSync(`${tmpdir()}/branch-name-`);

function gitAccepts(name: string): boolean {
  const r = spawnSync("git", ["check-ref-format", "--branch", name], {
    cwd: outside,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", GIT_CEILING_DIRECTORIES: outside, HOME: outside },
  });
  return r.status === 0;
}

const accepted = [
  "feat/x",
  "fix/issue-128",
  "fix/#128",
  "feat/a+b",
  "agent/fix-1",
  "release",
  "main",
  "a/-x",
  "x@",
  "a@b",
  "@",
  "a/@",
  "é/ü",
  "a/HEAD",
  "head",
  "refs/heads/x",
  "x.lock.y",
  "v1.2.3",
  "a,b;c'd\"e",
  "under_score",
  "a/b/c/d",
  "x!",
  "a{b}",
  "a.b",
];

const refused = [
  "",
  "-x",
  "HEAD",
  "a b",
  "a\tb",
  "a\nb",
  "a\x7fb",
  "a~1",
  "a^",
  "a:b",
  "a?",
  "a*",
  "a[b",
  "a\\b",
  "a..b",
  "..",
  ".",
  "a.",
  ".a",
  "a/.b",
  "a/./b",
  "x/..",
  "a//b",
  "/a",
  "a/",
  "a.lock",
  "a/b.lock/c",
  "a/.lock",
  "a.lock.",
  "a@{b",
  "@{-1}",
  "@{u}",
];

describe("branchNameProblem agrees with git check-ref-format --branch", () => {
  it.each(accepted)("accepts %j", (name) => {
    expect(gitAccepts(name)).toBe(true);
    expect(branchNameProblem(name)).toBeUndefined();
  });

  it.each(refused)("refuses %j, saying why", (name) => {
    expect(gitAccepts(name)).toBe(false);
    expect(branchNameProblem(name)).toMatch(/\S/);
  });
});
