import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "tar";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FileServer, startFileServer } from "../../../test/support/http-files.js";
import {
  fakeExecutable,
  type InitSandbox,
  initSandbox,
  runInitCaptured,
} from "../../../test/support/init-sandbox.js";

const AUTH = "Bearer conv-s3cret-token";

let sb: InitSandbox;
let store: FileServer;
beforeEach(async () => {
  sb = initSandbox();
  store = await startFileServer();
  // The CLI is "installed" so the runs need no installer.
  fakeExecutable(sb.bin, "claude", "exit 0");
});
afterEach(async () => {
  await store.close();
  sb.cleanup();
});

async function archiveOf(
  files: Record<string, string>,
  options: { preservePaths?: boolean } = {},
): Promise<Buffer> {
  const dir = join(sb.root, `archive-src-${Math.random().toString(16).slice(2)}`, "home");
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  const file = join(tmpdir(), `conv-${Math.random().toString(16).slice(2)}.tar.gz`);
  await create({ gzip: true, file, cwd: dir, portable: true, ...options }, Object.keys(files));
  const bytes = readFileSync(file);
  rmSync(file);
  return bytes;
}

function env(extra: Record<string, string>) {
  return sb.env({
    AGENT_MODEL: "claude-sonnet-4-6",
    AGENT_CONVERSATION_SOURCE: `${store.url}/conversations`,
    AGENT_CONVERSATION_AUTH: "conv-auth",
    "conv-auth": AUTH,
    ...extra,
  });
}

describe("tool conversation (docs/run-pod.md#the-init, docs/decisions.md D-44, D-54)", () => {
  it("restores <source>/<id> into $HOME with the auth header from the key AGENT_CONVERSATION_AUTH names", async () => {
    const body = await archiveOf({ ".claude/projects/-workspace/s1.jsonl": '{"type":"user"}\n' });
    store.route("/conversations/s1", { status: 200, body, headers: { "Content-Type": "application/gzip" } });
    const run = await runInitCaptured(sb, env({ AGENT_CONVERSATION_ID: "s1" }));
    expect(run.code).toBe(0);
    expect(readFileSync(join(sb.home, ".claude", "projects", "-workspace", "s1.jsonl"), "utf8")).toBe(
      '{"type":"user"}\n',
    );
    expect(store.requests[0]?.headers.authorization).toBe(AUTH);
    expect(run.summary.slice(-2)).toEqual(["init/running tool=conversation", "init/succeeded"]);
  });

  it("conversation.id is best-effort: a missing archive is logged and the init succeeds", async () => {
    const run = await runInitCaptured(sb, env({ AGENT_CONVERSATION_ID: "gone" }));
    expect(run.code).toBe(0);
    expect(run.summary.at(-1)).toBe("init/succeeded");
    expect(run.stderr).toContain(
      "[init] conversation: cannot restore gone: no saved conversation (HTTP 404); continuing without it",
    );
  });

  it("resumeSession: a missing archive fails reason=restore, exit 1, naming the session last", async () => {
    const run = await runInitCaptured(sb, env({ AGENT_RESUME_SESSION: "sess-9" }));
    expect(run.code).toBe(1);
    expect(run.summary.slice(-2)).toEqual([
      "init/running tool=conversation",
      "init/failed tool=conversation reason=restore",
    ]);
    expect(run.stderr.at(-1)).toBe(
      "[init] conversation: cannot restore session sess-9: no saved conversation (HTTP 404)",
    );
    expect(run.stderr.join("\n")).not.toContain("conv-s3cret");
  });

  it("resumeSession: an unfetchable archive (server error) fails too", async () => {
    store.route("/conversations/sess-9", { status: 500 });
    const run = await runInitCaptured(sb, env({ AGENT_RESUME_SESSION: "sess-9" }));
    expect(run.code).toBe(1);
    expect(run.stderr.at(-1)).toBe(
      "[init] conversation: cannot restore session sess-9: the server answered HTTP 500",
    );
  });

  it("resumeSession: an archive with an entry escaping $HOME is refused and nothing is written outside", async () => {
    const body = await archiveOf({ "../escaped.txt": "evil" }, { preservePaths: true });
    store.route("/conversations/sess-9", { status: 200, body });
    const run = await runInitCaptured(sb, env({ AGENT_RESUME_SESSION: "sess-9" }));
    expect(run.code).toBe(1);
    expect(run.summary.at(-1)).toBe("init/failed tool=conversation reason=restore");
    expect(run.stderr.at(-1)).toBe(
      "[init] conversation: cannot restore session sess-9: archive entry ../escaped.txt contains a '..' component",
    );
    expect(existsSync(join(sb.root, "escaped.txt"))).toBe(false);
  });

  it("resumeSession: an archive that writes elsewhere in $HOME than the vendor's state dir is refused", async () => {
    const body = await archiveOf({
      ".claude/projects/s.jsonl": "{}",
      ".local/bin/claude": "#!/bin/sh\necho planted",
    });
    store.route("/conversations/sess-9", { status: 200, body });
    const run = await runInitCaptured(sb, env({ AGENT_RESUME_SESSION: "sess-9" }));
    expect(run.code).toBe(1);
    expect(run.stderr.at(-1)).toBe(
      "[init] conversation: cannot restore session sess-9: archive entry .local/bin/claude is outside .claude",
    );
    expect(existsSync(join(sb.home, ".claude", "projects", "s.jsonl"))).toBe(false);
  });

  it("sends a header block (Name: value) as given, and restores into the vendor's state dir", async () => {
    fakeExecutable(sb.bin, "gemini", "exit 0");
    const body = await archiveOf({ ".gemini/chats/s.json": "{}" });
    store.route("/conversations/r1", { status: 200, body });
    const run = await runInitCaptured(
      sb,
      env({ AGENT_MODEL: "gemini-2.5-pro", AGENT_RESUME_SESSION: "r1", "conv-auth": "X-Api-Key: k-123456" }),
    );
    expect(run.code).toBe(0);
    expect(run.commands).toEqual([]);
    expect(store.requests[0]?.headers["x-api-key"]).toBe("k-123456");
    expect(store.requests[0]?.headers.authorization).toBeUndefined();
    expect(readFileSync(join(sb.home, ".gemini", "chats", "s.json"), "utf8")).toBe("{}");
  });
});

