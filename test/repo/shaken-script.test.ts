// @module-tag slow
/**
 * scripts/shaken.sh (npm run test:shaken, docs/control-plane.md#a-shaken-bed) with a stub in place
 * of scripts/test.sh: the load it starts while the tests run, the arguments it passes on, its
 * repetitions, and that no busy loop outlives it (normal exit, a failed run, TERM, SIGKILL).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { getPriority, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";

const SCRIPT = resolve(import.meta.dirname, "../../scripts/shaken.sh");

/**
 * Stands in for scripts/test.sh: counts its runs, records its arguments and the busy loops of the
 * shaken.sh that started it (its parent: setsid execs in place) with their niceness (once STUB_LOOPS
 * of them are listed), then sleeps
 * STUB_SLEEP seconds and exits with the run's entry of STUB_EXITS.
 */
const STUB = `#!/usr/bin/env bash
trap 'echo TERM > "$STUB_DIR/signal"; exit 143' TERM
n=$(( $(cat "$STUB_DIR/runs" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$STUB_DIR/runs"
echo "$$" > "$STUB_DIR/pid"
printf '%s\\n' "$@" > "$STUB_DIR/args-$n"
# A loop just forked may not have exec'd yet (it is then not listed): look again until all are.
for _ in $(seq 100); do
  ps -eo ni=,args= | awk -v tag="shaken-load $PPID" 'substr($0, length($0) - length(tag) + 1) == tag { print $1 }' > "$STUB_DIR/loops-$n"
  (( $(wc -l < "$STUB_DIR/loops-$n") >= STUB_LOOPS )) && break
  sleep 0.05
done
sleep "\${STUB_SLEEP:-0}" & wait $!
exits=($STUB_EXITS)
exit "\${exits[$((n - 1))]:-0}"
`;

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A scratch checkout holding shaken.sh and the stub as scripts/test.sh. */
function scratch(): { root: string; stub: string } {
  const root = mkdtempSync(join(tmpdir(), "shaken-"));
  dirs.push(root);
  mkdirSync(join(root, "scripts"));
  copyFileSync(SCRIPT, join(root, "scripts", "shaken.sh"));
  writeFileSync(join(root, "scripts", "test.sh"), STUB);
  const stub = join(root, "stub");
  mkdirSync(stub);
  return { root, stub };
}

function start(root: string, stub: string, args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn("bash", [join(root, "scripts", "shaken.sh"), ...args], {
    env: { ...process.env, STUB_DIR: stub, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

async function finish(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((done) => child.on("close", (c) => done(c)));
  return { code, stdout, stderr };
}

/** Busy loops started by the shaken.sh with this pid that still run (from /proc). */
function loopsOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter(Boolean);
      if (args.at(-2) === "shaken-load" && args.at(-1) === String(pid)) found.push(Number(entry));
    } catch {} // gone meanwhile
  }
  return found;
}

async function untilNoLoops(pid: number): Promise<number[]> {
  const deadline = Date.now() + 10_000;
  while (loopsOf(pid).length > 0 && Date.now() < deadline) await sleep(50);
  return loopsOf(pid);
}

async function untilFile(path: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!existsSync(path) && Date.now() < deadline) await sleep(50);
}

const lines = (path: string) => readFileSync(path, "utf8").split("\n").filter(Boolean);

describe("npm run test:shaken (scripts/shaken.sh)", () => {
  it("keeps N loops at the given niceness busy during each run, passes the rest on, and stops them after", async () => {
    const { root, stub } = scratch();
    const child = start(
      root,
      stub,
      ["--load", "2", "--nice", "19", "--times", "3", "a.test.ts", "--retry=0"],
      {
        STUB_LOOPS: "2",
      },
    );
    const { code, stdout } = await finish(child);
    expect(code).toBe(0);
    expect(lines(join(stub, "runs"))).toEqual(["3"]);
    for (const run of [1, 2, 3]) {
      expect(lines(join(stub, `args-${run}`))).toEqual(["a.test.ts", "--retry=0"]);
      expect(lines(join(stub, `loops-${run}`))).toEqual(["19", "19"]);
    }
    expect(stdout).toMatch(/run 3 of 3 passed in \d+ min \d\d s/);
    // Gone when it exits (its trap), not only later by themselves.
    expect(loopsOf(child.pid ?? 0)).toEqual([]);
  });

  it("defaults to one loop per core at nice 0, and `--` ends its own options", async () => {
    const { root, stub } = scratch();
    const cores = Number(execFileSync("nproc", { encoding: "utf8" }).trim());
    const child = start(root, stub, ["--", "--times", "2"], { STUB_LOOPS: String(cores) });
    expect((await finish(child)).code).toBe(0);
    expect(lines(join(stub, "args-1"))).toEqual(["--times", "2"]);
    // nice adds to the niceness the script runs at (0 unless this test itself runs under nice).
    const base = String(Math.min(19, getPriority()));
    expect(lines(join(stub, "loops-1"))).toEqual(Array.from({ length: cores }, () => base));
  });

  it("stops at the first failed run with its exit status", async () => {
    const { root, stub } = scratch();
    const child = start(root, stub, ["--load", "1", "--nice", "19", "--times", "3"], {
      STUB_EXITS: "0 3 0",
      STUB_LOOPS: "1",
    });
    const { code, stdout } = await finish(child);
    expect(code).toBe(3);
    expect(lines(join(stub, "runs"))).toEqual(["2"]);
    expect(stdout).toContain("run 2 of 3 failed (exit 3)");
    // Gone when it exits (its trap), not only later by themselves.
    expect(loopsOf(child.pid ?? 0)).toEqual([]);
  });

  it.each([
    [["--load", "x"], "--load needs a whole number, got 'x'"],
    [["--times"], "--times needs a whole number, got ''"],
    [["--nice", "20"], "--nice must be 0-19, got 20"],
    [["--times", "0"], "--times must be at least 1, got 0"],
  ])("refuses %j naming the option", async (args, message) => {
    const { root, stub } = scratch();
    const { code, stderr } = await finish(start(root, stub, args));
    expect(code).toBe(2);
    expect(stderr).toContain(message);
    expect(existsSync(join(stub, "runs"))).toBe(false);
  });

  it("on TERM stops the load, passes the signal to the test run and exits 143", async () => {
    const { root, stub } = scratch();
    const child = start(root, stub, ["--load", "1", "--nice", "19"], { STUB_SLEEP: "60", STUB_LOOPS: "1" });
    const result = finish(child);
    await untilFile(join(stub, "loops-1"));
    expect(loopsOf(child.pid ?? 0)).toHaveLength(1);
    child.kill("SIGTERM");
    expect((await result).code).toBe(143);
    expect(lines(join(stub, "signal"))).toEqual(["TERM"]);
    expect(loopsOf(child.pid ?? 0)).toEqual([]);
  });

  it("killed with SIGKILL, its loops end by themselves", async () => {
    const { root, stub } = scratch();
    const child = start(root, stub, ["--load", "2", "--nice", "19"], { STUB_SLEEP: "60", STUB_LOOPS: "2" });
    // Its exit, not its pipes' close: the stub, still running, holds them.
    const exited = new Promise((done) => child.on("exit", done));
    await untilFile(join(stub, "loops-1"));
    expect(loopsOf(child.pid ?? 0)).toHaveLength(2);
    child.kill("SIGKILL");
    await exited;
    try {
      expect(await untilNoLoops(child.pid ?? 0)).toEqual([]);
    } finally {
      // The stub runs in its own session: it is this test's to stop.
      process.kill(-Number(lines(join(stub, "pid"))[0]), "SIGKILL");
    }
  });
});
