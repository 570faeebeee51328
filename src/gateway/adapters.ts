/**
 * The adapters of the gateway's ports that need no cluster (docs/gateway.md#what-is-injected):
 * usage written as log lines, and for a gateway run outside a cluster (`GATEWAY_MODE=standalone`)
 * one key per vendor from a directory and a run lookup that asks nobody. In a cluster the run
 * lookup is run-lookup.ts and the keys are definition-keys.ts.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { credentialKeyFromFile } from "../core/run-job/gateway-credential.js";
import type { JsonLineLogger } from "../log.js";
import type { KeySource, ProviderKey, RunLookup, RunState, UsageRecord, UsageStore } from "./ports.js";
import type { GatewayVendor } from "./vendors.js";

/** The file (and agent-secrets entry) that holds each vendor's key: the names the CLIs read. */
export const VENDOR_KEY_NAMES: Readonly<Record<GatewayVendor, string>> = {
  anthropic: "ANTHROPIC_API_KEY",
  openai: "OPENAI_API_KEY",
  gemini: "GEMINI_API_KEY",
};

/** A mounted Secret's key changes on the volume within about a minute; re-read it at most this often. */
const KEY_CACHE_MS = 30_000;

/** One key per vendor for every run, read from `<dir>/<VENDOR_KEY_NAMES[vendor]>`. */
export function directoryKeySource(dir: string, now: () => number = Date.now): KeySource {
  const cache = new Map<GatewayVendor, { found: ProviderKey; at: number }>();
  return {
    async keyFor(_run, vendor) {
      const hit = cache.get(vendor);
      if (hit && now() - hit.at < KEY_CACHE_MS) return hit.found;
      const file = VENDOR_KEY_NAMES[vendor];
      let found: ProviderKey = { missing: `GATEWAY_PROVIDER_KEYS_DIR has no file ${file}` };
      try {
        const key = (await readFile(join(dir, file), "utf8")).trim();
        found = key === "" ? { missing: `the file ${file} in GATEWAY_PROVIDER_KEYS_DIR is empty` } : { key };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
      cache.set(vendor, { found, at: now() });
      return found;
    },
  };
}

/** Reads the credential key file; the message names the variable that pointed at it. */
export async function readCredentialKey(
  path: string,
  variable = "GATEWAY_CREDENTIAL_KEY_FILE",
): Promise<Buffer> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    throw new Error(`${variable}=${path}: cannot read the gateway key (${(err as Error).message})`);
  }
  const key = credentialKeyFromFile(bytes);
  if (typeof key === "string") throw new Error(`${variable}=${path}: ${key}`);
  return key;
}

/** Each metered call as one `usage` log line: a standalone gateway's record (a cluster's is usage-store.ts). */
export function loggingUsageStore(logger: JsonLineLogger): UsageStore {
  return {
    started() {},
    async record(entry: UsageRecord) {
      logger.info("usage", {
        ...entry,
        run: `${entry.run.namespace}/${entry.run.name}`,
        uid: entry.run.uid,
        startedAt: entry.startedAt.toISOString(),
        endedAt: entry.endedAt.toISOString(),
      });
    },
  };
}

/**
 * Every credential whose signature holds counts as an active run: for a gateway outside a cluster
 * (`GATEWAY_MODE=standalone`), which has no Agent to ask about, so an ended run's credential keeps
 * working there (docs/gateway.md#configuration).
 */
export const unwiredRunLookup: RunLookup = {
  async runState(): Promise<RunState> {
    return { state: "active" };
  },
  async stationOf() {
    return undefined;
  },
};
