// @module-tag slow
/**
 * The courier end to end on one machine: a bare repository served over smart HTTP by git's own
 * http-backend (test/fakes/git-http.ts), the GitHub pulls API fake (test/fakes/github.ts), a
 * workspace clone the "agent" edited, the witness's result record and an http sink.
 */
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBareRepo, type GitHttpServer, startGitHttpServer } from "../../../test/fakes/git-http.js";
import { type FakeGitHub, startFakeGitHub } from "../../../test/fakes/github.js";
import { startFileServer } from "../../../test/support/http-files.js";
import { initSandbox, runInitCaptured } from "../../../test/support/init-sandbox.js";
import { type ProcessOptions, runProcess } from "./git.js";
import { runCourier } from "./main.js";

const TOKEN = "ghs_courierTestToken7f3a9c";
const BRANCH = "agent/fix-readme";
const TITLE = "Fix the README";
/** A commit id no repository here has. */
const MISSING = "1234567123456712345671234567123456712345";

const testGitEnv = (cwd: string) => ({
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: cwd,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_TERMINAL_PROMPT: "0",
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.test",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.test",
});

/** Local git for the test's own setup and checks (never against the in-process HTTP server). */
function git(args: string[], cwd: string): string {
  const r = spawnSync("git", args, { cwd, encoding: "utf8", env: testGitEnv(cwd) });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** git over the network: asynchronous, since the fake HTTP server runs in this process. */
async function netGit(args: string[], cwd: string, token: string): Promise<void> {
  const helper = [
    "-c",
    `credential.helper=!f() { echo username=x-access-token; echo password=${token}; }; f`,
  ];
  const r = await runProcess("git", [...helper, ...args], { cwd, env: testGitEnv(cwd), timeoutMs: 60_000 });
  if (r.code !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
}

interface Spawned {
  file: string;
  args: string[];
  options: ProcessOptions;
}

interface Sink {
  url: string;
  bodies: string[];
  close(): Promise<void>;
}

async function startSink(): Promise<Sink> {
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString("utf8");
    });
    req.on("end", () => {
      bodies.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/events`,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Run {
  code: number;
  stdout: string[];
  stderr: string[];
  spawned: Spawned[];
  events: Record<string, unknown>[];
}

describe("courier", () => {
  let root: string;
  let bare: string;
  let gitServer: GitHttpServer;
  let github: FakeGitHub;
  let sink: Sink;
  const closers: Array<() => Promise<void>> = [];

  async function serveGit(options: { refusePush?: boolean } = {}) {
    gitServer = await startGitHttpServer({ root, token: TOKEN, ...options });
    closers.push(() => gitServer.close());
  }

  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), "courier-remote-"));
    bare = createBareRepo(root, "acme/app", { "README.md": "helo\n", "src/main.txt": "main\n" });
    github = await startFakeGitHub({ token: TOKEN, gitRoot: root, htmlUrl: "https://github.test" });
    sink = await startSink();
    closers.push(
      () => github.close(),
      () => sink.close(),
    );
  });

  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  /** A workspace with the init's clone of acme/app (with its credential helper) and a HOME. */
  async function workspace(): Promise<{ workspace: string; clone: string; home: string }> {
    const ws = mkdtempSync(join(tmpdir(), "courier-ws-"));
    const clone = join(ws, "app");
    await netGit(["clone", "--quiet", gitServer.repoUrl("acme/app"), clone], ws, TOKEN);
    // What the init leaves behind (docs/run-pod.md#the-init): a helper reading a repo token env var.
    git(
      [
        "config",
        "credential.helper",
        '!f() { echo username=x-access-token; echo "password=$REPO_TOKEN"; }; f',
      ],
      clone,
    );
    const home = mkdtempSync(join(tmpdir(), "courier-home-"));
    return { workspace: ws, clone, home };
  }

  /** The witness's record (written by this process's uid, which the courier is told to trust). */
  function agentExited(home: string, code: number | string): void {
    mkdirSync(join(home, "result"), { recursive: true, mode: 0o755 });
    writeFileSync(join(home, "result", "exit-code"), `${code}\n`, { mode: 0o644 });
  }

  function envFor(home: string, ws: string, extra: Record<string, string> = {}): Record<string, string> {
    return {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      WORKSPACE_DIR: ws,
      AGENT_NAME: "fix-readme",
      AGENT_UID: "uid-fix-readme",
      STATION_NAME: "dev",
      TASK_ID: "T-42",
      POD_NAME: "agent-job-fix-readme-x1",
      POD_NAMESPACE: "ai-agents",
      AGENT_DEADLINE_MS: "60000",
      AGENT_SINKS: JSON.stringify([{ type: "http", url: sink.url }]),
      AGENT_DELIVERY: JSON.stringify({ title: TITLE, body: "Fixes the typo.", draft: false }),
      DELIVERY_TOKEN: TOKEN,
      REPO_TOKEN: TOKEN,
      GH_TOKEN: TOKEN,
      TARGET_REPO: "acme/app",
      BRANCH_NAME: BRANCH,
      GITHUB_API_URL: github.url,
      GITHUB_SERVER_URL: gitServer.url,
      AGENT_REPOS: JSON.stringify([{ name: "app", url: gitServer.repoUrl("acme/app") }]),
      AGENT_RESULT_DIR: join(home, "result"),
      ...extra,
    };
  }

  async function courier(
    env: Record<string, string>,
    seams: Partial<Parameters<typeof runCourier>[2]> = {},
  ): Promise<Run> {
    const stdout: string[] = [];
    const stderr: string[] = [];
    const spawned: Spawned[] = [];
    const code = await runCourier([], env, {
      run: (file, args, options) => {
        spawned.push({ file, args, options });
        return runProcess(file, args, options);
      },
      stdout: (l) => stdout.push(l),
      stderr: (l) => stderr.push(l),
      drainMs: 10_000,
      resultOwnerUid: process.getuid?.() ?? 0,
      ...seams,
    });
    return {
      code,
      stdout,
      stderr,
      spawned,
      events: stdout.map((l) => JSON.parse(l) as Record<string, unknown>),
    };
  }

  const branchSha = () =>
    spawnSync("git", ["--git-dir", bare, "rev-parse", "--verify", "-q", `refs/heads/${BRANCH}`], {
      encoding: "utf8",
    }).stdout.trim();
  const pushes = () =>
    gitServer.requests.filter((r) => r.method === "POST" && r.path.includes("git-receive-pack"));

  function expectNoToken(run: Run): void {
    for (const s of run.spawned) expect(s.args.join(" ")).not.toContain(TOKEN);
    for (const line of [...run.stdout, ...run.stderr]) expect(line).not.toContain(TOKEN);
    for (const body of sink.bodies) expect(body).not.toContain(TOKEN);
  }

  it("commits the agent's edit, pushes it to the branch, opens the PR once and reports it everywhere", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    writeFileSync(join(clone, "README.md"), "hello\n");
    writeFileSync(join(clone, "NOTES.md"), "new file\n");
    agentExited(home, 0);

    const run = await courier(envFor(home, ws));

    const url = "https://github.test/acme/app/pull/1";
    expect(run.events).toEqual([
      { kind: "delivery", status: "succeeded", url, repo: "acme/app", branch: BRANCH },
    ]);
    expect(run.code).toBe(0);

    const sha = branchSha();
    expect(sha).not.toBe("");
    expect(git(["--git-dir", bare, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s", sha], root)).toBe(
      "ai-agent <ai-agent@users.noreply.github.com>|ai-agent <ai-agent@users.noreply.github.com>|Fix the README",
    );
    expect(git(["--git-dir", bare, "show", `${sha}:README.md`], root)).toBe("hello");
    expect(git(["--git-dir", bare, "show", `${sha}:NOTES.md`], root)).toBe("new file");
    expect(git(["--git-dir", bare, "rev-parse", `${sha}^`], root)).toBe(
      git(["--git-dir", bare, "rev-parse", "main"], root),
    );
    // The clone is only read: the delivery commit lives in the courier's own repository.
    expect(git(["rev-parse", "HEAD"], clone)).toBe(git(["--git-dir", bare, "rev-parse", "main"], root));

    expect(github.pulls).toMatchObject([
      {
        owner: "acme",
        repo: "app",
        head: BRANCH,
        base: "main",
        title: TITLE,
        body: "Fixes the typo.",
        draft: false,
      },
    ]);
    const posts = github.requests.filter((r) => r.method === "POST");
    expect(posts).toHaveLength(1);
    expect(posts[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);

    const envelopes = sink.bodies.map((b) => JSON.parse(b) as { source: unknown; event: unknown });
    expect(envelopes).toEqual([
      {
        source: {
          agent: "fix-readme",
          station: "dev",
          task: "T-42",
          pod: "agent-job-fix-readme-x1",
          namespace: "ai-agents",
        },
        event: run.events[0],
      },
    ]);
    expectNoToken(run);
  });

  it("reuses the open PR when the same Agent delivers to its branch again, replacing the branch", async () => {
    await serveGit();
    const first = await workspace();
    writeFileSync(join(first.clone, "README.md"), "first run\n");
    agentExited(first.home, 0);
    const one = await courier(envFor(first.home, first.workspace));
    expect(one.code).toBe(0);
    const firstSha = branchSha();

    const second = await workspace();
    writeFileSync(join(second.clone, "README.md"), "second run\n");
    agentExited(second.home, 0);
    const two = await courier(envFor(second.home, second.workspace));

    expect(two.events).toEqual([
      {
        kind: "delivery",
        status: "succeeded",
        url: "https://github.test/acme/app/pull/1",
        repo: "acme/app",
        branch: BRANCH,
      },
    ]);
    expect(two.code).toBe(0);
    expect(github.pulls).toHaveLength(1);
    expect(github.requests.filter((r) => r.method === "POST")).toHaveLength(1);
    expect(branchSha()).not.toBe(firstSha);
    expect(git(["--git-dir", bare, "show", `${BRANCH}:README.md`], root)).toBe("second run");
  });

  describe("never rewrites a branch this Agent did not create (docs/security.md#deliveries)", () => {
    const refusal = (branch: string) =>
      `branch ${branch} already exists in acme/app and was not created by this Agent; refusing to overwrite it (the delivery is not a fast-forward of its tip; choose another spec.branch)`;

    it("an existing release branch: the delivery fails naming it, its commit survives, no PR", async () => {
      await serveGit();
      // release has a commit of its own: pushing the run's commit there would drop it.
      const side = mkdtempSync(join(tmpdir(), "courier-release-"));
      git(["clone", "--quiet", bare, side], side);
      writeFileSync(join(side, "CHANGELOG.md"), "1.0\n");
      git(["add", "CHANGELOG.md"], side);
      git(["commit", "--quiet", "-m", "release 1.0"], side);
      git(["push", "--quiet", "origin", "HEAD:refs/heads/release"], side);
      const before = git(["--git-dir", bare, "rev-parse", "release"], root);
      const { workspace: ws, clone, home } = await workspace();
      writeFileSync(join(clone, "README.md"), "overwrite the release\n");
      agentExited(home, 0);

      const run = await courier(envFor(home, ws, { BRANCH_NAME: "release" }));

      expect(run.code).not.toBe(0);
      expect(run.events[0]).toMatchObject({ status: "failed", reason: refusal("release") });
      expect(git(["--git-dir", bare, "rev-parse", "release"], root)).toBe(before);
      expect(pushes()).toEqual([]);
      expect(github.pulls).toHaveLength(0);
    });

    it("advances an existing branch the run cloned (a fast-forward), keeping its commits", async () => {
      await serveGit();
      const side = mkdtempSync(join(tmpdir(), "courier-feature-"));
      git(["clone", "--quiet", bare, side], side);
      writeFileSync(join(side, "FEATURE.md"), "started by a person\n");
      git(["add", "FEATURE.md"], side);
      git(["commit", "--quiet", "-m", "start the feature"], side);
      git(["push", "--quiet", "origin", "HEAD:refs/heads/feat/x"], side);
      const before = git(["--git-dir", bare, "rev-parse", "feat/x"], root);
      const { workspace: ws, clone, home } = await workspace();
      git(["fetch", "--quiet", bare, "feat/x"], clone);
      git(["checkout", "--quiet", "-b", "feat/x", "FETCH_HEAD"], clone);
      writeFileSync(join(clone, "FEATURE.md"), "finished by the agent\n");
      agentExited(home, 0);

      const run = await courier(envFor(home, ws, { BRANCH_NAME: "feat/x" }));

      expect(run.events[0]).toMatchObject({ status: "succeeded", branch: "feat/x" });
      expect(git(["--git-dir", bare, "rev-parse", "feat/x^"], root)).toBe(before);
      expect(git(["--git-dir", bare, "show", "feat/x:FEATURE.md"], root)).toBe("finished by the agent");
    });

    it.each(["feat/x", "fix/issue-128", "fix/#128", "feat/a+b"])(
      "delivers to a new branch %s, any name git accepts",
      async (branch) => {
        await serveGit();
        const { workspace: ws, clone, home } = await workspace();
        writeFileSync(join(clone, "README.md"), "hello\n");
        agentExited(home, 0);

        const run = await courier(envFor(home, ws, { BRANCH_NAME: branch }));

        expect(run.events[0]).toMatchObject({ status: "succeeded", branch });
        expect(git(["--git-dir", bare, "show", `${branch}:README.md`], root)).toBe("hello");
        expect(github.pulls).toMatchObject([{ head: branch, base: "main" }]);
      },
    );

    it("another run's open pull-request branch: refused, that run's commit and PR untouched", async () => {
      await serveGit();
      const victim = await workspace();
      writeFileSync(join(victim.clone, "README.md"), "the victim's work\n");
      agentExited(victim.home, 0);
      expect((await courier(envFor(victim.home, victim.workspace, { AGENT_UID: "uid-victim" }))).code).toBe(
        0,
      );
      const victimSha = branchSha();

      const attacker = await workspace();
      writeFileSync(join(attacker.clone, "README.md"), "the attacker's work\n");
      // The agent plants our trailer in a commit of its own: only the branch's tip counts.
      git(["commit", "--quiet", "-am", "x\n\nAgent-UID: uid-attacker"], attacker.clone);
      agentExited(attacker.home, 0);
      const run = await courier(envFor(attacker.home, attacker.workspace, { AGENT_UID: "uid-attacker" }));

      expect(run.events[0]).toMatchObject({ status: "failed", reason: refusal(BRANCH) });
      expect(branchSha()).toBe(victimSha);
      expect(git(["--git-dir", bare, "show", `${BRANCH}:README.md`], root)).toBe("the victim's work");
      expect(github.pulls).toHaveLength(1);
    });

    it("without AGENT_UID an existing branch is never rewritten", async () => {
      await serveGit();
      const first = await workspace();
      writeFileSync(join(first.clone, "README.md"), "first\n");
      agentExited(first.home, 0);
      expect((await courier(envFor(first.home, first.workspace))).code).toBe(0);
      const sha = branchSha();

      const second = await workspace();
      writeFileSync(join(second.clone, "README.md"), "second\n");
      agentExited(second.home, 0);
      const run = await courier(envFor(second.home, second.workspace, { AGENT_UID: "" }));

      expect(run.events[0]).toMatchObject({ status: "failed" });
      expect(branchSha()).toBe(sha);
    });

    it("marks its commit with the Agent's uid (the trailer a later delivery of the same Agent checks)", async () => {
      await serveGit();
      const { workspace: ws, clone, home } = await workspace();
      writeFileSync(join(clone, "README.md"), "hello\n");
      agentExited(home, 0);
      expect((await courier(envFor(home, ws))).code).toBe(0);
      expect(git(["--git-dir", bare, "log", "-1", "--format=%B", BRANCH], root)).toContain(
        "Agent-UID: uid-fix-readme",
      );
    });
  });

  it("opens a new PR when the branch's earlier PR was closed", async () => {
    await serveGit();
    const first = await workspace();
    writeFileSync(join(first.clone, "README.md"), "first\n");
    agentExited(first.home, 0);
    expect((await courier(envFor(first.home, first.workspace))).code).toBe(0);
    github.closePull("acme", "app", 1);

    const second = await workspace();
    writeFileSync(join(second.clone, "README.md"), "second\n");
    agentExited(second.home, 0);
    const run = await courier(envFor(second.home, second.workspace));

    expect(run.events[0]).toMatchObject({ status: "succeeded", url: "https://github.test/acme/app/pull/2" });
    expect(github.pulls.map((p) => p.state)).toEqual(["closed", "open"]);
  });

  it("delivers commits the agent made itself, and uses the declared URL when TARGET_REPO is empty", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    writeFileSync(join(clone, "README.md"), "committed by the agent\n");
    git(["commit", "--quiet", "-am", "agent commit"], clone);
    agentExited(home, 0);

    const run = await courier(envFor(home, ws, { TARGET_REPO: "" }));

    expect(run.events[0]).toMatchObject({ status: "succeeded", repo: "acme/app", branch: BRANCH });
    expect(git(["--git-dir", bare, "log", "-1", "--format=%s", BRANCH], root)).toBe("agent commit");
  });

  it.each([
    ["nothing changed", () => {}],
    [
      "only an ignored file changed",
      (clone: string) => {
        writeFileSync(join(clone, ".git", "info", "exclude"), "*.log\n");
        writeFileSync(join(clone, "debug.log"), "noise\n");
      },
    ],
  ])("skips with no-changes when %s, pushing nothing", async (_name, edit) => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    edit(clone);
    agentExited(home, 0);

    const run = await courier(envFor(home, ws));

    expect(run.events).toEqual([
      { kind: "delivery", status: "skipped", reason: "no-changes", repo: "acme/app", branch: BRANCH },
    ]);
    expect(run.code).toBe(0);
    expect(pushes()).toEqual([]);
    expect(branchSha()).toBe("");
    expect(github.pulls).toEqual([]);
  });

  it.each([
    ["a non-zero exit code", "3"],
    ["the deadline code", "124"],
  ])("skips with agent-failed for %s, touching no repository", async (_name, content) => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    writeFileSync(join(clone, "README.md"), "half-done\n");
    agentExited(home, content);

    const run = await courier(envFor(home, ws));

    expect(run.events).toEqual([{ kind: "delivery", status: "skipped", reason: "agent-failed" }]);
    expect(run.code).toBe(0);
    expect(run.spawned).toEqual([]);
    expect(github.requests).toEqual([]);
    expect(sink.bodies.map((b) => JSON.parse(b).event)).toEqual(run.events);
  });

  it.skipIf(process.getuid?.() !== 0)(
    "refuses a success the agent's uid forged in the result directory, touching no repository",
    async () => {
      await serveGit();
      const { workspace: ws, clone, home } = await workspace();
      writeFileSync(join(clone, "README.md"), "half-done\n");
      agentExited(home, 0);
      chownSync(join(home, "result", "exit-code"), 1000, 1000);

      const run = await courier(envFor(home, ws), { resultOwnerUid: 0 });

      expect(run.code).not.toBe(0);
      expect(run.events).toEqual([
        {
          kind: "delivery",
          status: "failed",
          reason: `untrusted agent result: ${join(home, "result", "exit-code")} was not written by the witness (owner uid 1000)`,
        },
      ]);
      expect(run.spawned).toEqual([]);
      expect(github.requests).toEqual([]);
    },
  );

  it("fails with the push's reason and a non-zero exit when the push is refused, opening no PR", async () => {
    await serveGit({ refusePush: true });
    const { workspace: ws, clone, home } = await workspace();
    writeFileSync(join(clone, "README.md"), "hello\n");
    agentExited(home, 0);

    const run = await courier(envFor(home, ws));

    expect(run.code).not.toBe(0);
    expect(run.events).toHaveLength(1);
    expect(run.events[0]).toMatchObject({
      kind: "delivery",
      status: "failed",
      repo: "acme/app",
      branch: BRANCH,
    });
    const reason = String(run.events[0]?.reason);
    expect(reason).toMatch(/^push to acme\/app branch agent\/fix-readme failed: .*403/);
    expect(github.requests).toEqual([]);
    expect(run.stderr.some((l) => l.includes(`delivery failed: ${reason}`))).toBe(true);
    expectNoToken(run);
  });

  it.each([
    [
      "a 403 on the POST",
      (gh: FakeGitHub) =>
        gh.inject({
          kind: "status",
          status: 403,
          method: "POST",
          message: "Resource not accessible by integration",
        }),
      /^opening the pull request on acme\/app failed: HTTP 403 Resource not accessible by integration$/,
    ],
    [
      "a 401 on the list",
      (gh: FakeGitHub) =>
        gh.inject({ kind: "status", status: 401, method: "GET", message: "Bad credentials" }),
      /^listing open pull requests on acme\/app failed: HTTP 401 Bad credentials$/,
    ],
    [
      "a 422 other than an existing PR",
      (gh: FakeGitHub) =>
        gh.inject({
          kind: "status",
          status: 422,
          method: "POST",
          body: JSON.stringify({
            message: "Validation Failed",
            errors: [{ resource: "PullRequest", field: "base", code: "invalid" }],
          }),
        }),
      /^opening the pull request on acme\/app failed: HTTP 422 Validation Failed \(base invalid\)$/,
    ],
  ])("fails when the PR API answers %s", async (_name, fault, reason) => {
    await serveGit();
    fault(github);
    const { workspace: ws, clone, home } = await workspace();
    writeFileSync(join(clone, "README.md"), "hello\n");
    agentExited(home, 0);

    const run = await courier(envFor(home, ws));

    expect(run.code).not.toBe(0);
    expect(run.events).toHaveLength(1);
    expect(run.events[0]).toMatchObject({ kind: "delivery", status: "failed" });
    expect(String(run.events[0]?.reason)).toMatch(reason);
    expectNoToken(run);
  });

  it("reuses the PR a concurrent courier opened between its list and its POST (422 already exists)", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    writeFileSync(join(clone, "README.md"), "hello\n");
    agentExited(home, 0);
    const other = await workspace();
    writeFileSync(join(other.clone, "README.md"), "other\n");
    agentExited(other.home, 0);
    expect((await courier(envFor(other.home, other.workspace))).code).toBe(0);
    // This courier's list sees nothing; by the time of its POST the other courier's PR exists.
    github.inject({ kind: "status", status: 200, method: "GET", body: "[]" });

    const run = await courier(envFor(home, ws));

    expect(run.events[0]).toMatchObject({ status: "succeeded", url: "https://github.test/acme/app/pull/1" });
    expect(github.pulls).toHaveLength(1);
  });

  it("keeps the token out of argv, output and the clone's git processes even with a hostile clone config", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    const marker = join(home, "hook-ran");
    // The agent rewrites the clone: a hook, a filter and a redirect of the push URL.
    writeFileSync(join(clone, ".git", "hooks", "pre-commit"), `#!/bin/sh\nenv > ${marker}\n`, {
      mode: 0o755,
    });
    writeFileSync(join(clone, ".git", "hooks", "pre-push"), `#!/bin/sh\nenv > ${marker}\n`, { mode: 0o755 });
    git(["config", "filter.leak.clean", `sh -c 'env > ${marker}; cat'`], clone);
    writeFileSync(join(clone, ".gitattributes"), "*.md filter=leak\n");
    git(["config", `url.http://127.0.0.1:9/evil/.insteadOf`, `${gitServer.url}/`], clone);
    writeFileSync(join(clone, "README.md"), "hello\n");
    agentExited(home, 0);

    const run = await courier(envFor(home, ws));

    expect(run.events[0]).toMatchObject({ status: "succeeded", repo: "acme/app" });
    expect(git(["--git-dir", bare, "show", `${BRANCH}:README.md`], root)).toBe("hello");
    expect(existsSync(marker)).toBe(false);
    expectNoToken(run);
    const forge = run.spawned.filter((s) => s.options.env.DELIVERY_TOKEN !== undefined);
    // The base's ls-remote and fetch, the ls-remote of the branch (new: no fetch of it), the push.
    expect(forge.map((s) => s.args[0])).toEqual(["ls-remote", "fetch", "ls-remote", "push"]);
    for (const s of run.spawned) {
      expect(s.file).toBe("git");
      expect(Object.values(s.options.env).filter((v) => v === TOKEN).length).toBe(
        s.options.env.DELIVERY_TOKEN !== undefined ? 1 : 0,
      );
      if (s.options.env.DELIVERY_TOKEN !== undefined) expect(s.options.cwd).not.toContain(ws);
    }
    expect(gitServer.requests.filter((r) => r.auth === "wrong")).toEqual([]);
  });

  it("runs none of the hooks and config commands spec.files planted in the clone's .git, and leaks no token", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    const markers = mkdtempSync(join(tmpdir(), "courier-markers-"));
    // Every command the planted files name leaves a marker (and the environment it saw).
    const leak = (name: string) => `env > ${markers}/${name}`;
    const hook = (name: string) => `#!/bin/sh\n${leak(`hook-${name}`)}\n`;
    const config = [
      "[core]",
      "\trepositoryformatversion = 0",
      "\tbare = false",
      `\thooksPath = ${clone}/.git/planted-hooks`,
      `\tfsmonitor = "${leak("fsmonitor")}; echo"`,
      `\tsshCommand = "${leak("ssh-command")}; false"`,
      `\taskPass = "${leak("askpass")}"`,
      `\tpager = "${leak("pager")}"`,
      `\teditor = "${leak("editor")}"`,
      "[credential]",
      `\thelper = "!f() { ${leak("credential-helper")}; }; f"`,
      `[url "http://127.0.0.1:9/evil/"]`,
      `\tinsteadOf = ${gitServer.url}/`,
      '[filter "leak"]',
      `\tclean = "sh -c '${leak("filter-clean")}; cat'"`,
      `\tprocess = "${leak("filter-process")}"`,
      "\trequired = true",
      "[commit]",
      "\tgpgSign = true",
      "[gpg]",
      `\tprogram = "${leak("gpg")}"`,
      "[diff]",
      `\texternal = "${leak("diff-external")}"`,
      '[remote "origin"]',
      "\turl = http://127.0.0.1:9/evil.git",
      "",
    ].join("\n");
    const planted: Record<string, string> = {
      "app/.git/config": config,
      "app/.git/hooks/pre-commit": hook("pre-commit"),
      "app/.git/hooks/pre-push": hook("pre-push"),
      "app/.git/hooks/reference-transaction": hook("reference-transaction"),
      "app/.git/planted-hooks/pre-push": hook("pre-push-via-hooksPath"),
      "app/.git/planted-hooks/post-commit": hook("post-commit-via-hooksPath"),
      "app/.git/info/attributes": "* filter=leak diff=leak\n",
    };
    const files = await startFileServer();
    closers.push(() => files.close());
    for (const [path, body] of Object.entries(planted)) files.route(`/${path}`, { status: 200, body });
    // The real init's files tool writes them, as an Agent's spec.files would.
    const sb = initSandbox();
    const init = await runInitCaptured(
      sb,
      sb.env({
        WORKSPACE_DIR: ws,
        AGENT_FILES: JSON.stringify(
          Object.keys(planted).map((path) => ({ path, url: `${files.url}/${path}` })),
        ),
      }),
      { isRoot: false },
    );
    sb.cleanup();
    expect(init.summary.at(-1)).toBe("init/succeeded");
    expect(readFileSync(join(clone, ".git", "config"), "utf8")).toBe(config);
    // The agent can make them executable (it owns the clone); the courier must not care.
    for (const path of Object.keys(planted).filter((p) => p.includes("hooks/")))
      chmodSync(join(ws, path), 0o755);
    writeFileSync(join(clone, "README.md"), "hello\n");
    agentExited(home, 0);

    const run = await courier(envFor(home, ws));

    expect(readdirSync(markers)).toEqual([]);
    expect(run.events[0]).toMatchObject({ status: "succeeded", repo: "acme/app", branch: BRANCH });
    expect(git(["--git-dir", bare, "show", `${BRANCH}:README.md`], root)).toBe("hello");
    expectNoToken(run);
    expect(gitServer.requests.filter((r) => r.auth === "wrong")).toEqual([]);
  });

  it("runs no command the clone's config names: a partial-clone remote's sshCommand behind a missing HEAD commit", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    const marker = join(home, "ssh-command-ran");
    // What two spec.files entries (or the agent itself) can write into the clone's .git/: a
    // promisor remote reached over ssh with a command of their choosing, and a HEAD naming a
    // commit the clone lacks, so reading HEAD would fetch it lazily.
    writeFileSync(
      join(clone, ".git", "config"),
      [
        "[core]",
        "\trepositoryformatversion = 1",
        "\tbare = false",
        `\tsshCommand = "env > ${marker}; false"`,
        "[extensions]",
        "\tpartialClone = evil",
        '[remote "evil"]',
        "\turl = ssh://attacker.test/x.git",
        "\tpromisor = true",
        '[remote "origin"]',
        `\turl = ${gitServer.repoUrl("acme/app")}`,
        "",
      ].join("\n"),
    );
    writeFileSync(join(clone, ".git", "refs", "heads", "main"), `${MISSING}\n`);
    writeFileSync(join(clone, "README.md"), "hello\n");
    agentExited(home, 0);

    const run = await courier(envFor(home, ws));

    expect(existsSync(marker)).toBe(false);
    expect(run.code).not.toBe(0);
    expect(run.events[0]).toMatchObject({ kind: "delivery", status: "failed", repo: "acme/app" });
    expect(String(run.events[0]?.reason)).toContain(
      `its HEAD names commit ${MISSING}, which is not in its objects`,
    );
    expect(pushes()).toEqual([]);
    for (const s of run.spawned) expect(s.options.env.GIT_ALLOW_PROTOCOL).toBeDefined();
  });

  it("never runs a git the agent planted in HOME/.local/bin, first on the run PATH", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    const marker = join(ws, "planted-git-ran");
    mkdirSync(join(home, ".local", "bin"), { recursive: true });
    writeFileSync(join(home, ".local", "bin", "git"), `#!/bin/sh\nenv > ${marker}\nexit 1\n`, {
      mode: 0o755,
    });
    writeFileSync(join(clone, "README.md"), "hello\n");
    agentExited(home, 0);

    const run = await courier(
      envFor(home, ws, { PATH: `${home}/.local/bin:${process.env.PATH ?? "/usr/bin:/bin"}` }),
    );

    expect(run.events[0]).toMatchObject({ status: "succeeded", repo: "acme/app" });
    expect(existsSync(marker)).toBe(false);
    for (const s of run.spawned) expect(s.options.env.PATH).not.toContain(home);
  });

  it("fails, naming the URL, when TARGET_REPO is empty and the declared URL is not on the GitHub server", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    writeFileSync(join(clone, "README.md"), "hello\n");
    agentExited(home, 0);
    const repos = JSON.stringify([{ name: "app", url: "https://gitlab.example.com/acme/app.git" }]);

    const run = await courier(envFor(home, ws, { TARGET_REPO: "", AGENT_REPOS: repos }));

    expect(run.code).not.toBe(0);
    expect(run.events[0]).toMatchObject({
      status: "failed",
      reason: `TARGET_REPO is empty and the declared repository URL https://gitlab.example.com/acme/app.git is not on ${new URL(gitServer.url).host}`,
    });
  });

  it("ignores the clone's origin: the agent pointing it elsewhere changes nothing", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    git(["remote", "set-url", "origin", "https://github.com/attacker/elsewhere.git"], clone);
    writeFileSync(join(clone, "README.md"), "hello\n");
    agentExited(home, 0);

    const run = await courier(envFor(home, ws, { TARGET_REPO: "" }));

    expect(run.events[0]).toMatchObject({ status: "succeeded", repo: "acme/app" });
  });

  it("fails clearly when AGENT_REPOS declares no repository", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    writeFileSync(join(clone, "README.md"), "hello\n");
    agentExited(home, 0);

    const run = await courier(envFor(home, ws, { AGENT_REPOS: "[]" }));

    expect(run.code).not.toBe(0);
    expect(run.events[0]).toMatchObject({
      status: "failed",
      reason: "AGENT_REPOS declares no repository: delivery needs resources.repos",
    });
    expect(run.spawned).toEqual([]);
  });

  it("takes the PR base from the declared ref when the target has that branch, never from the clone's config", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    git(["--git-dir", bare, "branch", "develop", "main"], root);
    // The agent points its branch's upstream at another branch: the PR must not follow it.
    git(["config", "branch.main.merge", "refs/heads/release"], clone);
    writeFileSync(join(clone, "README.md"), "hello\n");
    agentExited(home, 0);
    const declared = (ref: string) =>
      JSON.stringify([{ name: "app", url: gitServer.repoUrl("acme/app"), ref }]);

    const onBranch = await courier(envFor(home, ws, { AGENT_REPOS: declared("develop") }));
    expect(onBranch.events[0]).toMatchObject({ status: "succeeded" });
    expect(github.pulls.map((p) => p.base)).toEqual(["develop"]);

    github.closePull("acme", "app", 1);
    const onTag = await courier(envFor(home, ws, { AGENT_REPOS: declared("v1.0") }));
    expect(onTag.events[0]).toMatchObject({ status: "succeeded" });
    expect(github.pulls.map((p) => p.base)).toEqual(["develop", "main"]);
  });

  it("waits for the exit-code file that appears later, then delivers", async () => {
    await serveGit();
    const { workspace: ws, clone, home } = await workspace();
    writeFileSync(join(clone, "README.md"), "hello\n");
    let polls = 0;

    const run = await courier(envFor(home, ws), {
      pollMs: 1,
      sleep: async () => {
        polls += 1;
        if (polls === 3) agentExited(home, 0);
      },
    });

    expect(polls).toBe(3);
    expect(run.events[0]).toMatchObject({ status: "succeeded" });
  });

  it("fails with no-agent-result when the exit-code file does not appear by AGENT_DEADLINE_MS + 5 s", async () => {
    await serveGit();
    const { workspace: ws, home } = await workspace();
    let now = 1_000_000;
    const slept: number[] = [];

    const run = await courier(envFor(home, ws, { AGENT_DEADLINE_MS: "2000" }), {
      now: () => now,
      sleep: async (ms) => {
        slept.push(ms);
        now += ms;
      },
    });

    expect(run.events).toEqual([{ kind: "delivery", status: "failed", reason: "no-agent-result" }]);
    expect(run.code).not.toBe(0);
    expect(slept.reduce((a, b) => a + b, 0)).toBe(7000);
    expect(run.spawned).toEqual([]);
  });
});
