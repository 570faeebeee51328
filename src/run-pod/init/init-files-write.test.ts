// @module-tag isolated
/**
 * A spec.files entry whose local write fails (a full disk here) is a write failure, not a
 * download failure: the URL answered, the pod could not keep what it sent.
 */
import { existsSync } from "node:fs";
import type * as FsPromises from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { type FileServer, startFileServer } from "../../../test/support/http-files.js";
import { type InitSandbox, initSandbox, runInitCaptured } from "../../../test/support/init-sandbox.js";

/** Files whose name ends like this get a write stream that fails as a full disk does. */
const FULL = "on-a-full-disk.bin";

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof FsPromises>();
  const open: typeof real.open = async (...args) => {
    const handle = await real.open(...args);
    if (!String(args[0]).endsWith(FULL)) return handle;
    const noSpace = Object.assign(new Error("ENOSPC: no space left on device, write"), {
      code: "ENOSPC",
      syscall: "write",
      errno: -28,
    });
    return new Proxy(handle, {
      get(target, key) {
        if (key === "createWriteStream")
          return () => new Writable({ write: (_chunk, _encoding, callback) => callback(noSpace) });
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  return { ...real, open };
});

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

it("a failed local write fails reason=write naming the path and the errno, leaving no partial file", async () => {
  files.route("/big", { status: 200, body: "x".repeat(4096) });
  const run = await runInitCaptured(
    sb,
    sb.env({ AGENT_FILES: JSON.stringify([{ path: `data/${FULL}`, url: `${files.url}/big` }]) }),
  );
  expect(run.code).toBe(1);
  expect(run.summary.at(-1)).toBe("init/failed tool=files reason=write");
  expect(run.stderr.at(-1)).toBe(
    `[init] files: data/${FULL}: cannot write ${join(sb.workspace, "data", FULL)} (ENOSPC)`,
  );
  expect(existsSync(join(sb.workspace, "data", FULL))).toBe(false);
});
