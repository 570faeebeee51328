import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createBareRepo, type GitHttpServer, startGitHttpServer } from "./git-http.js";

const TOKEN = "tok-3c1f9e";

/**
 * git with an isolated config and, when given, a credential helper answering `token`. Async: the
 * server runs in this process, so a synchronous spawn would block the very loop that answers git.
 */
function git(args: string[], cwd: string, token?: string): Promise<{ status: number; stderr: string }> {
  const helper = token
    ? ["-c", `credential.helper=!f() { echo username=x-access-token; echo password=${token}; }; f`]
    : [];
  return new Promise((resolve) => {
    execFile(
      "git",
      [...helper, ...args],
      { cwd, encoding: "utf8", env: gitEnv(cwd) },
      (err, _stdout, stderr) => resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
  });
}

function gitEnv(cwd: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: cwd,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_AUTHOR_NAME: "t",
    GIT_AUTHOR_EMAIL: "t@example.test",
    GIT_COMMITTER_NAME: "t",
    GIT_COMMITTER_EMAIL: "t@example.test",
  };
}

describe("git smart-HTTP fake", () => {
  let server: GitHttpServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("serves a clone only with the token, and records auth without the secret", async () => {
    const root = mkdtempSync(join(tmpdir(), "git-root-"));
    createBareRepo(root, "acme/app", { "README.md": "hello\n" });
    server = await startGitHttpServer({ root, token: TOKEN });
    const work = mkdtempSync(join(tmpdir(), "git-work-"));

    const anonymous = await git(["clone", "--quiet", server.repoUrl("acme/app"), "anon"], work);
    expect(anonymous.status).not.toBe(0);

    const wrong = await git(["clone", "--quiet", server.repoUrl("acme/app"), "wrong"], work, "nope");
    expect(wrong.status).not.toBe(0);

    const ok = await git(["clone", "--quiet", server.repoUrl("acme/app"), "app"], work, TOKEN);
    expect(ok.stderr).toBe("");
    expect(ok.status).toBe(0);
    expect(readFileSync(join(work, "app/README.md"), "utf8")).toBe("hello\n");

    expect(server.requests.some((r) => r.auth === "none" && r.status === 401)).toBe(true);
    expect(server.requests.some((r) => r.auth === "wrong" && r.status === 401)).toBe(true);
    expect(server.requests.some((r) => r.auth === "ok" && r.status === 200)).toBe(true);
    expect(JSON.stringify(server.requests)).not.toContain(TOKEN);
  });

  it("accepts a push to a new branch, or refuses it with refusePush", async () => {
    const root = mkdtempSync(join(tmpdir(), "git-root-"));
    const bare = createBareRepo(root, "acme/app", { "a.txt": "a\n" });
    server = await startGitHttpServer({ root, token: TOKEN });
    const work = mkdtempSync(join(tmpdir(), "git-work-"));
    expect((await git(["clone", "--quiet", server.repoUrl("acme/app"), "app"], work, TOKEN)).status).toBe(0);
    const repo = join(work, "app");
    writeFileSync(join(repo, "b.txt"), "b\n");
    await git(["add", "b.txt"], repo);
    await git(["commit", "--quiet", "-m", "b"], repo);

    const pushed = await git(["push", "--quiet", "origin", "HEAD:refs/heads/agent/x"], repo, TOKEN);
    expect(pushed.stderr).toBe("");
    expect(pushed.status).toBe(0);
    const branch = spawnSync("git", ["--git-dir", bare, "rev-parse", "--verify", "refs/heads/agent/x"], {
      encoding: "utf8",
    });
    expect(branch.status).toBe(0);

    await server.close();
    server = await startGitHttpServer({ root, token: TOKEN, refusePush: true });
    const refused = await git(
      ["push", "--quiet", server.repoUrl("acme/app"), "HEAD:refs/heads/agent/y"],
      repo,
      TOKEN,
    );
    expect(refused.status).not.toBe(0);
    expect(server.requests.some((r) => r.status === 403)).toBe(true);
  });

  it("accepts labelled extra tokens and refuses pushes to the repositories in refusePushTo only", async () => {
    const root = mkdtempSync(join(tmpdir(), "git-root-"));
    const open = createBareRepo(root, "acme/app", { "a.txt": "a\n" });
    createBareRepo(root, "acme/protected", { "a.txt": "a\n" });
    server = await startGitHttpServer({
      root,
      token: TOKEN,
      moreTokens: { delivery: "tok-delivery-77" },
      refusePushTo: ["acme/protected"],
    });
    const work = mkdtempSync(join(tmpdir(), "git-work-"));
    expect((await git(["clone", "--quiet", server.repoUrl("acme/app"), "app"], work, TOKEN)).status).toBe(0);
    expect(server.requests.filter((r) => r.status === 200).map((r) => r.tokenLabel)).toContain("token");
    const repo = join(work, "app");
    writeFileSync(join(repo, "b.txt"), "b\n");
    await git(["add", "b.txt"], repo);
    await git(["commit", "--quiet", "-m", "b"], repo);
    server.requests.length = 0;

    const pushed = await git(
      ["push", "--quiet", "origin", "HEAD:refs/heads/agent/x"],
      repo,
      "tok-delivery-77",
    );
    expect(pushed.status).toBe(0);
    expect(spawnSync("git", ["--git-dir", open, "rev-parse", "--verify", "-q", "agent/x"]).status).toBe(0);
    const pushes = server.requests.filter((r) => r.path.includes("git-receive-pack") && r.status === 200);
    expect(pushes.map((r) => r.tokenLabel)).toEqual(["delivery", "delivery"]);

    const refused = await git(
      ["push", "--quiet", server.repoUrl("acme/protected"), "HEAD:refs/heads/agent/y"],
      repo,
      "tok-delivery-77",
    );
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("403");
    expect(server.requests.filter((r) => r.status === 403).map((r) => r.path)).toEqual([
      "/acme/protected.git/info/refs?service=git-receive-pack",
    ]);
    expect(JSON.stringify(server.requests)).not.toContain("tok-delivery-77");
  });
});
