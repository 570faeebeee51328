/**
 * The run-pod executable as a Station image sees it (docs/decisions.md D-25): dist/agent/ai-agent and its hard links,
 * run with an emptied environment whose PATH holds no Node. Built once per file by
 * scripts/build-agent.ts unless it is newer than every source it bundles.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Metafile } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  buildAgent,
  bundleProblems,
  dynamicRequires,
  EXECUTABLE,
  LINK_NAMES,
  OUT_DIR,
} from "../../scripts/build-agent.js";
import { REPO_ROOT } from "../../test/deploy/render.js";
import { usage } from "./dispatch.js";

const run = promisify(execFile);
/** The programs src/run-pod/main.ts dispatches to, in its table's order. */
const PROGRAMS = ["init", "supervisor", "courier", "witness"];
const BUNDLED_SOURCES = ["src/run-pod", "src/sinks", "src/core", "src/log.ts", "scripts/build-agent.ts"];

async function newestMtime(path: string): Promise<number> {
  const info = await stat(path);
  if (!info.isDirectory()) return info.mtimeMs;
  const entries = await readdir(path);
  const times = await Promise.all(entries.map((e) => newestMtime(join(path, e))));
  return Math.max(info.mtimeMs, ...times);
}

async function isFresh(): Promise<boolean> {
  try {
    const built = (await stat(EXECUTABLE)).mtimeMs;
    const sources = await Promise.all(BUNDLED_SOURCES.map((p) => newestMtime(join(REPO_ROOT, p))));
    return sources.every((t) => t < built);
  } catch {
    return false;
  }
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

let home: string;

/** Runs `file` with only HOME and a PATH without Node, as `env -i PATH=/nonexistent HOME=…` would. */
function runBare(
  file: string,
  args: string[],
  argv0?: string,
  extraEnv: Record<string, string> = {},
): Promise<Outcome> {
  // spawn, not execFile: execFile does not pass argv0 on.
  const child = spawn(file, args, {
    env: { PATH: "/nonexistent", HOME: home, ...extraEnv },
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 30_000,
    ...(argv0 ? { argv0 } : {}),
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (code === null) reject(new Error(`${file} ended by ${signal}`));
      else resolve({ code, stdout, stderr });
    });
  });
}

function jsonLines(stdout: string): unknown[] {
  return stdout
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as unknown);
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "ai-agent-home-"));
  if (!(await isFresh())) await buildAgent();
}, 300_000);

afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

describe("dist/agent", () => {
  it("is one executable under every program name (hard links)", async () => {
    const exe = await stat(EXECUTABLE);
    expect(exe.mode & 0o111).toBe(0o111);
    for (const name of LINK_NAMES) {
      expect((await stat(join(OUT_DIR, name))).ino, name).toBe(exe.ino);
    }
    expect(LINK_NAMES).toEqual(["ai-agent-init", "ai-agent-supervisor", "ai-agent-courier"]);
  });

  it("ai-agent-supervisor runs the agent command without Node on PATH and reports its lifecycle", async () => {
    const out = await runBare(join(OUT_DIR, "ai-agent-supervisor"), ["--", "/bin/echo", '{"type":"result"}']);
    expect(out.code).toBe(0);
    const lines = jsonLines(out.stdout);
    expect(lines).toContainEqual({ type: "result" });
    expect(lines[0]).toMatchObject({ kind: "lifecycle", phase: "agent", status: "started" });
    expect(lines.at(-1)).toMatchObject({ kind: "lifecycle", phase: "agent", status: "succeeded" });
  });

  it("exits with the code the program returns (the supervisor's usage: 2)", async () => {
    const out = await runBare(join(OUT_DIR, "ai-agent-supervisor"), []);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain("ai-agent-supervisor: missing -- before the agent command");
  });

  it("ai-agent-courier runs the courier: without its token it reports a failed delivery", async () => {
    const out = await runBare(join(OUT_DIR, "ai-agent-courier"), []);
    expect(out.code).toBe(1);
    expect(jsonLines(out.stdout)).toEqual([
      { kind: "delivery", status: "failed", reason: "DELIVERY_TOKEN is empty" },
    ]);
  });

  it("takes the program as first argument when invoked as ai-agent", async () => {
    const out = await runBare(EXECUTABLE, ["supervisor", "--", "/bin/echo", "plain"]);
    expect(out.code).toBe(0);
    expect(out.stdout.split("\n")).toContain("plain");
  });

  it.each([
    ["an unknown name", "ai-agent-bogus", [], 'cannot tell the program from the name "ai-agent-bogus"'],
    ["ai-agent with an unknown program", "ai-agent", ["deploy"], 'unknown program "deploy"'],
    ["ai-agent alone", "ai-agent", [], "no program given"],
  ])("prints the usage and exits 2 for %s", async (_case, argv0, args, why) => {
    const out = await runBare(EXECUTABLE, args, argv0);
    expect(out).toEqual({ code: 2, stdout: "", stderr: `${usage(PROGRAMS, why)}\n` });
  });

  it("links only glibc-family libraries (what Debian/Ubuntu/RHEL bases always carry)", async (ctx) => {
    let listing: string;
    try {
      listing = (await run("ldd", [EXECUTABLE])).stdout;
    } catch (err) {
      if ((err as { code?: unknown }).code === "ENOENT") return ctx.skip();
      throw err;
    }
    const libraries = listing
      .split("\n")
      .map((l) => l.trim().split(/\s+/)[0] ?? "")
      .filter((l) => l !== "")
      .map((l) => l.slice(l.lastIndexOf("/") + 1));
    expect(libraries.length).toBeGreaterThan(1);
    for (const lib of libraries) {
      expect(lib).toMatch(/^(linux-vdso|libc|libm|libdl|libpthread|libstdc\+\+|libgcc_s|ld-linux[\w-]*)\.so/);
    }
  });
});

describe("dynamicRequires", () => {
  it.each([
    ['const a = require("node:fs");', []],
    ["const a = require('x') + require(`y`);", []],
    ["const a = require(name);", ["dynamic require(name…) cannot be bundled"]],
    ["__require(path.join(dir, 'x'))", ["dynamic require(path.join(dir, 'x'…) cannot be bundled"]],
    ["my_require(name)", []],
  ])("%s", (text, problems) => {
    expect(dynamicRequires(text)).toEqual(problems);
  });
});

describe("bundleProblems", () => {
  function metafile(inputs: string[], imports: Array<{ path: string; external?: boolean }>): Metafile {
    return {
      inputs: Object.fromEntries(inputs.map((i) => [i, { bytes: 1, imports: [] }])),
      outputs: {
        "out.cjs": {
          bytes: 1,
          inputs: {},
          exports: [],
          imports: imports.map((i) => ({ kind: "require-call" as const, ...i })),
        },
      },
    } as Metafile;
  }

  it.each([
    [[], [{ path: "node:fs", external: true }], []],
    [[], [{ path: "fs", external: true }], []],
    [[], [{ path: "node:sqlite", external: true }], []],
    [[], [{ path: "undici", external: true }], ["require-call of undici stays outside the bundle"]],
    [[], [{ path: "src/a.ts" }], []],
    [["node_modules/x/build/x.node"], [], ["native addon node_modules/x/build/x.node"]],
  ])("inputs %j imports %j: %j", (inputs, imports, problems) => {
    expect(bundleProblems(metafile(inputs, imports))).toEqual(problems);
  });
});
