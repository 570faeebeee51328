import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const MAIN = join(dirname(fileURLToPath(import.meta.url)), "main.ts");

describe("npm run controller with bad settings", () => {
  it.each([
    [{ BATCH_ENABLED: "maybe" }, 'BATCH_ENABLED must be "true" or "false", got: "maybe"'],
    [{ BATCH_POLL_SECONDS: "soon" }, 'BATCH_POLL_SECONDS must be a non-negative integer, got: "soon"'],
  ])("%j stops at startup with the exact message and exit code 1", (env, message) => {
    const res = spawnSync(process.execPath, ["--import", "tsx", MAIN], {
      env: { PATH: process.env.PATH, POD_NAME: "p", KUBECONFIG: "/nonexistent", ...env },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(res.status).toBe(1);
    expect(res.stderr.trim()).toBe(message);
  });
});
