import {
  existsSync,
  mkdirSync,
  mkdtempSync,
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
});
