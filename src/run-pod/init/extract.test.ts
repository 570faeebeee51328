import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "tar";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { entryProblem, extractTarGz } from "./extract.js";

describe("entryProblem", () => {
  it.each<[string, { path: string; type: string; linkpath?: string }, string | undefined]>([
    ["a plain file", { path: ".claude/projects/a.jsonl", type: "File" }, undefined],
    ["a directory", { path: ".codex/", type: "Directory" }, undefined],
    ["an absolute path", { path: "/etc/passwd", type: "File" }, "is an absolute path"],
    ["a '..' component", { path: "a/../../x", type: "File" }, "contains a '..' component"],
    ["a symlink inside", { path: "a/link", type: "SymbolicLink", linkpath: "../b" }, undefined],
    [
      "a symlink out",
      { path: "a/link", type: "SymbolicLink", linkpath: "../../x" },
      "is a symlink to ../../x, outside the root",
    ],
    [
      "an absolute symlink",
      { path: "link", type: "SymbolicLink", linkpath: "/etc" },
      "is a symlink to the absolute path /etc",
    ],
    [
      "a hard link out",
      { path: "h", type: "Link", linkpath: "../x" },
      "is a hard link to ../x, outside the root",
    ],
    ["a device", { path: "d", type: "CharacterDevice" }, "has the unsupported type CharacterDevice"],
  ])("%s", (_name, entry, want) => {
    expect(entryProblem(entry)).toBe(want);
  });
});

describe("extractTarGz", () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "init-extract-"));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("extracts a well-formed archive below the root", async () => {
    const src = join(root, "src");
    mkdirSync(join(src, ".claude", "projects"), { recursive: true });
    writeFileSync(join(src, ".claude", "projects", "s.jsonl"), "{}\n");
    const archive = join(root, "a.tar.gz");
    await create({ gzip: true, file: archive, cwd: src, portable: true }, [".claude"]);
    const home = join(root, "home");
    mkdirSync(home);
    await extractTarGz(archive, home);
    expect(readFileSync(join(home, ".claude", "projects", "s.jsonl"), "utf8")).toBe("{}\n");
  });

  it("refuses the whole archive when an entry would escape, writing nothing", async () => {
    const src = join(root, "src", "inner");
    mkdirSync(src, { recursive: true });
    writeFileSync(join(src, "ok.txt"), "ok");
    writeFileSync(join(root, "src", "evil.txt"), "evil");
    const archive = join(root, "evil.tar.gz");
    await create({ gzip: true, file: archive, cwd: src, preservePaths: true }, ["ok.txt", "../evil.txt"]);
    const home = join(root, "home");
    mkdirSync(home);
    await expect(extractTarGz(archive, home)).rejects.toThrow(
      "archive entry ../evil.txt contains a '..' component",
    );
    expect(existsSync(join(home, "ok.txt"))).toBe(false);
    expect(existsSync(join(root, "evil.txt"))).toBe(false);
  });

  it("refuses a symlink entry pointing out of the root", async () => {
    const src = join(root, "src");
    mkdirSync(src);
    symlinkSync("/etc", join(src, "etc-link"));
    const archive = join(root, "link.tar.gz");
    await create({ gzip: true, file: archive, cwd: src }, ["etc-link"]);
    await expect(extractTarGz(archive, src)).rejects.toThrow(
      "archive entry etc-link is a symlink to the absolute path /etc",
    );
  });

  it("rejects something that is not a tar.gz", async () => {
    const archive = join(root, "junk.tar.gz");
    writeFileSync(archive, "not an archive");
    await expect(extractTarGz(archive, root)).rejects.toThrow();
  });

  it("with `within`, refuses an entry, a symlink or a hard link outside that directory", async () => {
    expect(entryProblem({ path: ".bashrc", type: "File" }, ".claude")).toBe("is outside .claude");
    expect(entryProblem({ path: ".claude/x", type: "File" }, ".claude")).toBeUndefined();
    expect(entryProblem({ path: ".claude", type: "Directory" }, ".claude")).toBeUndefined();
    expect(entryProblem({ path: ".claudette/x", type: "File" }, ".claude")).toBe("is outside .claude");
    expect(entryProblem({ path: ".claude/l", type: "SymbolicLink", linkpath: "../.ssh" }, ".claude")).toBe(
      "is a symlink to ../.ssh, outside .claude",
    );
    expect(entryProblem({ path: ".claude/h", type: "Link", linkpath: ".profile" }, ".claude")).toBe(
      "is a hard link to .profile, outside .claude",
    );
  });

  it("an extraction that fails part-way removes what it wrote and names node-tar's cause", async () => {
    // first.txt, then l -> sub, then l/x: the listing passes, node-tar refuses to write through l.
    const s1 = join(root, "s1");
    const s2 = join(root, "s2");
    mkdirSync(join(s2, "l"), { recursive: true });
    mkdirSync(s1);
    writeFileSync(join(s1, "first.txt"), "one");
    symlinkSync("sub", join(s1, "l"));
    writeFileSync(join(s2, "l", "x"), "x");
    const archive = join(root, "partial.tar.gz");
    execFileSync("tar", ["czf", archive, "-C", s1, "first.txt", "l", "-C", s2, "l/x"]);
    const home = join(root, "home");
    mkdirSync(home);
    writeFileSync(join(home, "kept.txt"), "mine");
    await expect(extractTarGz(archive, home)).rejects.toThrow(
      "the archive cannot be extracted: TAR_SYMLINK_ERROR: Cannot extract through symbolic link",
    );
    expect(readdirSync(home)).toEqual(["kept.txt"]);
  });

  it("a damaged archive's error keeps its cause, not just a code such as TAR_ABORT", async () => {
    const src = join(root, "src");
    mkdirSync(src);
    writeFileSync(join(src, "a.txt"), "x".repeat(100_000));
    const archive = join(root, "a.tar.gz");
    await create({ gzip: true, file: archive, cwd: src, portable: true }, ["a.txt"]);
    const whole = readFileSync(archive);
    writeFileSync(archive, whole.subarray(0, Math.floor(whole.length / 2)));
    const home = join(root, "home");
    mkdirSync(home);
    const err = await extractTarGz(archive, home).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(err?.message).toBe("the archive cannot be extracted: Z_BUF_ERROR: zlib: unexpected end of file");
    expect(err?.code).toBeUndefined();
  });
});
