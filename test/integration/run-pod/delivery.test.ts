/**
 * End to end: pull-request delivery (docs/run-pod.md#delivery, docs/decisions.md D-47, D-48, D-49) through the controller, the real
 * init (cloning over smart HTTP with a read token), the real supervisor with a fake CLI that edits
 * the clone, and the real courier, all run on the real node. The forge is local: bare
 * repositories served by git's http-backend (test/fakes/git-http.ts) and the GitHub pulls API fake
 * (test/fakes/github.ts), which the controller's GITHUB_SERVER_URL / GITHUB_API_URL point the
 * courier at.
 *
 * The clone token (init) and the delivery token (courier) are different secrets, so the test can
 * tell which container had which: the delivery token must reach git only through the courier's
 * credential helper and the API only in its Authorization header, and appear in no argv, no pod
 * log, no other container's env, no status and no sink event.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Container } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../../src/core/types.js";
import { createBareRepo, type GitHttpServer, startGitHttpServer } from "../../fakes/git-http.js";
import { type FakeGitHub, startFakeGitHub } from "../../fakes/github.js";
import { debianStandInImage, podReachableHost } from "../../harness/context.js";
import {
  createAgent,
  createDefinition,
  createStation,
  finishedAgent,
  podLog,
  RUN_POD_SKIP,
  type RunPodEnv,
  runPod,
  SINK_HEADERS_KEY,
  startRunPodEnv,
} from "./setup.js";

const CLONE_TOKEN = `ghp_clone${randomBytes(10).toString("hex")}`;
const DELIVERY_TOKEN = `ghs_deliver${randomBytes(10).toString("hex")}`;
const DELIVERY_KEY = "github-token";
const HTML = "https://github.test";
/** Runs here wait for a clone, a CLI, a push and two API calls on a shared 2-core machine. */
const RUN_TIMEOUT_MS = 240_000;

let env: RunPodEnv;
let git: GitHttpServer;
let github: FakeGitHub;
let root: string;

