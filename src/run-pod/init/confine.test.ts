import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { existingKind, isStrictlyInside, lexicalDestination, realAncestorProblem } from "./confine.js";

describe("lexicalDestination (spec.files, docs/decisions.md D-31)", () => {
  it.each<[string, string, ReturnType<typeof lexicalDestination>]>([
    ["relative", "notes/brief.md", { ok: true, path: "/workspace/notes/brief.md" }],
    ["absolute inside", "/workspace/a/b", { ok: true, path: "/workspace/a/b" }],
    ["a '..' that stays inside", "a/../b", { ok: true, path: "/workspace/b" }],
    ["a name starting with '..'", "..hidden", { ok: true, path: "/workspace/..hidden" }],
    [
      "'..' out",
      "../etc/passwd",
      { ok: false, cause: "resolves to /etc/passwd, outside the workspace /workspace" },
    ],
    ["deep '..' out", "a/../../x", { ok: false, cause: "resolves to /x, outside the workspace /workspace" }],
    [
      "absolute elsewhere",
      "/etc/passwd",
      { ok: false, cause: "resolves to /etc/passwd, outside the workspace /workspace" },
    ],
    [
      "a sibling with the workspace as prefix",
      "/workspace2/x",
      { ok: false, cause: "resolves to /workspace2/x, outside the workspace /workspace" },
    ],
    [
      "the workspace itself",
      "/workspace/",
      { ok: false, cause: "resolves to the workspace /workspace itself, not a path inside it" },
    ],
    ["empty", "", { ok: false, cause: "the path is empty" }],
  ])("%s", (_name, declared, want) => {
    expect(lexicalDestination("/workspace", declared)).toEqual(want);
  });

  it("isStrictlyInside excludes the root and its look-alike siblings", () => {
    expect(isStrictlyInside("/w", "/w/a")).toBe(true);
    expect(isStrictlyInside("/w", "/w")).toBe(false);
    expect(isStrictlyInside("/w", "/wx")).toBe(false);
  });
});

describe("realAncestorProblem and existingKind (on a real filesystem)", () => {
  let root: string;
  let ws: string;
  let outside: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "init-confine-"));
    ws = join(root, "workspace");
    outside = join(root, "outside");
    mkdirSync(join(ws, "repo", "docs"), { recursive: true });
    mkdirSync(outside);
    // What a cloned repo can carry: a directory symlink leading out, one staying in, a dangling one.
    symlinkSync(outside, join(ws, "repo", "escape"));
    symlinkSync("docs", join(ws, "repo", "docs-link"));
    symlinkSync(join(root, "nowhere"), join(ws, "repo", "dangling"));
    writeFileSync(join(ws, "repo", "file.txt"), "x");
    symlinkSync(join(ws, "repo", "file.txt"), join(ws, "repo", "file-link"));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it.each<[string, string, RegExp | undefined]>([
    ["parents still missing under the workspace", "new/deep/file.md", undefined],
    ["inside a cloned repo", "repo/docs/a.md", undefined],
    ["through a symlink that stays inside", "repo/docs-link/a.md", undefined],
    [
      "through a symlinked dir leading out",
      "repo/escape/a.md",
      /repo\/escape resolves through a symlink to .*\/outside, outside the workspace/,
    ],
    [
      "below a symlinked dir leading out, parents missing",
      "repo/escape/x/y/a.md",
      /repo\/escape resolves through a symlink/,
    ],
    ["through a dangling symlink", "repo/dangling/a.md", /repo\/dangling is a dangling symlink/],
  ])("%s", async (_name, rel, want) => {
    const problem = await realAncestorProblem(ws, join(ws, rel));
    if (want === undefined) expect(problem).toBeUndefined();
    else expect(problem).toMatch(want);
  });

  it("tells a regular file, a directory, a symlink and nothing apart, without following links", async () => {
    expect(await existingKind(join(ws, "repo", "file.txt"))).toBe("file");
    expect(await existingKind(join(ws, "repo", "docs"))).toBe("directory");
    expect(await existingKind(join(ws, "repo", "file-link"))).toBe("symlink");
    expect(await existingKind(join(ws, "repo", "escape"))).toBe("symlink");
    expect(await existingKind(join(ws, "repo", "missing"))).toBe("none");
    expect(await existingKind(join(ws, "repo", "file.txt", "below"))).toBe("none");
  });
});
