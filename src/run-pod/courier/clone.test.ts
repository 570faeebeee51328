import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type ChooseInput, chooseClone, declaredClones } from "./clone.js";
import type { RepoRef } from "./settings.js";

/** A workspace with fake work trees (a `.git` directory is all the check looks for). */
function workspaceWith(...trees: string[]): string {
  const ws = mkdtempSync(join(tmpdir(), "courier-clones-"));
  for (const t of trees) mkdirSync(join(ws, t, ".git"), { recursive: true });
  return ws;
}

const REPOS: RepoRef[] = [
  { name: "app", url: "https://github.com/acme/app.git", ref: "develop" },
  { name: "lib", url: "git@github.com:acme/lib.git" },
];

function input(ws: string, over: Partial<ChooseInput>): ChooseInput {
  return {
    candidates: declaredClones(ws, REPOS),
    workspace: ws,
    repo: "",
    target: undefined,
    serverUrl: "https://github.com",
    ...over,
  };
}

describe("declaredClones", () => {
  it("uses path (relative or absolute) else <workspace>/<name>, keeping order and dropping missing or outside ones", () => {
    const ws = workspaceWith("lib", "src/app", "other");
    const clones = declaredClones(ws, [
      { name: "app", url: "acme/app", path: "src/app" },
      { name: "gone", url: "acme/gone" },
      { name: "lib", url: "acme/lib" },
      { name: "other", url: "acme/other", path: join(ws, "other") },
      { name: "escape", url: "acme/escape", path: "../" },
    ]);
    expect(clones.map((c) => [c.name, c.dir.slice(ws.length + 1), c.url])).toEqual([
      ["app", "src/app", "acme/app"],
      ["lib", "lib", "acme/lib"],
      ["other", "other", "acme/other"],
    ]);
  });

  it("keeps the declared ref and refuses a .git that is a file or a symlink", () => {
    const ws = workspaceWith("app", "real");
    mkdirSync(join(ws, "gitfile"));
    writeFileSync(join(ws, "gitfile", ".git"), "gitdir: ../real/.git\n");
    mkdirSync(join(ws, "linked"));
    symlinkSync(join(ws, "real", ".git"), join(ws, "linked", ".git"));
    const clones = declaredClones(ws, [
      { name: "app", url: "acme/app", ref: "develop" },
      { name: "gitfile", url: "acme/gitfile" },
      { name: "linked", url: "acme/linked" },
    ]);
    expect(clones).toEqual([{ name: "app", url: "acme/app", ref: "develop", dir: join(ws, "app") }]);
  });
});

describe("chooseClone", () => {
  it.each([
    ["the first declared clone when nothing else decides", {}, "app"],
    ["the clone delivery.pullRequest.repo names", { repo: "lib" }, "lib"],
    ["the clone whose declared URL is TARGET_REPO", { target: { owner: "acme", name: "lib" } }, "lib"],
    ["TARGET_REPO matched case-insensitively", { target: { owner: "ACME", name: "App" } }, "app"],
    ["the first declared clone when none is TARGET_REPO", { target: { owner: "x", name: "y" } }, "app"],
  ])("chooses %s", (_name, over, chosen) => {
    const ws = workspaceWith("app", "lib");
    const choice = chooseClone(input(ws, over));
    expect(choice.ok && choice.clone.name).toBe(chosen);
  });

  it.each([
    [
      "no declared clone on disk",
      [],
      {},
      (ws: string) => `none of the declared repositories is a git clone under ${ws}`,
    ],
    [
      "an unknown repo name",
      ["app"],
      { repo: "web" },
      (ws: string) => `delivery.pullRequest.repo web is not a clone under ${ws} (found: app)`,
    ],
  ])("fails for %s, saying why", (_name, trees, over, reason) => {
    const ws = workspaceWith(...trees);
    expect(chooseClone(input(ws, over))).toEqual({ ok: false, reason: reason(ws) });
  });
});