beforeAll(async () => {
  if (RUN_POD_SKIP !== "") return;
  root = mkdtempSync(join(tmpdir(), "run-pod-delivery-"));
  createBareRepo(root, "acme/app", { "README.md": "helo world\n" });
  createBareRepo(root, "acme/protected", { "README.md": "protected\n" });
  git = await startGitHttpServer({
    root,
    token: CLONE_TOKEN,
    moreTokens: { delivery: DELIVERY_TOKEN },
    refusePushTo: ["acme/protected"],
    host: podReachableHost(),
  });
  github = await startFakeGitHub({
    token: DELIVERY_TOKEN,
    gitRoot: root,
    htmlUrl: HTML,
    host: podReachableHost(),
  });
  env = await startRunPodEnv(
    "run-pod-delivery",
    { GIT_TOKEN: CLONE_TOKEN, [DELIVERY_KEY]: DELIVERY_TOKEN },
    { GITHUB_API_URL: github.url, GITHUB_SERVER_URL: git.url },
  );
  const definition = (repo: string) => ({
    model: "claude-sonnet-4-5",
    resources: { repos: [{ name: "app", url: git.repoUrl(repo), token_secret: "GIT_TOKEN" }] },
    delivery: { pullRequest: { tokenSecret: DELIVERY_KEY, title: "Fix the {topic} README" } },
    output: { sinks: [{ type: "http", url: env.listener.url, headers_secret: SINK_HEADERS_KEY }] },
  });
  await createDefinition(env, "deliver", definition("acme/app"));
  await createDefinition(env, "deliver-protected", definition("acme/protected"));
  // The CLI runs in /workspace; the init cloned the repo to /workspace/app.
  const edit = (content: string) => ({ answer: "edited", files: { "app/README.md": content } });
  // Station containers run as non-root (docs/security.md#the-station-template-policy): a shell image needs a user.
  const envSidecar = {
    name: "sidecar",
    image: debianStandInImage(),
    command: ["/bin/sh", "-c", "env"],
    securityContext: { runAsUser: 1000 },
  };
  await createStation(env, "edit", "deliver", edit("hello world\n"), {}, [envSidecar]);
  await createStation(env, "edit-first", "deliver", edit("first run on the shared branch\n"));
  await createStation(env, "edit-second", "deliver", edit("second run on the shared branch\n"));
  await createStation(env, "edit-protected", "deliver-protected", edit("pushed?\n"));
  await createStation(env, "no-edit", "deliver", { answer: "nothing to change" });
  // The CLI (uid 1000) edits, then tries to record a success where the witness records the result.
  await createStation(env, "forge-result", "deliver", {
    files: { "app/README.md": "forged\n", "/run/ai-agent-result/exit-code": "0\n" },
  });
  // The CLI edits, then rewrites the clone's git config: a command git would run on status
  // (fsmonitor), a hooks directory of its own, and a push URL towards another repository.
  await createStation(env, "git-tricks", "deliver", {
    files: {
      "app/README.md": "an honest edit\n",
      "app/.git/config": [
        "[core]",
        "\trepositoryformatversion = 0",
        "\tbare = false",
        "\tfsmonitor = \"sh -c 'echo pwned > pwned-by-fsmonitor.txt'\"",
        "\thooksPath = .githooks",
        '[remote "origin"]',
        `\turl = ${git.repoUrl("acme/app")}`,
        `\tpushurl = ${git.repoUrl("acme/protected")}`,
        "",
      ].join("\n"),
      "app/.githooks/pre-commit": "#!/bin/sh\necho pwned > pwned-by-hook.txt\n",
    },
  });
  await createStation(env, "edit-then-fail", "deliver", {
    ...edit("half done\n"),
    exitCode: 3,
    terminal: false,
  });
});
afterAll(async () => {
  await env?.close();
  await git?.close();
  await github?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** Local git on a bare repository under root (asynchronous: the git server runs in this process). */
function bareGit(repo: string, args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(
      "git",
      ["--git-dir", join(root, `${repo}.git`), ...args],
      { encoding: "utf8", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", GIT_CONFIG_NOSYSTEM: "1" } },
      (err, stdout) => resolve({ code: err ? 1 : 0, stdout: stdout.trim() }),
    );
  });
}
const branchSha = async (repo: string, branch: string) => {
  const r = await bareGit(repo, ["rev-parse", "--verify", "-q", `refs/heads/${branch}`]);
  return r.code === 0 ? r.stdout : undefined;
};
const fileAt = async (repo: string, rev: string, path: string) =>
  (await bareGit(repo, ["show", `${rev}:${path}`])).stdout;

/** The bare delivery events of the courier container's log (what the controller reads back). */
async function courierEvents(agent: Agent): Promise<Record<string, unknown>[]> {
  return (await podLog(env, agent, "courier"))
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.kind === "delivery");
}

const sinkDeliveries = (agent: string) => env.listener.eventsFor(agent).filter((e) => e.kind === "delivery");

async function run(name: string, station: string, spec: Record<string, unknown> = {}): Promise<Agent> {
  await createAgent(env, name, station, spec);
  return finishedAgent(env, name, RUN_TIMEOUT_MS);
}

