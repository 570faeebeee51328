// @module-tag slow
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const MAIN = join(dirname(fileURLToPath(import.meta.url)), "main.ts");
const dir = mkdtempSync(join(tmpdir(), "gateway-main-"));
const shortKey = join(dir, "short-key");
writeFileSync(shortKey, "too-short\n");

describe("npm run gateway with bad settings (docs/gateway.md#configuration)", () => {
  it.each([
    [
      {
        GATEWAY_CREDENTIAL_KEY_FILE: "/k",
        GATEWAY_MODE: "standalone",
        GATEWAY_PROVIDER_KEYS_DIR: dir,
        GATEWAY_OPENAI_UPSTREAM: "https://api.openai.com/v1",
      },
      'GATEWAY_OPENAI_UPSTREAM="https://api.openai.com/v1": must be an origin only (scheme, host, port), without a path, query or fragment',
    ],
    [
      { GATEWAY_CREDENTIAL_KEY_FILE: shortKey, GATEWAY_MODE: "standalone", GATEWAY_PROVIDER_KEYS_DIR: dir },
      `GATEWAY_CREDENTIAL_KEY_FILE=${shortKey}: the gateway key has 9 bytes, at least 32 are needed`,
    ],
    [
      { GATEWAY_CREDENTIAL_KEY_FILE: "/k", GATEWAY_MODE: "cluster", GATEWAY_AGENT_SECRETS_DIR: dir },
      "GATEWAY_NAMESPACE is not set (GATEWAY_MODE=cluster)",
    ],
  ])("%j stops at start with the message and exit code 1", (env, message) => {
    const res = spawnSync(process.execPath, ["--import", "tsx", MAIN], {
      env: { PATH: process.env.PATH, ...env },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(res.stderr.trim()).toBe(message);
    expect(res.status).toBe(1);
  });
});
