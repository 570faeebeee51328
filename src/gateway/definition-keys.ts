/**
 * The vendor key for a run, per definition (docs/gateway.md#provider-keys): the Agent's Station
 * names its AgentDefinition, whose `resources.secrets` entry for the vendor's key variable
 * (`ANTHROPIC_API_KEY`; `OPENAI_API_KEY` or `CODEX_API_KEY`; `GEMINI_API_KEY` or
 * `GOOGLE_GENERATIVE_AI_API_KEY`: what the CLIs read, CREDENTIAL_VARIABLES) names the key of
 * agent-secrets that holds it. The same entries a run pod got before the gateway and batch reads,
 * so one key serves CLI runs, fallback Jobs and batch.
 *
 * agent-secrets is mounted whole into the gateway pod and read by key name, not fetched with a
 * GET: RBAC cannot narrow a Secret grant to some of its keys, so a GET would show the gateway the
 * same keys the mount does, while costing an API call per key change and a second way to fail;
 * the mount needs no Secret grant at all, so the gateway's token reads no Secret, and the kubelet
 * keeps the files current (within about a minute of a change). Only the gateway's own namespace's
 * agent-secrets can be mounted, which is the one namespace the installation runs in.
 *
 * The Station and the definition are read from the API server and cached briefly; a recent copy
 * stands in while the API server cannot be asked.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { RunRef } from "../core/run-job/gateway-credential.js";
import { noVendorKeyEntry, vendorKeyEntry } from "../core/run-job/vendor-key.js";
import type { AgentDefinition, Station } from "../core/types.js";
import type { KeySource, ProviderKey } from "./ports.js";
import { unreachableCause } from "./run-lookup.js";
import type { GatewayVendor } from "./vendors.js";

/** GET one object of the run's namespace; undefined on 404 NotFound; throws when the API server cannot say. */
export type ObjectGetter<T> = (namespace: string, name: string) => Promise<T | undefined>;

export interface DefinitionKeySourceOptions {
  /** The namespace whose agent-secrets is mounted at `secretsDir`. */
  namespace: string;
  /** agent-secrets mounted whole: one file per key. */
  secretsDir: string;
  /** The Agent's spec.stationRef, undefined when the run is not active (the run lookup's cache). */
  stationOf: (run: RunRef) => Promise<string | undefined>;
  getStation: ObjectGetter<Station>;
  getDefinition: ObjectGetter<AgentDefinition>;
  now?: () => number;
  /** Default: read the file; undefined when it does not exist. */
  readKey?: (path: string) => Promise<string | undefined>;
}

/** How long a Station, a definition or a key file's content is reused. */
export const DEFINITION_CACHE_MS = 30_000;
/** How long a copy of a Station or definition stands in while the API server cannot be asked. */
export const DEFINITION_STALE_MS = 300_000;

/** A key of a Secret as Kubernetes allows it: never `.` or `..`, nor a path on the volume's own `..data`. */
const SECRET_KEY = /^[-._a-zA-Z0-9]{1,253}$/;
export function isSecretKey(ref: string): boolean {
  return SECRET_KEY.test(ref) && ref !== "." && !ref.startsWith("..");
}

async function readKeyFile(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** One cache per object kind: a fresh copy is reused, a recent one stands in for a failed GET. */
function cachedGetter<T>(get: ObjectGetter<T>, kind: string, now: () => number) {
  const cache = new Map<string, { value: T | undefined; at: number }>();
  return async (namespace: string, name: string): Promise<T | undefined> => {
    const key = `${namespace}/${name}`;
    const hit = cache.get(key);
    if (hit && now() - hit.at < DEFINITION_CACHE_MS) return hit.value;
    try {
      const value = await get(namespace, name);
      cache.set(key, { value, at: now() });
      return value;
    } catch (err) {
      if (hit && now() - hit.at < DEFINITION_STALE_MS) return hit.value;
      throw new Error(unreachableCause(err, `the ${kind} ${key}`));
    }
  };
}

export function definitionKeySource(options: DefinitionKeySourceOptions): KeySource {
  const now = options.now ?? Date.now;
  const readKey = options.readKey ?? readKeyFile;
  const station = cachedGetter(options.getStation, "Station", now);
  const definition = cachedGetter(options.getDefinition, "AgentDefinition", now);
  const files = new Map<string, { content: string | undefined; at: number }>();

  const fileContent = async (ref: string) => {
    const hit = files.get(ref);
    if (hit && now() - hit.at < DEFINITION_CACHE_MS) return hit.content;
    const content = await readKey(join(options.secretsDir, ref));
    files.set(ref, { content, at: now() });
    return content;
  };

  return {
    async keyFor(run: RunRef, vendor: GatewayVendor): Promise<ProviderKey> {
      const ns = run.namespace;
      if (ns !== options.namespace) {
        return { missing: `this gateway reads the agent-secrets of namespace ${options.namespace} only` };
      }
      const stationRef = await options.stationOf(run);
      if (stationRef === undefined) return { missing: "the Agent is no longer running" };
      const st = await station(ns, stationRef);
      if (st === undefined) return { missing: `its Station ${ns}/${stationRef} does not exist` };
      const defName = st.spec?.agentDefRef;
      const def = defName ? await definition(ns, defName) : undefined;
      if (def === undefined) {
        return { missing: `the AgentDefinition ${ns}/${defName} of Station ${stationRef} does not exist` };
      }
      const entry = vendorKeyEntry(def.spec, vendor);
      const where = `AgentDefinition ${ns}/${defName}`;
      if (entry === undefined) return { missing: noVendorKeyEntry(where, vendor) };
      if (!isSecretKey(entry.ref)) {
        return {
          missing: `${where}'s resources.secrets entry ${entry.name} names ${JSON.stringify(entry.ref)}, which is not a Secret key`,
        };
      }
      const content = await fileContent(entry.ref);
      if (content === undefined) {
        return {
          missing: `agent-secrets has no key ${entry.ref} (${where}, resources.secrets entry ${entry.name})`,
        };
      }
      const key = content.trim();
      if (key === "") {
        return {
          missing: `agent-secrets key ${entry.ref} is empty (${where}, resources.secrets entry ${entry.name})`,
        };
      }
      return { key };
    },
  };
}
