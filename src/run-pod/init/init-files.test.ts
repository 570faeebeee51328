import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { closedPort, type FileServer, startFileServer } from "../../../test/support/http-files.js";
import {
  createBareRepoFrom,
  type InitSandbox,
  initSandbox,
  runInitCaptured,
} from "../../../test/support/init-sandbox.js";

const HEADER_VALUE = "Bearer files-s3cret-value";

let sb: InitSandbox;
let files: FileServer;
beforeEach(async () => {
  sb = initSandbox();
  files = await startFileServer();
});
afterEach(async () => {
  await files.close();
  sb.cleanup();
});

function envWith(entries: unknown[], extra: Record<string, string> = {}) {
  return sb.env({
    AGENT_FILES: JSON.stringify(entries),
    "files-auth": `Authorization: ${HEADER_VALUE}\nX-Tenant: acme\n`,
    ...extra,
  });
}

function expectNoHeaderValue(run: { stdout: string[]; stderr: string[]; sinkText: string }) {
  for (const text of [run.stdout.join("\n"), run.stderr.join("\n"), run.sinkText])
    expect(text).not.toContain("files-s3cret");
}

describe("tool files (docs/run-pod.md#the-init, docs/security.md#specfiles, docs/decisions.md D-30)", () => {
  it("downloads into the workspace, creating parents, sending the secret's header block; mode 0644", async () => {
    files.route("/runs/42/brief.md", { status: 200, body: "# brief\n" });
    const run = await runInitCaptured(
      sb,
      envWith([
        { path: "notes/deep/brief.md", url: `${files.url}/runs/42/brief.md`, headers_secret: "files-auth" },
      ]),
    );
    expect(run.code).toBe(0);
    const dest = join(sb.workspace, "notes", "deep", "brief.md");
    expect(readFileSync(dest, "utf8")).toBe("# brief\n");
    expect(statSync(dest).mode & 0o777).toBe(0o644);
    expect(files.requests[0]?.headers.authorization).toBe(HEADER_VALUE);
    expect(files.requests[0]?.headers["x-tenant"]).toBe("acme");
    expectNoHeaderValue(run);
  });

  it("an absolute path inside the workspace is accepted and an existing regular file replaced", async () => {
    writeFileSync(join(sb.workspace, "data.csv"), "old");
    files.route("/d", { status: 200, body: "new" });
    const run = await runInitCaptured(
      sb,
      envWith([{ path: join(sb.workspace, "data.csv"), url: `${files.url}/d` }]),
    );
    expect(run.code).toBe(0);
    expect(readFileSync(join(sb.workspace, "data.csv"), "utf8")).toBe("new");
  });

  it("a 404 fails reason=download with the path and never the header, exit 1, the cause last", async () => {
    const run = await runInitCaptured(
      sb,
      envWith([{ path: "notes/brief.md", url: `${files.url}/missing`, headers_secret: "files-auth" }]),
    );
    expect(run.code).toBe(1);
    expect(run.summary.slice(-2)).toEqual([
      "init/running tool=files",
      "init/failed tool=files reason=download",
    ]);
    expect(run.stderr.at(-1)).toBe("[init] files: notes/brief.md: the server answered HTTP 404");
    expect(files.requests[0]?.headers.authorization).toBe(HEADER_VALUE);
    expectNoHeaderValue(run);
  });

  it("an unreachable URL fails reason=download naming the path", async () => {
    const port = await closedPort();
    const run = await runInitCaptured(
      sb,
      envWith([{ path: "in.txt", url: `http://127.0.0.1:${port}/x`, headers_secret: "files-auth" }]),
    );
    expect(run.code).toBe(1);
    expect(run.summary.at(-1)).toBe("init/failed tool=files reason=download");
    expect(run.stderr.at(-1)).toMatch(/^\[init\] files: in\.txt: unreachable: .*ECONNREFUSED/);
    expectNoHeaderValue(run);
  });

  it("more than 5 redirects fail reason=download", async () => {
    for (let i = 0; i < 6; i++) files.route(`/r${i}`, { status: 302, headers: { Location: `/r${i + 1}` } });
    files.route("/r6", { status: 200, body: "x" });
    const run = await runInitCaptured(sb, envWith([{ path: "r.txt", url: `${files.url}/r0` }]));
    expect(run.code).toBe(1);
    expect(run.stderr.at(-1)).toBe("[init] files: r.txt: more than 5 redirects");
  });

  it("a non-http scheme fails reason=download", async () => {
    const run = await runInitCaptured(sb, envWith([{ path: "f.txt", url: "file:///etc/passwd" }]));
    expect(run.summary.at(-1)).toBe("init/failed tool=files reason=download");
    expect(run.stderr.at(-1)).toBe(
      "[init] files: f.txt: URL scheme file: is not fetched (only http:// and https://)",
    );
  });

  it("entries run in order and the first failure stops the rest", async () => {
    files.route("/1", { status: 200, body: "1" });
    files.route("/3", { status: 200, body: "3" });
    const run = await runInitCaptured(
      sb,
      envWith([
        { path: "one", url: `${files.url}/1` },
        { path: "two", url: `${files.url}/2` },
        { path: "three", url: `${files.url}/3` },
      ]),
    );
    expect(run.code).toBe(1);
    expect(files.requests.map((r) => r.path)).toEqual(["/1", "/2"]);
    expect(existsSync(join(sb.workspace, "one"))).toBe(true);
    expect(existsSync(join(sb.workspace, "three"))).toBe(false);
    expect(run.stderr.at(-1)).toBe("[init] files: two: the server answered HTTP 404");
  });

  it.each<[string, () => string, RegExp]>([
    [
      "'..'",
      () => "../escape.txt",
      /^\[init\] files: \.\.\/escape\.txt: resolves to .*\/escape\.txt, outside the workspace /,
    ],
    [
      "an absolute path elsewhere",
      () => "/etc/passwd",
      /^\[init\] files: \/etc\/passwd: resolves to \/etc\/passwd, outside the workspace /,
    ],
    [
      "an existing directory",
      () => {
        mkdirSync(join(sb.workspace, "dir"));
        return "dir";
      },
      /^\[init\] files: dir: .*\/workspace\/dir is an existing directory$/,
    ],
    [
      "an existing symlink",
      () => {
        writeFileSync(join(sb.workspace, "target"), "t");
        symlinkSync(join(sb.workspace, "target"), join(sb.workspace, "link"));
        return "link";
      },
      /^\[init\] files: link: .*\/workspace\/link is an existing symlink$/,
    ],
    [
      "a symlinked directory leading out",
      () => {
        mkdirSync(join(sb.root, "outside"));
        symlinkSync(join(sb.root, "outside"), join(sb.workspace, "out"));
        return "out/x.md";
      },
      /^\[init\] files: out\/x\.md: .*\/workspace\/out resolves through a symlink to .*\/outside, outside the workspace /,
    ],
  ])("a destination through %s fails reason=path before any request", async (_name, setup, message) => {
    files.route("/f", { status: 200, body: "x" });
    const run = await runInitCaptured(sb, envWith([{ path: setup(), url: `${files.url}/f` }]));
    expect(run.code).toBe(1);
    expect(run.summary.at(-1)).toBe("init/failed tool=files reason=path");
    expect(run.stderr.at(-1)).toMatch(message);
    expect(files.requests).toEqual([]);
  });

  it("a symlink carried by a cloned repo cannot lead a file outside the workspace", async () => {
    const outside = join(sb.root, "outside");
    mkdirSync(outside);
    const remote = join(sb.root, "remote");
    const bare = createBareRepoFrom(remote, "linky", (work) => {
      writeFileSync(join(work, "README.md"), "x");
      symlinkSync(outside, join(work, "docs"));
    });
    files.route("/f", { status: 200, body: "payload" });
    const run = await runInitCaptured(
      sb,
      envWith([{ path: "linky/docs/brief.md", url: `${files.url}/f` }], {
        AGENT_REPOS: JSON.stringify([{ name: "linky", url: bare }]),
      }),
    );
    expect(run.code).toBe(1);
    expect(run.summary.slice(-3)).toEqual([
      "init/running tool=git",
      "init/running tool=files",
      "init/failed tool=files reason=path",
    ]);
    expect(existsSync(join(outside, "brief.md"))).toBe(false);
    expect(run.stderr.at(-1)).toBe(
      `[init] files: linky/docs/brief.md: ${join(sb.workspace, "linky", "docs")} resolves through a symlink to ${outside}, outside the workspace ${sb.workspace}`,
    );
  });

  it.each([
    ["a trailing /", "notes/", "ends in a directory (/, . or ..), not a file name"],
    ["a trailing /.", "notes/.", "ends in a directory (/, . or ..), not a file name"],
  ])("%s fails reason=path before anything is fetched", async (_name, path, cause) => {
    files.route("/f", { status: 200, body: "x" });
    const run = await runInitCaptured(
      sb,
      envWith([
        { path: "ok.txt", url: `${files.url}/f` },
        { path, url: `${files.url}/f` },
      ]),
    );
    expect(run.code).toBe(1);
    expect(run.summary.at(-1)).toBe("init/failed tool=files reason=path");
    expect(run.stderr.at(-1)).toBe(`[init] files: ${path}: ${cause}`);
    expect(files.requests).toEqual([]);
  });

  it("two entries with one destination fail reason=path before anything is fetched", async () => {
    files.route("/f", { status: 200, body: "x" });
    const run = await runInitCaptured(
      sb,
      envWith([
        { path: "a/b.txt", url: `${files.url}/f` },
        { path: `${sb.workspace}/a/./b.txt`, url: `${files.url}/f` },
      ]),
    );
    expect(run.code).toBe(1);
    expect(run.summary.at(-1)).toBe("init/failed tool=files reason=path");
    expect(run.stderr.at(-1)).toBe(
      `[init] files: ${sb.workspace}/a/./b.txt: ${join(sb.workspace, "a", "b.txt")} is also the destination of a/b.txt`,
    );
    expect(files.requests).toEqual([]);
  });

  it.each([
    ["its .git", "app/.git/hooks/pre-push"],
    ["its .git in another case", "app/.GIT/config"],
    ["its .git through a symlink the repo carries", "app/meta/config"],
  ])(
    "a file may land inside a cloned repo's git directory: %s (it does not escape the workspace)",
    async (_name, path) => {
      const bare = createBareRepoFrom(join(sb.root, "remote"), "app", (work) => {
        writeFileSync(join(work, "a"), "a");
        symlinkSync(".git", join(work, "meta"));
      });
      files.route("/f", { status: 200, body: "planted\n" });
      const run = await runInitCaptured(
        sb,
        envWith([{ path, url: `${files.url}/f` }], {
          AGENT_REPOS: JSON.stringify([{ name: "app", url: bare }]),
        }),
      );
      expect(run.code).toBe(0);
      expect(readFileSync(join(sb.workspace, path), "utf8")).toBe("planted\n");
    },
  );

  it("a file may land inside a cloned repo (files run after git)", async () => {
    const bare = createBareRepoFrom(join(sb.root, "remote"), "app", (work) =>
      writeFileSync(join(work, "a"), "a"),
    );
    files.route("/f", { status: 200, body: "in repo" });
    const run = await runInitCaptured(
      sb,
      envWith([{ path: "app/inputs/f.txt", url: `${files.url}/f` }], {
        AGENT_REPOS: JSON.stringify([{ name: "app", url: bare }]),
      }),
    );
    expect(run.code).toBe(0);
    expect(readFileSync(join(sb.workspace, "app", "inputs", "f.txt"), "utf8")).toBe("in repo");
  });

  it("a malformed AGENT_FILES fails reason=path", async () => {
    const run = await runInitCaptured(sb, sb.env({ AGENT_FILES: "{not json" }));
    expect(run.code).toBe(1);
    expect(run.summary.at(-1)).toBe("init/failed tool=files reason=path");
    expect(run.stderr.at(-1)).toBe(
      "[init] files: AGENT_FILES: not a JSON array of {path, url, headers_secret?}",
    );
  });
});
