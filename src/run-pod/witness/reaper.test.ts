// @module-tag slow
/**
 * Zombies of a PID 1 that is a Node program, reproduced in a PID namespace of its own: the real
 * witness is PID 1 there, and its command double-forks short-lived processes, which the kernel
 * hands to PID 1 when they are orphaned. Needs root, util-linux's `unshare` and a static tini
 * (Debian's `tini` package: /usr/bin/tini-static); skipped otherwise.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { underReaper } from "./reaper.js";

const TINI = ["/usr/bin/tini-static", "/usr/local/bin/tini-static"].find((p) => existsSync(p));
const canRun = process.getuid?.() === 0 && TINI !== undefined && hasUnshare();

function hasUnshare(): boolean {
  try {
    execFileSync("unshare", ["--pid", "--fork", "--mount-proc", "true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Five orphans that exit after 0.2 s, then the count of zombies in the namespace once they have. */
const SCRIPT = `for i in 1 2 3 4 5; do (sleep 0.2 &); done; sleep 1
z=0; for s in /proc/[0-9]*/stat; do st=$(cut -d')' -f2 "$s" 2>/dev/null | cut -d' ' -f2); [ "$st" = Z ] && z=$((z+1)); done
echo "$z" > "$SHARED/zombies"`;

/** Runs the witness as PID 1 of a new PID namespace; `withReaper` puts tini in $HOME/bin. */
function zombiesUnderWitness(withReaper: boolean): number {
  const root = mkdtempSync(join(tmpdir(), "reaper-"));
  chmodSync(root, 0o755);
  const home = join(root, "home");
  const shared = join(root, "shared");
  mkdirSync(join(home, "bin"), { recursive: true });
  mkdirSync(shared, { mode: 0o777 });
  chmodSync(shared, 0o777);
  if (withReaper && TINI) symlinkSync(TINI, join(home, "bin", "ai-agent-reaper"));
  const main = resolve(__dirname, "../main.ts");
  execFileSync(
    "unshare",
    [
      "--pid",
      "--fork",
      "--mount-proc",
      process.execPath,
      "--import",
      "tsx",
      main,
      "witness",
      "--",
      "/bin/sh",
      "-c",
      SCRIPT,
    ],
    {
      env: {
        PATH: process.env.PATH,
        HOME: home,
        SHARED: shared,
        AGENT_RESULT_DIR: join(root, "result"),
      },
      cwd: resolve(__dirname, "../../.."),
      stdio: "ignore",
      timeout: 30_000,
    },
  );
  expect(readFileSync(join(root, "result", "exit-code"), "utf8")).toBe("0\n");
  return Number(readFileSync(join(shared, "zombies"), "utf8").trim());
}

describe("underReaper", () => {
  it("runs the command under the reaper as a child subreaper, or as it is without one", () => {
    expect(
      underReaper("/agent/bin/ai-agent-supervisor", ["--", "claude"], "/agent/bin/ai-agent-reaper"),
    ).toEqual({
      file: "/agent/bin/ai-agent-reaper",
      args: ["-s", "--", "/agent/bin/ai-agent-supervisor", "--", "claude"],
    });
    expect(underReaper("/x", ["a"], undefined)).toEqual({ file: "/x", args: ["a"] });
  });
});

describe.skipIf(!canRun)("orphans of the agent's tree (the witness is PID 1)", () => {
  it("without the reaper they stay zombies of the Node PID 1; with it none is left", () => {
    expect(zombiesUnderWitness(false)).toBe(5);
    expect(zombiesUnderWitness(true)).toBe(0);
  }, 60_000);
});
