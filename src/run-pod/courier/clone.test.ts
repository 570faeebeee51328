import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type ChooseInput, chooseClone, declaredClones, scanClones } from "./clone.js";

/** A workspace with fake work trees (a `.git` directory is all the scan looks for). */
function workspaceWith(...trees: string[]): string {
  const ws = mkdtempSync(join(tmpdir(), "courier-clones-"));
  for (const t of trees) mkdirSync(join(ws, t, ".git"), { recursive: true });
  return ws;
}

const origins: Record<string, string> = {
  app: "https://github.com/acme/app.git",
  lib: "git@github.com:acme/lib.git",
};

function input(ws: string, over: Partial<ChooseInput>): ChooseInput {
  return {
    candidates: scanClones(ws),
    declared: false,
    workspace: ws,
    repo: "",
    target: undefined,
    serverUrl: "https://github.com",
    originOf: async (dir) => origins[dir.split("/").pop() ?? ""],
    ...over,
  };
}

describe("scanClones", () => {
  it("finds work trees up to three levels deep, not inside a repository or node_modules", () => {
    const ws = workspaceWith(
      "app",
      "nested/deep/lib",
      "app/vendor/inner",
      "node_modules/x",
      "a/b/c/too-deep",
    );
    expect(scanClones(ws).map((c) => c.dir.slice(ws.length + 1))).toEqual(["app", "nested/deep/lib"]);
  });

  it("takes the workspace itself when it is the clone", () => {
    const ws = workspaceWith(".");
    expect(scanClones(ws).map((c) => c.dir)).toEqual([ws]);
  });
});

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
});

describe("chooseClone", () => {
  it.each([
    ["the only clone", ["app"], {}, "app"],
    ["the clone delivery.pullRequest.repo names", ["app", "lib"], { repo: "lib" }, "lib"],
    [
      "the clone whose origin is TARGET_REPO",
      ["app", "lib"],
      { target: { owner: "acme", name: "lib" } },
      "lib",
    ],
    [
      "TARGET_REPO matched case-insensitively",
      ["app", "lib"],
      { target: { owner: "ACME", name: "App" } },
      "app",
    ],
  ])("chooses %s", async (_name, trees, over, chosen) => {
    const ws = workspaceWith(...trees);
    const choice = await chooseClone(input(ws, over));
    expect(choice.ok && choice.clone.name).toBe(chosen);
  });

  it("chooses the first declared repository when nothing else decides", async () => {
    const ws = workspaceWith("app", "lib");
    const candidates = declaredClones(ws, [
      { name: "lib", url: "acme/lib" },
      { name: "app", url: "acme/app" },
    ]);
    const choice = await chooseClone(
      input(ws, { candidates, declared: true, target: { owner: "x", name: "y" } }),
    );
    expect(choice.ok && choice.clone.name).toBe("lib");
  });

  it.each([
    ["no clone", [], {}, (ws: string) => `no git clone found under ${ws}`],
    [
      "an unknown repo name",
      ["app"],
      { repo: "web" },
      (ws: string) => `delivery.pullRequest.repo web is not a clone under ${ws} (found: app)`,
    ],
    [
      "several clones and no target among them",
      ["app", "lib"],
      { target: { owner: "acme", name: "web" } },
      (ws: string) =>
        `several clones under ${ws} (app, lib) and none is the target repository; set delivery.pullRequest.repo`,
    ],
  ])("fails for %s, saying why", async (_name, trees, over, reason) => {
    const ws = workspaceWith(...trees);
    expect(await chooseClone(input(ws, over))).toEqual({ ok: false, reason: reason(ws) });
  });
});
