import { spawnSync } from "node:child_process";
import { lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { closedPort, type FileServer, startFileServer } from "../../../test/support/http-files.js";
import {
  fakeExecutable,
  type InitSandbox,
  initSandbox,
  runInitCaptured,
} from "../../../test/support/init-sandbox.js";

let sb: InitSandbox;
beforeEach(() => {
  sb = initSandbox();
});
afterEach(() => sb.cleanup());

describe("init sequence (docs/run-pod.md#the-init)", () => {
  it("exec: started, supervisor, skills, succeeded; the same events reach the sink, in order", async () => {
    const run = await runInitCaptured(sb, sb.env());
    expect(run.code).toBe(0);
    expect(run.summary).toEqual([
      "init/started",
      "init/running tool=supervisor",
      "init/running tool=skills",
      "init/succeeded",
    ]);
    expect(run.stdout[0]).toBe('{"kind":"lifecycle","phase":"init","status":"started"}');
    expect(run.sinkEvents).toEqual(run.events);
    expect(JSON.parse(run.sinkText.split("\n")[0] ?? "{}").source).toEqual({
      agent: "a1",
      station: "s1",
      pod: "agent-job-a1-xyz",
      namespace: "ai-agents",
    });
  });

  it("copies the supervisor to $HOME/bin/ai-agent-supervisor with mode 0755", async () => {
    const run = await runInitCaptured(sb, sb.env());
    expect(run.code).toBe(0);
    const target = join(sb.home, "bin", "ai-agent-supervisor");
    expect(readFileSync(target, "utf8")).toBe("#!/bin/sh\necho supervisor\n");
    expect(statSync(target).mode & 0o777).toBe(0o755);
    // The witness, the agent container's command, is the same executable under its own name.
    expect(statSync(join(sb.home, "bin", "ai-agent-witness")).ino).toBe(statSync(target).ino);
  });

  it("copies the reaper from beside the supervisor when there is one, and goes on without it", async () => {
    const source = sb.env().AGENT_SUPERVISOR_SOURCE ?? "";
    const without = await runInitCaptured(sb, sb.env());
    expect(without.code).toBe(0);
    expect(without.stderr.join("\n")).toContain("orphaned processes of the agent will not be reaped");
    writeFileSync(join(dirname(source), "ai-agent-reaper"), "#!/bin/sh\necho reaper\n", { mode: 0o755 });
    const run = await runInitCaptured(sb, sb.env());
    expect(run.code).toBe(0);
    const reaper = join(sb.home, "bin", "ai-agent-reaper");
    expect(readFileSync(reaper, "utf8")).toBe("#!/bin/sh\necho reaper\n");
    expect(statSync(reaper).mode & 0o777).toBe(0o755);
  });

  it("a missing supervisor fails tool=supervisor, exit 1, the cause naming the source last", async () => {
    const run = await runInitCaptured(sb, sb.env({ AGENT_SUPERVISOR_SOURCE: join(sb.root, "nope") }));
    expect(run.code).toBe(1);
    expect(run.summary.slice(-1)).toEqual(["init/failed tool=supervisor exitCode=1"]);
    expect(run.stderr.at(-1)).toBe(
      `[init] supervisor: cannot copy ${join(sb.root, "nope")} to ${join(sb.home, "bin", "ai-agent-supervisor")}: ENOENT`,
    );
  });

  it("every event of a full run, in order", async () => {
    const files = await startFileServer();
    try {
      files.route("/a", { status: 200, body: "a" });
      files.route("/conv/s1", { status: 404 });
      fakeExecutable(sb.bin, "claude", "exit 0");
      const repoDir = join(sb.root, "src-repo");
      mkdirSync(repoDir);
      const env = sb.env({
        AGENT_MODEL: "claude-sonnet-4-6",
        AGENT_REPOS: JSON.stringify([{ name: "app", url: repoDir }]),
        AGENT_FILES: JSON.stringify([{ path: "a.md", url: `${files.url}/a` }]),
        AGENT_CONVERSATION_SOURCE: `${files.url}/conv`,
        AGENT_CONVERSATION_ID: "s1",
      });
      // A local, empty git repo is enough to clone.
      spawnSync("git", ["init", "--quiet", repoDir]);
      const run = await runInitCaptured(sb, env);
      expect(run.summary).toEqual([
        "init/started",
        "init/running tool=supervisor",
        "init/running tool=git",
        "init/running tool=files",
        "init/running tool=skills",
        "init/running tool=conversation",
        "init/succeeded",
      ]);
      expect(run.code).toBe(0);
    } finally {
      await files.close();
    }
  });
});

describe("prerequisites (docs/run-pod.md#the-init)", () => {
  it("missing executables and no package manager: reason=no-package-manager, exit 2", async () => {
    const run = await runInitCaptured(sb, sb.env({ AGENT_REPOS: '[{"name":"a","url":"u"}]', PATH: sb.bin }));
    expect(run.code).toBe(2);
    expect(run.summary).toEqual(["init/started", "init/failed reason=no-package-manager"]);
    expect(run.stderr.at(-1)).toBe(
      "[init] prerequisites: git missing and no package manager (apt-get, dnf, apk) on PATH",
    );
  });

  it("installs with the first package manager; a failing step is reason=install with its code", async () => {
    fakeExecutable(sb.bin, "apt-get", 'echo "apt-get $*"; [ "$1" = update ] && exit 0; exit 100');
    fakeExecutable(sb.bin, "apk", "exit 0");
    const run = await runInitCaptured(sb, sb.env({ AGENT_REPOS: '[{"name":"a","url":"u"}]', PATH: sb.bin }));
    expect(run.code).toBe(100);
    expect(run.summary).toEqual([
      "init/started",
      "init/installing tool=apt",
      "init/failed tool=apt reason=install exitCode=100",
    ]);
    expect(run.commands.map((c) => c.argv.join(" "))).toEqual([
      "apt-get update",
      "apt-get install -y --no-install-recommends git ca-certificates",
    ]);
    expect(run.commands[1]?.env.DEBIAN_FRONTEND).toBe("noninteractive");
    expect(run.stderr.at(-1)).toBe(
      "[init] prerequisites: apt-get install -y --no-install-recommends git ca-certificates exited with code 100",
    );
  });

  it("still missing after a successful install: reason=prerequisites, exit 2", async () => {
    fakeExecutable(sb.bin, "dnf", "exit 0");
    const run = await runInitCaptured(sb, sb.env({ AGENT_REPOS: '[{"name":"a","url":"u"}]', PATH: sb.bin }));
    expect(run.code).toBe(2);
    expect(run.summary).toEqual([
      "init/started",
      "init/installing tool=dnf",
      "init/failed reason=prerequisites",
    ]);
    expect(run.commands.map((c) => c.argv.join(" "))).toEqual(["dnf install -y git ca-certificates"]);
    expect(run.stderr.at(-1)).toBe("[init] prerequisites: git still missing after installing with dnf");
  });

  it("nothing missing: no install", async () => {
    const run = await runInitCaptured(sb, sb.env({ AGENT_REPOS: "[]" }));
    expect(run.summary).not.toContain("init/installing tool=apt");
    expect(run.commands).toEqual([]);
  });
});

describe("the agent CLI is not the init's (docs/agent-clis.md)", () => {
  it("a CLI run whose CLI is nowhere on PATH runs no installer and no CLI tool", async () => {
    const run = await runInitCaptured(sb, sb.env({ AGENT_MODEL: "opencode", PATH: sb.bin }));
    expect(run.code).toBe(0);
    expect(run.summary).toEqual([
      "init/started",
      "init/running tool=supervisor",
      "init/running tool=skills",
      "init/succeeded",
    ]);
    expect(run.commands).toEqual([]);
  });
});

describe("re-own to 1000:1000 (docs/run-pod.md#the-init)", () => {
  it.runIf(process.getuid?.() === 0)(
    "lchowns HOME and the workspace without following symlinks",
    async () => {
      const outside = join(sb.root, "outside.txt");
      writeFileSync(outside, "root's");
      mkdirSync(join(sb.workspace, "repo"));
      writeFileSync(join(sb.workspace, "repo", "a.txt"), "a");
      symlinkSync(outside, join(sb.workspace, "repo", "link"));
      symlinkSync(sb.root, join(sb.workspace, "dir-link"));
      const run = await runInitCaptured(sb, sb.env());
      expect(run.code).toBe(0);
      for (const p of [
        sb.workspace,
        join(sb.workspace, "repo", "a.txt"),
        join(sb.home, "bin", "ai-agent-supervisor"),
      ]) {
        expect([statSync(p).uid, statSync(p).gid]).toEqual([1000, 1000]);
      }
      expect(lstatSync(join(sb.workspace, "repo", "link")).uid).toBe(1000);
      expect(lstatSync(join(sb.workspace, "dir-link")).uid).toBe(1000);
      expect(statSync(outside).uid).toBe(0);
      expect(statSync(sb.root).uid).toBe(0);
    },
  );

  it("does not re-own when not root", async () => {
    writeFileSync(join(sb.workspace, "a.txt"), "a");
    const before = statSync(join(sb.workspace, "a.txt")).uid;
    const run = await runInitCaptured(sb, sb.env(), { isRoot: false });
    expect(run.code).toBe(0);
    expect(statSync(join(sb.workspace, "a.txt")).uid).toBe(before);
  });
});

describe("the last line on a failure (docs/decisions.md D-23)", () => {
  it("is the [init] cause even when a dead http sink logs after it", async () => {
    const port = await closedPort();
    const env = sb.env({
      AGENT_SINKS: JSON.stringify([{ type: "http", url: `http://127.0.0.1:${port}/events` }]),
      AGENT_SINK_RETRY_ATTEMPTS: "1",
      AGENT_SUPERVISOR_SOURCE: join(sb.root, "nope"),
    });
    const run = await runInitCaptured(sb, env);
    expect(run.code).toBe(1);
    expect(run.stderr.some((l) => l.includes("http sink failed"))).toBe(true);
    expect(run.stderr.at(-1)).toMatch(/^\[init\] supervisor: cannot copy /);
  });

  it("delivers the failure event to an http sink before returning", async () => {
    const sink: FileServer = await startFileServer();
    try {
      const bodies: string[] = [];
      sink.route("/events", (req) => {
        let body = "";
        req.on("data", (c: Buffer) => {
          body += c.toString();
        });
        req.on("end", () => bodies.push(body));
        return { status: 204 };
      });
      const run = await runInitCaptured(
        sb,
        sb.env({
          AGENT_SINKS: JSON.stringify([{ type: "http", url: `${sink.url}/events` }]),
          AGENT_SUPERVISOR_SOURCE: join(sb.root, "nope"),
        }),
      );
      expect(run.code).toBe(1);
      expect(sink.requests.map((r) => r.method)).toEqual(["POST", "POST", "POST"]);
      expect(sink.requests).toHaveLength(run.events.length);
    } finally {
      await sink.close();
    }
  });
});
