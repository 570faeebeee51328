/**
 * End to end: `spec.files` are downloaded by the real init before the agent starts (the fake CLI
 * answers with the file's contents), with the header block from `headers_secret`; a `..` path, a
 * path through a symlink carried by a cloned repo, a 404 and an unreachable URL fail the Agent
 * before the agent runs, with a reason that names the path and never the header.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../../src/core/types.js";
import { type GitHttpServer, startGitHttpServer } from "../../fakes/git-http.js";
import { podReachableHost } from "../../harness/context.js";
import {
  createAgent,
  createDefinition,
  createStation,
  finishedAgent,
  RUN_POD_SKIP,
  type RunPodEnv,
  startRunPodEnv,
} from "./setup.js";

const FILES_HEADER_VALUE = "files-header-value-7f3a";
const BRIEF = "# Brief\nFix the login page.\n";

let env: RunPodEnv;
let files: Server;
let filesUrl: string;
let git: GitHttpServer;
let gitRoot: string;

/** A bare repo whose only commit holds `outside` → /tmp (a symlink out of the workspace). */
function createSymlinkRepo(root: string, name: string): void {
  const work = mkdtempSync(join(tmpdir(), "symlink-repo-"));
  const run = (args: string[], cwd: string) => {
    const r = spawnSync("git", args, {
      cwd,
      encoding: "utf8",
      env: {
        PATH: "/usr/bin:/bin",
        HOME: cwd,
        GIT_AUTHOR_NAME: "t",
        GIT_AUTHOR_EMAIL: "t@example.test",
        GIT_COMMITTER_NAME: "t",
        GIT_COMMITTER_EMAIL: "t@example.test",
      },
    });
    if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  };
  run(["init", "--quiet", "--initial-branch=main"], work);
  symlinkSync("/tmp", join(work, "outside"));
  writeFileSync(join(work, "README.md"), "links\n");
  run(["add", "--all"], work);
  run(["commit", "--quiet", "-m", "symlink"], work);
  const bare = join(root, `${name}.git`);
  run(["init", "--quiet", "--bare", "--initial-branch=main", bare], root);
  run(["push", "--quiet", bare, "main:main"], work);
  rmSync(work, { recursive: true, force: true });
}

beforeAll(async () => {
  if (RUN_POD_SKIP !== "") return;
  files = createServer((req, res) => {
    if (req.headers["x-files-auth"] !== FILES_HEADER_VALUE) return void res.writeHead(401).end("no auth");
    if (req.url === "/brief.md")
      return void res.writeHead(200, { "content-type": "text/markdown" }).end(BRIEF);
    res.writeHead(404).end("not found");
  });
  await new Promise<void>((r) => files.listen(0, podReachableHost(), () => r()));
  filesUrl = `http://${podReachableHost()}:${(files.address() as AddressInfo).port}`;
  gitRoot = mkdtempSync(join(tmpdir(), "run-pod-git-"));
  createSymlinkRepo(gitRoot, "links");
  git = await startGitHttpServer({ root: gitRoot, host: podReachableHost() });
  env = await startRunPodEnv("run-pod-files", { "files-auth": `X-Files-Auth: ${FILES_HEADER_VALUE}\n` });
  await createDefinition(env, "def", { model: "claude-sonnet-4-5" });
  await createDefinition(env, "def-links", {
    model: "claude-sonnet-4-5",
    resources: { repos: [{ name: "links", url: git.repoUrl("links") }] },
  });
  await createStation(env, "stn", "def", { answerFromFile: "notes/brief.md" });
  await createStation(env, "stn-links", "def-links", { answer: "should not run" });
});
afterAll(async () => {
  await env?.close();
  await git?.close();
  await new Promise<void>((r) => (files ? files.close(() => r()) : r()));
  if (gitRoot) rmSync(gitRoot, { recursive: true, force: true });
});

describe.skipIf(RUN_POD_SKIP !== "")("spec.files", () => {
  it("downloads each file with its header block before the agent starts", async () => {
    await createAgent(env, "fetch-ok", "stn", {
      files: [{ path: "notes/brief.md", url: `${filesUrl}/brief.md`, headers_secret: "files-auth" }],
    });
    const agent = await finishedAgent(env, "fetch-ok");
    expect(agent.status?.phase).toBe("Succeeded");
    // The fake CLI answered with the file's contents: it was there when the agent started.
    expect(agent.status?.output).toContain(JSON.stringify(BRIEF).slice(1, -1));
    const invocation = env.journal.entries().find((e) => e.env.AGENT_NAME === "fetch-ok");
    // The references and their header stay with the init container.
    expect(invocation?.env.AGENT_FILES).toBeUndefined();
    expect(invocation?.env["files-auth"]).toBeUndefined();
  });

  const failures: [string, () => Record<string, unknown>, string][] = [
    [
      "a path escaping through ..",
      () => ({ path: "../escape.txt", url: `${filesUrl}/brief.md` }),
      "../escape.txt",
    ],
    [
      "a 404",
      () => ({ path: "notes/missing.md", url: `${filesUrl}/missing.md`, headers_secret: "files-auth" }),
      "notes/missing.md",
    ],
    [
      "an unreachable URL",
      () => ({
        path: "notes/far.md",
        url: "http://127.0.0.1:1/far.md",
        headers_secret: "files-auth",
      }),
      "notes/far.md",
    ],
  ];

  it.concurrent.each(failures)(
    "%s fails the Agent before the agent runs, naming the path",
    async (_, file, path) => {
      const name = `fetch-${path.replace(/[^a-z]/g, "")}`;
      await createAgent(env, name, "stn", { files: [file()] });
      const agent: Agent = await finishedAgent(env, name);
      expect(agent.status?.phase).toBe("Failed");
      expect(agent.status?.failureReason).toContain(path);
      expect(JSON.stringify(agent.status)).not.toContain(FILES_HEADER_VALUE);
      expect(env.journal.entries().some((e) => e.env.AGENT_NAME === name)).toBe(false);
    },
  );

  it("a path through a symlink a cloned repo carries fails the Agent, naming the path", async () => {
    await createAgent(env, "fetch-symlink", "stn-links", {
      files: [
        { path: "links/outside/planted.txt", url: `${filesUrl}/brief.md`, headers_secret: "files-auth" },
      ],
    });
    const agent = await finishedAgent(env, "fetch-symlink");
    expect(agent.status?.phase).toBe("Failed");
    expect(agent.status?.failureReason).toContain("links/outside/planted.txt");
    expect(JSON.stringify(agent.status)).not.toContain(FILES_HEADER_VALUE);
    expect(env.journal.entries().some((e) => e.env.AGENT_NAME === "fetch-symlink")).toBe(false);
  });
});
