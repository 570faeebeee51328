import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readCloneHead } from "./clone-git-dir.js";

const A = "a".repeat(40);
const B = "b".repeat(40);

function clone(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "courier-gitdir-"));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, ".git", path, ".."), { recursive: true });
    writeFileSync(join(dir, ".git", path), content);
  }
  return dir;
}

describe("readCloneHead: the clone's HEAD read as data", () => {
  it.each([
    ["a loose branch", { HEAD: "ref: refs/heads/main\n", "refs/heads/main": `${A}\n` }, "refs/heads/main", A],
    [
      "a packed branch",
      {
        HEAD: "ref: refs/heads/dev\n",
        "packed-refs": `# pack-refs\n${A} refs/heads/main\n${B} refs/heads/dev\n`,
      },
      "refs/heads/dev",
      B,
    ],
    ["a detached HEAD", { HEAD: `${A}\n` }, undefined, A],
    ["a branch with no commit yet", { HEAD: "ref: refs/heads/main\n" }, "refs/heads/main", undefined],
  ])("reads %s", async (_name, files, ref, commit) => {
    const dir = clone(files);
    const head = await readCloneHead(dir);
    expect([head.ref, head.commit]).toEqual([ref, commit]);
  });

  it.each([
    [
      "a HEAD naming something outside refs/heads",
      { HEAD: "ref: ../../etc/passwd\n" },
      "names neither a commit nor a branch",
    ],
    [
      "a ref holding no commit id",
      { HEAD: "ref: refs/heads/main\n", "refs/heads/main": "DELIVERY_TOKEN=x\n" },
      "holds no commit id",
    ],
    ["a missing HEAD", { config: "" }, "HEAD is missing"],
  ])("refuses %s, never quoting the content", async (_name, files, message) => {
    const dir = clone(files);
    const err = await readCloneHead(dir).catch((e: Error) => e);
    expect(String(err)).toContain(message);
    expect(String(err)).not.toContain("DELIVERY_TOKEN");
  });

  it("refuses a HEAD that is a symlink out of .git, and a .git that is not a directory", async () => {
    const outside = join(mkdtempSync(join(tmpdir(), "courier-out-")), "HEAD");
    writeFileSync(outside, `${A}\n`);
    const dir = clone({ config: "" });
    symlinkSync(outside, join(dir, ".git", "HEAD"));
    expect(String(await readCloneHead(dir).catch((e: Error) => e))).toContain(
      "resolves outside the clone's .git",
    );

    const gitfile = mkdtempSync(join(tmpdir(), "courier-gitfile-"));
    writeFileSync(join(gitfile, ".git"), `gitdir: ${dir}/.git\n`);
    expect(String(await readCloneHead(gitfile).catch((e: Error) => e))).toContain(".git is not a directory");
  });
});
