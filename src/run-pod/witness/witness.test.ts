/**
 * The witness for real: it starts as root (the test process on this machine; skipped otherwise),
 * runs a shell as the agent's uid and records the outcome where that uid cannot write.
 */

import { EventEmitter } from "node:events";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runWitness } from "./main.js";
import { readRecordedResult } from "./result-dir.js";

const isRoot = process.getuid?.() === 0;

function dirs() {
  const root = mkdtempSync(join(tmpdir(), "witness-"));
  chmodSync(root, 0o755);
  const shared = join(root, "shared");
  const result = join(root, "result");
  mkdirSync(shared, { mode: 0o777 });
  chmodSync(shared, 0o777);
  return { shared, result };
}

async function witness(script: string, result: string, signals = new EventEmitter()) {
  const lines: string[] = [];
  const code = await runWitness(
    ["--", "/bin/sh", "-c", script],
    { PATH: "/usr/bin:/bin", AGENT_RESULT_DIR: result },
    {
      stderr: (l) => lines.push(l),
      signals,
    },
  );
  return { code, lines };
}

describe.skipIf(!isRoot)("witness", () => {
  it("runs the command as uid 1000 and records its exit code where only root can write", async () => {
    const { shared, result } = dirs();
    const run = await witness(`id -u > ${shared}/uid; exit 3`, result);
    expect(run.code).toBe(3);
    expect(readFileSync(join(shared, "uid"), "utf8").trim()).toBe("1000");
    expect(readFileSync(join(result, "exit-code"), "utf8")).toBe("3\n");
    const dir = statSync(result);
    expect([dir.uid, dir.mode & 0o777]).toEqual([0, 0o755]);
    expect(await readRecordedResult(result)).toEqual({ state: "exited", code: 3 });
  });

  it("the agent's uid can neither write a success nor remove the record: its forgery fails and its real exit stands", async () => {
    const { shared, result } = dirs();
    const run = await witness(
      `echo 0 > ${result}/exit-code 2>/dev/null && echo wrote > ${shared}/wrote; ` +
        `mv ${result} ${result}.moved 2>/dev/null && echo moved > ${shared}/moved; exit 1`,
      result,
    );
    expect(existsSync(join(shared, "wrote"))).toBe(false);
    expect(existsSync(join(shared, "moved"))).toBe(false);
    expect(run.code).toBe(1);
    expect(await readRecordedResult(result)).toEqual({ state: "exited", code: 1 });
  });

  it("records a supervisor killed by a signal at once, as 128 + n", async () => {
    const { result } = dirs();
    const run = await witness("kill -9 $$", result);
    expect(run.code).toBe(137);
    expect(await readRecordedResult(result)).toEqual({ state: "exited", code: 137 });
    expect(run.lines.map((l) => JSON.parse(l).msg)).toContain("/bin/sh was killed by SIGKILL");
  });

  it("forwards SIGTERM to the command", async () => {
    const { shared, result } = dirs();
    const signals = new EventEmitter();
    const pending = witness(`touch ${shared}/started; exec sleep 60`, result, signals);
    while (!existsSync(join(shared, "started"))) await new Promise((r) => setTimeout(r, 10));
    signals.emit("SIGTERM");
    expect((await pending).code).toBe(143);
  });
});

describe("witness refusals", () => {
  it("refuses to run anything when it did not start as root", async () => {
    const { shared, result } = dirs();
    const lines: string[] = [];
    const code = await runWitness(
      ["--", "/bin/sh", "-c", `touch ${shared}/ran`],
      { AGENT_RESULT_DIR: result },
      {
        stderr: (l) => lines.push(l),
        getuid: () => 1000,
      },
    );
    expect(code).toBe(1);
    expect(existsSync(join(shared, "ran"))).toBe(false);
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ component: "witness", level: "warn" });
    expect(JSON.parse(lines[0] ?? "{}").msg).toMatch(/^must start as root/);
  });

  it("needs -- and a command", async () => {
    const lines: string[] = [];
    expect(await runWitness([], {}, { stderr: (l) => lines.push(l) })).toBe(2);
    expect(lines).toEqual(["[witness] usage: ai-agent-witness -- <command> [args…]"]);
  });
});
