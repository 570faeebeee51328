/**
 * End to end: a repository cloned by the real init with a token from `agent-secrets`. The token
 * reaches git through the credential helper only: it appears in no CLI argv (fake CLI journal), in
 * no container log, not in status, and not in the env of a Station sidecar container.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBareRepo, type GitHttpServer, startGitHttpServer } from "../../fakes/git-http.js";
import { debianStandInImage, podReachableHost } from "../../harness/context.js";
import {
  createAgent,
  createDefinition,
  createStation,
  finishedAgent,
  podLog,
  RUN_POD_SKIP,
  type RunPodEnv,
  startRunPodEnv,
} from "./setup.js";

const TOKEN = `ghp_${randomBytes(12).toString("hex")}`;
let env: RunPodEnv;
let git: GitHttpServer;
let root: string;

beforeAll(async () => {
  if (RUN_POD_SKIP !== "") return;
  root = mkdtempSync(join(tmpdir(), "run-pod-repo-"));
  createBareRepo(root, "acme/app", { "README.md": "app readme from the clone\n" });
  git = await startGitHttpServer({ root, token: TOKEN, host: podReachableHost() });
  env = await startRunPodEnv("run-pod-repo", { GIT_TOKEN: TOKEN });
});
afterAll(async () => {
  await env?.close();
  await git?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe.skipIf(RUN_POD_SKIP !== "")("a repository cloned with a token", () => {
  it("is cloned before the agent runs, and the token shows up in no argv, log, status or sidecar env", async () => {
    await createDefinition(env, "def", {
      model: "claude-sonnet-4-5",
      resources: { repos: [{ name: "app", url: git.repoUrl("acme/app"), token_secret: "GIT_TOKEN" }] },
    });
    await createStation(env, "stn", "def", { answerFromFile: "app/README.md" }, {}, [
      // Station containers run as non-root (docs/security.md#the-station-template-policy).
      {
        name: "sidecar",
        image: debianStandInImage(),
        command: ["/bin/sh", "-c", "env"],
        securityContext: { runAsUser: 1000 },
      },
    ]);
    await createAgent(env, "clone", "stn");
    const agent = await finishedAgent(env, "clone");
    expect(agent.status?.phase).toBe("Succeeded");
    expect(agent.status?.output).toContain("app readme from the clone");
    // The server saw the token (as HTTP Basic from the credential helper) and no unauthenticated success.
    expect(git.requests.some((r) => r.auth === "ok" && r.status === 200)).toBe(true);

    const invocations = env.journal.entries().filter((e) => e.env.AGENT_NAME === "clone");
    expect(invocations.length).toBe(1);
    expect(invocations.flatMap((e) => e.argv).join(" ")).not.toContain(TOKEN);
    for (const container of ["init", "agent", "sidecar"]) {
      expect(await podLog(env, agent, container), `${container} log`).not.toContain(TOKEN);
    }
    expect(await podLog(env, agent, "sidecar")).toContain("HOSTNAME=");
    expect(JSON.stringify(agent.status)).not.toContain(TOKEN);
  });
});
