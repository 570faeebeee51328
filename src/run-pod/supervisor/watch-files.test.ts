import { execFileSync } from "node:child_process";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type CapturedIo,
  capturedIo,
  parsedLines,
  type RunPodDirs,
  runPodDirs,
  writeScript,
} from "../../../test/support/run-pod.js";
import { runSupervisorWith } from "./main.js";
import { MAX_WATCHED_FILE_BYTES, readWatchedFile, resolveWatchedPath } from "./watch-files.js";

describe("resolveWatchedPath (docs/events.md#file-events: strictly inside WORKSPACE_DIR)", () => {
  it.each<[string, string | undefined]>([
    ["report.md", "/workspace/report.md"],
    ["out/../report.md", "/workspace/report.md"],
    ["./a/b.txt", "/workspace/a/b.txt"],
    ["/workspace/repo/notes.md", "/workspace/repo/notes.md"],
    ["/workspace//repo/./x", "/workspace/repo/x"],
    ["..foo", "/workspace/..foo"],
    [".", undefined],
    ["/workspace", undefined],
    ["/workspace/", undefined],
    ["..", undefined],
    ["../etc/passwd", undefined],
    ["a/../../x", undefined],
    ["/etc/passwd", undefined],
    ["/workspace-other/x", undefined],
  ])("%s → %s", (path, want) => {
    expect(resolveWatchedPath("/workspace", path)).toBe(want);
    expect(resolveWatchedPath("/workspace/", path)).toBe(want);
  });
});

describe("readWatchedFile", () => {
  let dirs: RunPodDirs;
  beforeEach(async () => {
    dirs = await runPodDirs();
  });
  afterEach(async () => {
    await dirs.remove();
  });

  const binary = Buffer.from([0xff, 0xfe, 0x00, 0x41, 0xc3]);
  /** Writes `data` to a fresh file and returns its path. */
  const file = (data: string | Buffer) => async (dir: string) => {
    await writeFile(join(dir, "f"), data);
    return join(dir, "f");
  };

  it.each<[string, (dir: string) => Promise<string>, object]>([
    ["a UTF-8 file", file("héllo\n"), { content: "héllo\n" }],
    ["an empty file", file(""), { content: "" }],
    [
      "bytes that are not UTF-8 ⇒ base64 (docs/decisions.md D-62)",
      file(binary),
      { content: binary.toString("base64"), encoding: "base64" },
    ],
    [
      "exactly 128 KiB",
      file("x".repeat(MAX_WATCHED_FILE_BYTES)),
      { content: "x".repeat(MAX_WATCHED_FILE_BYTES) },
    ],
    ["one byte over 128 KiB", file("x".repeat(MAX_WATCHED_FILE_BYTES + 1)), { reason: "too-large" }],
    ["absent", async (dir) => join(dir, "absent"), { reason: "missing" }],
    [
      "a directory",
      async (dir) => {
        await mkdir(join(dir, "d"));
        return join(dir, "d");
      },
      { reason: "missing" },
    ],
    [
      "a path under a regular file",
      async (dir) => join(await file("x")(dir), "inside"),
      { reason: "missing" },
    ],
    [
      "a dangling symlink",
      async (dir) => {
        await symlink("/nonexistent/target", join(dir, "l"));
        return join(dir, "l");
      },
      { reason: "missing" },
    ],
    [
      "a symlink to a file",
      async (dir) => {
        await symlink(await file("via link")(dir), join(dir, "l"));
        return join(dir, "l");
      },
      { content: "via link" },
    ],
    [
      "a FIFO (never blocks)",
      async (dir) => {
        execFileSync("mkfifo", [join(dir, "fifo")]);
        return join(dir, "fifo");
      },
      { reason: "missing" },
    ],
  ])("%s", async (_name, setup, want) => {
    expect(await readWatchedFile(await setup(dirs.workspace))).toEqual(want);
  });

  it("reports a file whose read fails as unreadable", async () => {
    // /proc/self/mem is a regular file whose first page cannot be read (EIO), even for root.
    expect(await readWatchedFile("/proc/self/mem")).toEqual({ reason: "unreadable" });
  });
});

describe("file events from a run (output.watch)", () => {
  let dirs: RunPodDirs;
  let captured: CapturedIo;
  beforeEach(async () => {
    dirs = await runPodDirs();
    captured = capturedIo();
  });
  afterEach(async () => {
    await dirs.remove();
  });

  it("raises one event per entry, in order, after the agent's lines and before the terminal event", async () => {
    await writeFile(
      join(dirs.workspace, "image.bin"),
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff]),
    );
    // The agent writes its report while it runs; the files are read after it exits.
    await writeScript(dirs.bin, "agent", `printf '# Result\\n' > "$WORKSPACE_DIR/report.md"\necho done\n`);
    const watch = [
      { event: "report", path: "report.md" },
      { event: "outside", path: "../escape.txt" },
      { event: "image", path: join(dirs.workspace, "image.bin") },
      { event: "root", path: "." },
      { event: "later", path: "not/written.txt" },
      { event: "secrets", path: "/etc/passwd" },
    ];
    const code = await runSupervisorWith(
      ["--", "agent"],
      {
        PATH: `${dirs.bin}:/usr/bin:/bin`,
        HOME: dirs.home,
        WORKSPACE_DIR: dirs.workspace,
        AGENT_WATCH: JSON.stringify([...watch, { event: "malformed" }]),
        AGENT_EXIT_GRACE_MS: "200",
      },
      captured.io,
    );
    expect(code).toBe(0);
    expect(parsedLines(captured.stdout)).toEqual([
      { kind: "lifecycle", phase: "agent", status: "started" },
      "done",
      { kind: "file", event: "report", path: join(dirs.workspace, "report.md"), content: "# Result\n" },
      {
        kind: "file",
        event: "image",
        path: join(dirs.workspace, "image.bin"),
        content: "iVBORw0KGgr/",
        encoding: "base64",
      },
      { kind: "file", event: "later", path: join(dirs.workspace, "not/written.txt"), reason: "missing" },
      { kind: "lifecycle", phase: "agent", status: "succeeded", exitCode: 0 },
    ]);
    // Wire key order: kind, event, path, content, encoding.
    expect(captured.stdout[3]).toMatch(
      /^\{"kind":"file","event":"image","path":"[^"]+","content":"iVBORw0KGgr\/","encoding":"base64"\}$/,
    );
    const refused = captured.stderr.filter((l) => l.includes("output.watch path is not inside"));
    expect(refused.map((l) => JSON.parse(l).event)).toEqual(["outside", "root", "secrets"]);
    expect(captured.stderr.join("\n")).toContain(
      "AGENT_WATCH entries without a string event and path are ignored",
    );
  });
});
