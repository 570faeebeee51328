// @module-tag slow
import { existsSync, mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBareRepo, type GitHttpServer, startGitHttpServer } from "../../../test/fakes/git-http.js";
import { type FileServer, startFileServer } from "../../../test/support/http-files.js";
import {
  createBareRepoFrom,
  type InitSandbox,
  initSandbox,
  runInitCaptured,
} from "../../../test/support/init-sandbox.js";
import { checkoutArgv, cloneArgv } from "./tools/git.js";

const TOKEN = "ghs_T0kenValue_4f9a1c";

let sb: InitSandbox;
let git: GitHttpServer;
let sink: FileServer;
let sinkBodies: string[];
beforeEach(async () => {
  sb = initSandbox();
  const repos = join(sb.root, "remote");
  mkdirSync(repos);
  createBareRepo(repos, "acme/app", { "README.md": "# app\n", "src/main.ts": "export {};\n" });
  git = await startGitHttpServer({ root: repos, token: TOKEN });
  sink = await startFileServer();
  sinkBodies = [];
  sink.route("/events", (req) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => sinkBodies.push(body));
    return { status: 204 };
  });
});
afterEach(async () => {
  await git.close();
  await sink.close();
  sb.cleanup();
});

function envWith(repos: unknown[], extra: Record<string, string> = {}) {
  return sb.env({
    AGENT_REPOS: JSON.stringify(repos),
    AGENT_SINKS: JSON.stringify([
      { type: "file", path: sb.sinkFile },
      { type: "http", url: `${sink.url}/events` },
    ]),
    ...extra,
  });
}

