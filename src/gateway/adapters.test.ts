import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { directoryKeySource, readCredentialKey } from "./adapters.js";

const dir = mkdtempSync(join(tmpdir(), "gateway-keys-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const run = { namespace: "ai-agents", name: "r", uid: "u-1" };

describe("the standalone key directory (docs/gateway.md#what-is-injected)", () => {
  it("reads each vendor's key from the file named like its variable, trimmed; a missing or empty one says which file", async () => {
    writeFileSync(join(dir, "ANTHROPIC_API_KEY"), "sk-ant-1\n");
    writeFileSync(join(dir, "GEMINI_API_KEY"), "   \n");
    const keys = directoryKeySource(dir);
    expect(await keys.keyFor(run, "anthropic")).toEqual({ key: "sk-ant-1" });
    expect(await keys.keyFor(run, "openai")).toEqual({
      missing: "GATEWAY_PROVIDER_KEYS_DIR has no file OPENAI_API_KEY",
    });
    expect(await keys.keyFor(run, "gemini")).toEqual({
      missing: "the file GEMINI_API_KEY in GATEWAY_PROVIDER_KEYS_DIR is empty",
    });
  });

  it("re-reads a key changed on the volume after the cache time, not before", async () => {
    let now = 0;
    writeFileSync(join(dir, "OPENAI_API_KEY"), "sk-old");
    const keys = directoryKeySource(dir, () => now);
    expect(await keys.keyFor(run, "openai")).toEqual({ key: "sk-old" });
    writeFileSync(join(dir, "OPENAI_API_KEY"), "sk-new");
    now = 29_000;
    expect(await keys.keyFor(run, "openai")).toEqual({ key: "sk-old" });
    now = 31_000;
    expect(await keys.keyFor(run, "openai")).toEqual({ key: "sk-new" });
  });
});

describe("the gateway key file", () => {
  it("drops one trailing newline and refuses a key under 32 bytes or an unreadable file, naming the variable", async () => {
    const file = join(dir, "gateway-key");
    writeFileSync(file, `${"k".repeat(32)}\n`);
    expect((await readCredentialKey(file)).toString()).toBe("k".repeat(32));
    writeFileSync(file, "k".repeat(31));
    await expect(readCredentialKey(file)).rejects.toThrow(
      `GATEWAY_CREDENTIAL_KEY_FILE=${file}: the gateway key has 31 bytes, at least 32 are needed`,
    );
    await expect(readCredentialKey(join(dir, "absent"))).rejects.toThrow(
      /^GATEWAY_CREDENTIAL_KEY_FILE=.*absent: cannot read/,
    );
  });
});