describe("tool skills (docs/run-pod.md#the-init), best-effort", () => {
  it("stages the workspace's skills and fetches the source's settings and skills", async () => {
    mkdirSync(join(sb.workspace, "repo", ".claude", "skills", "lint"), { recursive: true });
    writeFileSync(join(sb.workspace, "repo", ".claude", "skills", "lint", "SKILL.md"), "lint");
    mkdirSync(join(sb.workspace, ".claude", "skills", "own"), { recursive: true });
    writeFileSync(join(sb.workspace, ".claude", "skills", "own", "SKILL.md"), "own");
    store.route("/skills/settings.json", { status: 200, body: '{"a":1}' });
    store.route("/skills/review.tar.gz", {
      status: 200,
      body: await archiveOf({ "review/SKILL.md": "review" }),
    });
    const run = await runInitCaptured(
      sb,
      sb.env({
        AGENT_MODEL: "claude-x",
        AGENT_SKILLS: JSON.stringify(["review", "missing", "../bad"]),
        AGENT_SKILLS_SOURCE: `${store.url}/skills`,
      }),
    );
    expect(run.code).toBe(0);
    const skills = join(sb.home, ".claude", "skills");
    expect(readFileSync(join(skills, "lint", "SKILL.md"), "utf8")).toBe("lint");
    expect(readFileSync(join(skills, "own", "SKILL.md"), "utf8")).toBe("own");
    expect(readFileSync(join(skills, "review", "SKILL.md"), "utf8")).toBe("review");
    expect(readFileSync(join(sb.home, ".claude", "settings.json"), "utf8")).toBe('{"a":1}');
    expect(store.requests.map((r) => r.path)).toEqual([
      "/skills/settings.json",
      "/skills/review.tar.gz",
      "/skills/missing.tar.gz",
    ]);
    expect(run.stderr).toContain(
      "[init] skills: cannot install missing: the server answered HTTP 404; continuing",
    );
    expect(run.stderr).toContain('[init] skills: "../bad" is not a valid skill name; skipped');
  });

  it("docs/decisions.md D-57: a non-Claude vendor logs skills as ignored and fetches nothing", async () => {
    fakeExecutable(sb.bin, "codex", "exit 0");
    const run = await runInitCaptured(
      sb,
      sb.env({
        AGENT_MODEL: "gpt-5",
        AGENT_SKILLS: '["review"]',
        AGENT_SKILLS_SOURCE: `${store.url}/skills`,
      }),
    );
    expect(run.code).toBe(0);
    expect(run.stderr).toContain("[init] resources.skills is not supported by codex; ignored");
    expect(store.requests).toEqual([]);
  });
});
