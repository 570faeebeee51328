/**
 * exitAfterFlush in a real child process: a plain `process.exit` right after a large write to a
 * pipe loses what the reader had not yet taken (the control case below shows it), so the test
 * starts reading late and counts every byte.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const MODULE = path.join(path.dirname(fileURLToPath(import.meta.url)), "process-exit.ts");
const STDOUT_BYTES = 8 * 1024 * 1024;
const STDERR_BYTES = 1024 * 1024;
const dir = mkdtempSync(path.join(tmpdir(), "process-exit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A script that writes a lot to both streams, keeps a timer open, and exits with `exit`. */
function script(name: string, exit: string): string {
  const file = path.join(dir, name);
  writeFileSync(
    file,
    [
      `import { exitAfterFlush } from ${JSON.stringify(MODULE)};`,
      `process.stdout.write("o".repeat(${STDOUT_BYTES}));`,
      `process.stderr.write("e".repeat(${STDERR_BYTES}));`,
      "setInterval(() => {}, 60_000);",
      "void exitAfterFlush;",
      exit,
    ].join("\n"),
  );
  return file;
}

/** Runs `file` with tsx, starts reading its output only after a pause, and counts the bytes. */
function run(file: string): Promise<{ code: number | null; stdout: number; stderr: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", file], { stdio: ["ignore", "pipe", "pipe"] });
    const counts = { stdout: 0, stderr: 0 };
    child.stdout.pause();
    child.stderr.pause();
    setTimeout(() => {
      child.stdout.resume();
      child.stderr.resume();
    }, 300);
    child.stdout.on("data", (d: Buffer) => {
      counts.stdout += d.length;
    });
    child.stderr.on("data", (d: Buffer) => {
      counts.stderr += d.length;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, ...counts }));
  });
}

describe("exitAfterFlush", () => {
  it("exits with the code, despite an open timer, after every byte written to stdout and stderr arrived", async () => {
    const result = await run(script("flush.mts", "exitAfterFlush(3);"));
    expect(result).toEqual({ code: 3, stdout: STDOUT_BYTES, stderr: STDERR_BYTES });
  }, 20_000);

  it("control: a bare process.exit after the same writes loses bytes, so the test above can fail", async () => {
    const result = await run(script("bare.mts", "process.exit(3);"));
    expect(result.code).toBe(3);
    expect(result.stdout + result.stderr).toBeLessThan(STDOUT_BYTES + STDERR_BYTES);
  }, 20_000);
});