describe("tool git (docs/run-pod.md#the-init)", () => {
  it("clones with a token that never appears in argv, output, events or sinks", async () => {
    // Credentials in the URL are stripped too: the helper is the only source of auth.
    const url = git.repoUrl("acme/app").replace("http://", "http://someone:url-pass-123@");
    const run = await runInitCaptured(
      sb,
      envWith([{ name: "app", url, ref: "main", token_secret: "GH_PAT" }], { GH_PAT: TOKEN }),
    );
    expect(run.code).toBe(0);
    expect(readFileSync(join(sb.workspace, "app", "README.md"), "utf8")).toBe("# app\n");
    expect(git.requests.some((r) => r.auth === "ok")).toBe(true);

    const argv = run.commands.flatMap((c) => c.argv).join("\n");
    const everything = [
      argv,
      run.stdout.join("\n"),
      run.stderr.join("\n"),
      run.sinkText,
      sinkBodies.join("\n"),
    ];
    for (const text of everything) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain("url-pass-123");
    }
    expect(sinkBodies.length).toBe(run.events.length);
    expect(run.commands.map((c) => c.argv[1])).toEqual(["clone", "-C"]);
    expect(run.commands[0]?.argv.slice(-3)).toEqual([
      "--",
      git.repoUrl("acme/app"),
      join(sb.workspace, "app"),
    ]);
    expect(run.commands[1]?.argv).toEqual(["git", "-C", join(sb.workspace, "app"), "checkout", "main"]);
  });

  it("writes the helper into the clone's .git/config unexpanded, so later fetches authenticate", async () => {
    const run = await runInitCaptured(
      sb,
      envWith([{ name: "app", url: git.repoUrl("acme/app"), token_secret: "GH_PAT" }], { GH_PAT: TOKEN }),
    );
    expect(run.code).toBe(0);
    const config = readFileSync(join(sb.workspace, "app", ".git", "config"), "utf8");
    expect(config).toContain("$GH_PAT");
    expect(config).not.toContain(TOKEN);
  });

  it("a rejected token fails tool=git with git's exit code, naming the repo last", async () => {
    const run = await runInitCaptured(
      sb,
      envWith([{ name: "app", url: git.repoUrl("acme/app"), token_secret: "GH_PAT" }], { GH_PAT: "wrong" }),
    );
    expect(run.code).toBe(128);
    expect(run.summary.slice(-2)).toEqual(["init/running tool=git", "init/failed tool=git exitCode=128"]);
    expect(git.requests.some((r) => r.auth === "wrong")).toBe(true);
    expect(run.stderr.at(-1)).toBe(
      `[init] git: repo app: git clone into ${join(sb.workspace, "app")} exited with code 128`,
    );
  });

  it("replaces whatever is at the destination", async () => {
    mkdirSync(join(sb.workspace, "custom", "dir"), { recursive: true });
    const run = await runInitCaptured(
      sb,
      envWith([{ name: "app", url: git.repoUrl("acme/app"), path: "custom/dir", token_secret: "GH_PAT" }], {
        GH_PAT: TOKEN,
      }),
    );
    expect(run.code).toBe(0);
    expect(existsSync(join(sb.workspace, "custom", "dir", "src", "main.ts"))).toBe(true);
  });

  it.each([
    ["..", "../outside"],
    ["an absolute path elsewhere", "/tmp/elsewhere"],
    ["the workspace itself", "."],
  ])(
    "docs/decisions.md D-31: a destination through %s fails reason=path naming the repo, before any git runs",
    async (_name, path) => {
      const run = await runInitCaptured(sb, envWith([{ name: "evil", url: git.repoUrl("acme/app"), path }]));
      expect(run.code).toBe(1);
      expect(run.summary.slice(-1)).toEqual(["init/failed tool=git reason=path"]);
      expect(run.commands).toEqual([]);
      expect(run.stderr.at(-1)).toMatch(/^\[init\] git: repo evil: destination resolves to /);
    },
  );

  it("a later repo cannot be placed through a symlink an earlier clone carries", async () => {
    const outside = join(sb.root, "outside");
    mkdirSync(outside);
    createBareRepoFrom(join(sb.root, "remote"), "acme/linky", (work) =>
      symlinkSync(outside, join(work, "out")),
    );
    const run = await runInitCaptured(
      sb,
      envWith(
        [
          { name: "linky", url: git.repoUrl("acme/linky"), token_secret: "GH_PAT" },
          { name: "second", url: git.repoUrl("acme/app"), path: "linky/out/second", token_secret: "GH_PAT" },
        ],
        { GH_PAT: TOKEN },
      ),
    );
    expect(run.code).toBe(1);
    expect(run.summary.at(-1)).toBe("init/failed tool=git reason=path");
    expect(run.commands.filter((c) => c.argv[1] === "clone")).toHaveLength(1);
    expect(existsSync(join(outside, "second"))).toBe(false);
    expect(run.stderr.at(-1)).toBe(
      `[init] git: repo second: destination ${join(sb.workspace, "linky", "out")} resolves through a symlink to ${outside}, outside the workspace ${sb.workspace}`,
    );
  });
});

describe("git argv", () => {
  const repo = { name: "a", cloneUrl: "https://h.test/a.git", dest: "/w/a" };
  it("without a token: plain clone after --", () => {
    expect(cloneArgv(repo)).toEqual(["git", "clone", "--", "https://h.test/a.git", "/w/a"]);
  });
  it("with a token: the helper reads $<token_secret> at use time, inherited helpers reset", () => {
    expect(cloneArgv({ ...repo, tokenEnv: "GH_PAT" })).toEqual([
      "git",
      "clone",
      "-c",
      "credential.helper=",
      "-c",
      `credential.helper=!f() { test "$1" = get || return 0; printf 'username=x-access-token\\npassword=%s\\n' "$GH_PAT"; }; f`,
      "--",
      "https://h.test/a.git",
      "/w/a",
    ]);
  });
  it.each([
    ["main", ["git", "-C", "/w/a", "checkout", "main"]],
    ["-evil", ["git", "-C", "/w/a", "checkout", "--", "-evil"]],
  ])("checkout %s", (ref, want) => {
    expect(checkoutArgv({ ...repo, ref })).toEqual(want);
  });
});