// The cases are independent (own Stations, Agents and branches): they run at the same time.
describe.skipIf(RUN_POD_SKIP !== "")("pull-request delivery on the local plane", () => {
  it.concurrent(
    "an edit is committed, pushed to agent/<name> and opened as a PR once; status.prUrl and the sink have it; the token stays in the courier",
    async () => {
      const agent = await run("fix-readme", "edit", { parameters: { topic: "app" } });
      expect(agent.status?.failureReason ?? "").toBe("");
      expect(agent.status?.phase).toBe("Succeeded");
      const opened = github.pulls.filter((p) => p.head === "agent/fix-readme");
      expect(opened).toHaveLength(1);
      const url = opened[0]?.htmlUrl ?? "";
      expect(url).toMatch(new RegExp(`^${HTML}/acme/app/pull/\\d+$`));
      expect(agent.status?.prUrl).toBe(url);

      const sha = await branchSha("acme/app", "agent/fix-readme");
      expect(sha).toBeDefined();
      expect(await fileAt("acme/app", sha as string, "README.md")).toBe("hello world");
      expect(await bareGit("acme/app", ["log", "-1", "--format=%an <%ae>|%s", sha as string])).toEqual({
        code: 0,
        stdout: "ai-agent <ai-agent@users.noreply.github.com>|Fix the app README",
      });
      expect((await bareGit("acme/app", ["rev-parse", `${sha}^`])).stdout).toBe(
        await branchSha("acme/app", "main"),
      );
      expect(github.pulls.filter((p) => p.head === "agent/fix-readme")).toMatchObject([
        {
          owner: "acme",
          repo: "app",
          base: "main",
          state: "open",
          title: "Fix the app README",
          htmlUrl: url,
        },
      ]);

      const event = {
        kind: "delivery",
        status: "succeeded",
        url,
        repo: "acme/app",
        branch: "agent/fix-readme",
      };
      expect(await courierEvents(agent)).toEqual([event]);
      expect(sinkDeliveries("fix-readme")).toEqual([event]);

      // The token: the clone used the clone token, the push and the API the delivery token …
      const authed = git.requests.filter((r) => r.status === 200);
      expect(authed.filter((r) => r.path.includes("git-receive-pack")).map((r) => r.tokenLabel)).toContain(
        "delivery",
      );
      expect(
        authed.filter((r) => r.path.includes("/acme/app.git/") && r.tokenLabel === "token").length,
      ).toBeGreaterThan(0);
      expect(github.requests.some((r) => r.headers.authorization === `Bearer ${DELIVERY_TOKEN}`)).toBe(true);
      // … and it appears nowhere else: argv and env of the CLI, pod logs, the pod spec of the other
      // containers (the kubelet resolves secretKeyRefs per container), status and sink events.
      const invocations = env.journal.entries().filter((e) => e.env.AGENT_NAME === "fix-readme");
      expect(invocations).toHaveLength(1);
      expect(JSON.stringify(invocations)).not.toContain(DELIVERY_TOKEN);
      for (const container of ["init", "agent", "courier", "sidecar"]) {
        expect(await podLog(env, agent, container), `${container} log`).not.toContain(DELIVERY_TOKEN);
      }
      expect(await podLog(env, agent, "sidecar")).toContain("HOSTNAME=");
      const pod = await runPod(env, "fix-readme");
      const containers: V1Container[] = [
        ...(pod?.spec?.initContainers ?? []),
        ...(pod?.spec?.containers ?? []),
      ];
      expect(containers.map((c) => c.name).sort()).toEqual(["agent", "courier", "init", "sidecar"]);
      for (const c of containers) {
        expect(JSON.stringify([c.command, c.args, c.env]), c.name).not.toContain(DELIVERY_TOKEN);
        const refs = (c.env ?? []).filter((e) => e.valueFrom?.secretKeyRef?.key === DELIVERY_KEY);
        expect(
          refs.map((e) => e.name),
          c.name,
        ).toEqual(c.name === "courier" ? ["DELIVERY_TOKEN"] : []);
      }
      expect(JSON.stringify(agent.status)).not.toContain(DELIVERY_TOKEN);
      expect(JSON.stringify(env.listener.received)).not.toContain(DELIVERY_TOKEN);
      expect(JSON.stringify(git.requests)).not.toContain(DELIVERY_TOKEN);
    },
    RUN_TIMEOUT_MS + 30_000,
  );

  it.concurrent(
    "a second Agent on the same spec.branch cannot take it over: its delivery fails, the first run's commit and PR stay (docs/security.md#deliveries)",
    async () => {
      const first = await run("shared-1", "edit-first", { branch: "agent/shared" });
      expect(first.status?.phase).toBe("Succeeded");
      const url = first.status?.prUrl ?? "";
      expect(url).toMatch(new RegExp(`^${HTML}/acme/app/pull/\\d+$`));
      const firstSha = await branchSha("acme/app", "agent/shared");
      expect(await fileAt("acme/app", "agent/shared", "README.md")).toBe("first run on the shared branch");

      const second = await run("shared-2", "edit-second", { branch: "agent/shared" });
      expect(second.status?.phase).toBe("Failed");
      expect(second.status?.failureReason).toContain(
        "branch agent/shared already exists in acme/app and was not created by this Agent; refusing to overwrite it",
      );
      expect(await branchSha("acme/app", "agent/shared")).toBe(firstSha);
      expect(github.pulls.filter((p) => p.head === "agent/shared")).toMatchObject([
        { state: "open", htmlUrl: url },
      ]);
      expect(await courierEvents(second)).toMatchObject([
        { kind: "delivery", status: "failed", repo: "acme/app", branch: "agent/shared" },
      ]);
    },
    2 * RUN_TIMEOUT_MS + 30_000,
  );

  it.concurrent.each(["feat/x", "fix/issue-128"])(
    "spec.branch %s: any branch git accepts is delivered, and its PR opened",
    async (branch) => {
      const name = `branch-${branch.replace(/[^a-z0-9]/g, "-")}`;
      const agent = await run(name, "edit", { branch });
      expect(agent.status?.phase).toBe("Succeeded");
      expect(agent.status?.prUrl ?? "").toMatch(new RegExp(`^${HTML}/acme/app/pull/\\d+$`));
      expect(await fileAt("acme/app", branch, "README.md")).toBe("hello world");
      expect(github.pulls.filter((p) => p.head === branch)).toHaveLength(1);
    },
    RUN_TIMEOUT_MS + 30_000,
  );

  it.concurrent(
    "an existing release branch is left untouched and the Agent fails saying why (docs/security.md#deliveries)",
    async () => {
      // release carries a commit of its own: the run's commit (on main) is no fast-forward of it.
      const identity = {
        GIT_AUTHOR_NAME: "r",
        GIT_AUTHOR_EMAIL: "r@example.test",
        GIT_COMMITTER_NAME: "r",
        GIT_COMMITTER_EMAIL: "r@example.test",
      };
      const tip = await new Promise<string>((resolve, reject) =>
        execFile(
          "git",
          [
            "--git-dir",
            join(root, "acme/app.git"),
            "commit-tree",
            "main^{tree}",
            "-p",
            "main",
            "-m",
            "release 1.0",
          ],
          { encoding: "utf8", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...identity } },
          (err, stdout) => (err ? reject(err) : resolve(stdout.trim())),
        ),
      );
      expect((await bareGit("acme/app", ["update-ref", "refs/heads/release", tip, ""])).code).toBe(0);

      const agent = await run("onto-release", "edit", { branch: "release" });

      expect(agent.status?.phase).toBe("Failed");
      expect(agent.status?.failureReason).toBe(
        "delivery failed: branch release already exists in acme/app and was not created by this Agent; refusing to overwrite it (the delivery is not a fast-forward of its tip; choose another spec.branch)",
      );
      expect(await branchSha("acme/app", "release")).toBe(tip);
      expect(github.pulls.filter((p) => p.head === "release")).toEqual([]);
    },
    RUN_TIMEOUT_MS + 30_000,
  );

  it.concurrent(
    "a refused push fails the Agent with delivery failed: <the courier's reason>, and opens no PR",
    async () => {
      const agent = await run("refused", "edit-protected");
      expect(agent.status?.phase).toBe("Failed");
      expect(agent.status?.exitCode).toBe(1);
      expect(agent.status?.prUrl ?? "").toBe("");
      const events = await courierEvents(agent);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        kind: "delivery",
        status: "failed",
        repo: "acme/protected",
        branch: "agent/refused",
      });
      const reason = String(events[0]?.reason);
      expect(reason).toMatch(/^push to acme\/protected branch agent\/refused failed: .*\b403\b/);
      expect(agent.status?.failureReason).toBe(`delivery failed: ${reason}`);
      expect(sinkDeliveries("refused")).toEqual(events);
      expect(await branchSha("acme/protected", "agent/refused")).toBeUndefined();
      expect(github.pulls.filter((p) => p.repo === "protected")).toEqual([]);
      expect(git.requests.some((r) => r.status === 403 && r.path.startsWith("/acme/protected.git/"))).toBe(
        true,
      );
    },
    RUN_TIMEOUT_MS + 30_000,
  );

  it.concurrent(
    "an agent that changes nothing ends Succeeded with an empty prUrl: the courier skips (no-changes)",
    async () => {
      const agent = await run("unchanged", "no-edit");
      expect(agent.status?.phase).toBe("Succeeded");
      expect(agent.status?.prUrl ?? "").toBe("");
      const skipped = {
        kind: "delivery",
        status: "skipped",
        reason: "no-changes",
        repo: "acme/app",
        branch: "agent/unchanged",
      };
      expect(await courierEvents(agent)).toEqual([skipped]);
      expect(sinkDeliveries("unchanged")).toEqual([skipped]);
      expect(await branchSha("acme/app", "agent/unchanged")).toBeUndefined();
      expect(github.pulls.filter((p) => p.head === "agent/unchanged")).toEqual([]);
    },
    RUN_TIMEOUT_MS + 30_000,
  );

  it.concurrent(
    "an agent cannot record its own result: its write to the witness's volume fails and nothing is delivered",
    async () => {
      const agent = await run("forger", "forge-result");
      expect(agent.status?.phase).toBe("Failed");
      expect(agent.status?.prUrl ?? "").toBe("");
      expect(await podLog(env, agent, "agent")).toContain("EACCES");
      expect(await courierEvents(agent)).toEqual([
        { kind: "delivery", status: "skipped", reason: "agent-failed" },
      ]);
      expect(await branchSha("acme/app", "agent/forger")).toBeUndefined();
    },
    RUN_TIMEOUT_MS + 30_000,
  );

  it.concurrent(
    "a clone whose .git/config the agent rewrote: the courier runs none of it and pushes the edit where the recipe says",
    async () => {
      const agent = await run("tricks", "git-tricks");
      expect(agent.status?.failureReason ?? "").toBe("");
      expect(agent.status?.phase).toBe("Succeeded");
      const sha = await branchSha("acme/app", "agent/tricks");
      expect(sha).toBeDefined();
      expect(await fileAt("acme/app", sha as string, "README.md")).toBe("an honest edit");
      const tree = (await bareGit("acme/app", ["ls-tree", "-r", "--name-only", sha as string])).stdout.split(
        "\n",
      );
      expect(tree.filter((f) => f.startsWith("pwned"))).toEqual([]);
      expect(await branchSha("acme/protected", "agent/tricks")).toBeUndefined();
      expect(github.pulls.filter((p) => p.head === "agent/tricks")).toMatchObject([{ repo: "app" }]);
    },
    RUN_TIMEOUT_MS + 30_000,
  );

  it.concurrent(
    "an agent that fails keeps its own failure and the courier skips (agent-failed), pushing nothing",
    async () => {
      const agent = await run("fails", "edit-then-fail");
      expect(agent.status?.phase).toBe("Failed");
      expect(agent.status?.exitCode).toBe(3);
      expect(agent.status?.failureReason).toBe("agent exited with code 3");
      expect(agent.status?.prUrl ?? "").toBe("");
      const skipped = { kind: "delivery", status: "skipped", reason: "agent-failed" };
      expect(await courierEvents(agent)).toEqual([skipped]);
      expect(sinkDeliveries("fails")).toEqual([skipped]);
      expect(await branchSha("acme/app", "agent/fails")).toBeUndefined();
      expect(github.pulls.filter((p) => p.head === "agent/fails")).toEqual([]);
    },
    RUN_TIMEOUT_MS + 30_000,
  );
});
