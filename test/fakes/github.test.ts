import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createBareRepo } from "./git-http.js";
import { type FakeGitHub, startFakeGitHub } from "./github.js";

describe("GitHub pulls API fake", () => {
  let gh: FakeGitHub | undefined;
  afterEach(async () => {
    await gh?.close();
    gh = undefined;
  });

  const call = async (method: string, path: string, body?: unknown, auth = `Bearer ${gh?.token}`) => {
    const res = await fetch(`${gh?.url}${path}`, {
      method,
      headers: { ...(auth ? { Authorization: auth } : {}), "Content-Type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> & unknown[] };
  };

  it.each([
    ["no Authorization header", "", "Requires authentication"],
    ["another token", "Bearer nope", "Bad credentials"],
    [
      "an unknown scheme",
      `Basic ${Buffer.from("x:test-github-token").toString("base64")}`,
      "Bad credentials",
    ],
  ])("answers 401 for %s with GitHub's error body", async (_name, auth, message) => {
    gh = await startFakeGitHub();
    const r = await call("GET", "/repos/acme/app/pulls", undefined, auth);
    expect(r.status).toBe(401);
    expect(r.json).toEqual({
      message,
      documentation_url: "https://docs.github.com/rest/pulls/pulls",
      status: "401",
    });
  });

  it("accepts `token <t>` as well as `Bearer <t>`", async () => {
    gh = await startFakeGitHub({ token: "t1" });
    expect((await call("GET", "/repos/acme/app/pulls", undefined, "token t1")).status).toBe(200);
  });

  it("creates pull requests, refuses a second open one for the same head, and filters the list", async () => {
    gh = await startFakeGitHub({ htmlUrl: "https://gh.test" });
    const created = await call("POST", "/repos/acme/app/pulls", {
      title: "T",
      head: "agent/a",
      base: "main",
      draft: true,
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      number: 1,
      html_url: "https://gh.test/acme/app/pull/1",
      state: "open",
      draft: true,
      head: { ref: "agent/a", label: "acme:agent/a" },
      base: { ref: "main" },
    });
    const again = await call("POST", "/repos/acme/app/pulls", {
      title: "T2",
      head: "acme:agent/a",
      base: "main",
    });
    expect(again.status).toBe(422);
    expect(again.json).toMatchObject({
      message: "Validation Failed",
      errors: [{ message: "A pull request already exists for acme:agent/a." }],
    });
    await call("POST", "/repos/acme/app/pulls", { title: "B", head: "agent/b", base: "main" });
    gh.closePull("acme", "app", 2);

    const numbers = async (query: string) =>
      ((await call("GET", `/repos/acme/app/pulls${query}`)).json as { number: number }[]).map(
        (p) => p.number,
      );
    expect(await numbers("")).toEqual([1]);
    expect(await numbers("?state=all")).toEqual([2, 1]);
    expect(await numbers("?state=closed&head=acme:agent/b")).toEqual([2]);
    expect(await numbers("?head=acme:agent/b")).toEqual([]);
    expect(await numbers("?head=other:agent/a")).toEqual([]);
    expect(await numbers("?head=agent/a&base=dev")).toEqual([]);
    expect((await call("GET", "/repos/acme/app/pulls/1")).json).toMatchObject({ number: 1 });
    expect((await call("GET", "/repos/acme/other/pulls")).json).toEqual([]);
  });

  it("reports missing fields as GitHub does", async () => {
    gh = await startFakeGitHub();
    const r = await call("POST", "/repos/acme/app/pulls", { head: "x" });
    expect(r.status).toBe(422);
    expect(r.json.errors).toEqual([
      { resource: "PullRequest", field: "title", code: "missing_field" },
      { resource: "PullRequest", field: "base", code: "missing_field" },
    ]);
  });

  it("with gitRoot, checks the repository and its branches", async () => {
    const root = mkdtempSync(join(tmpdir(), "gh-root-"));
    const bare = createBareRepo(root, "acme/app", { "a.txt": "a\n" });
    spawnSync("git", ["--git-dir", bare, "branch", "same", "main"]);
    gh = await startFakeGitHub({ gitRoot: root });

    expect((await call("GET", "/repos/acme/nope/pulls")).status).toBe(404);
    const missing = await call("POST", "/repos/acme/app/pulls", { title: "T", head: "gone", base: "main" });
    expect(missing.status).toBe(422);
    expect(missing.json.errors).toEqual([{ resource: "PullRequest", field: "head", code: "invalid" }]);
    const empty = await call("POST", "/repos/acme/app/pulls", { title: "T", head: "same", base: "main" });
    expect(empty.json.errors).toEqual([
      { resource: "PullRequest", code: "custom", message: "No commits between main and same" },
    ]);
    expect(gh.pulls).toEqual([]);
  });

  it("records requests and applies injected faults", async () => {
    gh = await startFakeGitHub();
    gh.inject({ kind: "status", status: 503, method: "GET" });
    expect((await call("GET", "/repos/acme/app/pulls")).status).toBe(503);
    expect((await call("GET", "/repos/acme/app/pulls")).status).toBe(200);
    expect(gh.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "GET /repos/acme/app/pulls",
      "GET /repos/acme/app/pulls",
    ]);
  });
});
