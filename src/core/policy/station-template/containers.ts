/**
 * The Station template's container checks (docs/security.md#the-station-template-policy): every
 * container the template holds (the agent's, sidecars, init containers) sets only allowlisted
 * fields, reads no Secret but agent-secrets (and those the installation lists) through its env,
 * binds no host port, loosens no confinement; the agent container mounts nothing of the
 * Station's over the run's own directories. Pure.
 */
import { posix } from "node:path";
import { CONTAINER_FIELDS, SECURITY_CONTEXT_FIELDS } from "./fields.js";
import { isObject } from "./normalize.js";
import {
  type Check,
  notAllowed,
  objectList,
  type PlacedContainer,
  RUN_VOLUME_NAMES,
  widened,
} from "./types.js";

/** The Secret every run reads its keys from (../../run-job/job.ts SECRET_NAME). */
export const RUN_SECRET = "agent-secrets";

/** The agent container's directories the controller mounts: the agent's home (the witness lives in /agent/bin), the workspace, the witness's result. */
export const RUN_DIRS: readonly string[] = ["/agent", "/workspace", "/run/ai-agent-result"];

const all = (g: Parameters<Check>[0]): PlacedContainer[] => [...(g.agent ? [g.agent] : []), ...g.added];

/** The first problem `check` finds over every container, in order. */
const eachContainer =
  (check: (p: PlacedContainer, g: Parameters<Check>[0]) => string | undefined): Check =>
  (g) => {
    for (const p of all(g)) {
      const problem = check(p, g);
      if (problem !== undefined) return problem;
    }
    return undefined;
  };

export const containerFields: Check = eachContainer(({ c, path }, { policy }) => {
  for (const field of Object.keys(c)) {
    if (!CONTAINER_FIELDS.has(field) && !widened(policy, field)) return notAllowed(`${path}.${field}`, field);
  }
  return undefined;
});

export const securityContextFields: Check = eachContainer(({ c, path }, { policy }) => {
  const sc: unknown = c.securityContext;
  if (sc === undefined) return undefined;
  if (!isObject(sc)) return `${path}.securityContext must be an object`;
  for (const field of Object.keys(sc)) {
    if (!SECURITY_CONTEXT_FIELDS.has(field) && !widened(policy, field)) {
      return notAllowed(`${path}.securityContext.${field}`, field);
    }
  }
  const appArmor = sc.appArmorProfile;
  if (appArmor !== undefined && !widened(policy, "appArmorProfile")) {
    const type = isObject(appArmor) ? appArmor.type : undefined;
    if (type !== "RuntimeDefault") {
      return `${path}.securityContext.appArmorProfile ${JSON.stringify(type ?? appArmor)} is not allowed: only RuntimeDefault; an installation allows others with RUN_POD_FIELDS=appArmorProfile`;
    }
  }
  return undefined;
});

export const hostPorts: Check = eachContainer(({ c, path }, { policy }) => {
  const ports = objectList(c.ports, `${path}.ports`);
  if ("problem" in ports) return ports.problem;
  for (const [i, p] of ports.items.entries()) {
    for (const field of ["hostPort", "hostIP"] as const) {
      if (p[field] !== undefined && p[field] !== 0 && p[field] !== "" && !widened(policy, field)) {
        return notAllowed(`${path}.ports[${i}].${field}`, field);
      }
    }
  }
  return undefined;
});

/** The env sources a Station container may use; secretKeyRef and secretRef only into allowed Secrets. */
const ENV_VALUE_FROM = new Set(["secretKeyRef", "configMapKeyRef", "fieldRef", "resourceFieldRef"]);
const ENV_FROM = new Set(["secretRef", "configMapRef", "prefix"]);

/** Whether a Station may read Secret `name` (env or, once its kind is allowed, a volume): undefined when it may. */
export function secretProblem(name: unknown, path: string, secrets: readonly string[]): string | undefined {
  if (name === RUN_SECRET || (typeof name === "string" && secrets.includes(name))) return undefined;
  return `${path}: Secret ${JSON.stringify(name ?? "")} is not allowed: Station containers read only Secret ${RUN_SECRET} unless the installation lists another in RUN_POD_SECRETS`;
}

export const envSecrets: Check = eachContainer(({ c, path }, { policy }) => {
  const secrets = policy.secrets ?? [];
  const env = objectList(c.env, `${path}.env`);
  if ("problem" in env) return env.problem;
  for (const [i, e] of env.items.entries()) {
    const from = e.valueFrom;
    if (from === undefined) continue;
    const at = `${path}.env[${i}].valueFrom`;
    if (!isObject(from)) return `${at} must be an object`;
    for (const kind of Object.keys(from)) {
      if (!ENV_VALUE_FROM.has(kind)) return notAllowed(`${at}.${kind}`, kind);
    }
    if (from.secretKeyRef !== undefined) {
      const ref = from.secretKeyRef;
      const problem = secretProblem(isObject(ref) ? ref.name : undefined, `${at}.secretKeyRef`, secrets);
      if (problem) return problem;
    }
  }
  const envFrom = objectList(c.envFrom, `${path}.envFrom`);
  if ("problem" in envFrom) return envFrom.problem;
  for (const [i, e] of envFrom.items.entries()) {
    const at = `${path}.envFrom[${i}]`;
    for (const kind of Object.keys(e)) if (!ENV_FROM.has(kind)) return notAllowed(`${at}.${kind}`, kind);
    if (e.secretRef !== undefined) {
      const ref = e.secretRef;
      const problem = secretProblem(isObject(ref) ? ref.name : undefined, `${at}.secretRef`, secrets);
      if (problem) return problem;
    }
  }
  return undefined;
});

/** Whether `path` (as a container reads it) is one of the run's directories, inside one, or the root. */
export function coversRunDir(path: unknown): string | undefined {
  if (typeof path !== "string") return undefined;
  const p = posix.normalize(`/${path}`).replace(/\/+$/, "") || "/";
  if (p === "/") return "/";
  return RUN_DIRS.find((dir) => p === dir || p.startsWith(`${dir}/`));
}

/**
 * The agent container's own mounts (those the builder keeps: not named like a run volume), its
 * devices and its termination-message file stay off the run's directories: a Station volume at
 * /agent/bin would replace the witness, the agent container's first process, which runs as root.
 */
export const agentMountPaths: Check = (g) => {
  if (!g.agent) return undefined;
  const { c, path } = g.agent;
  const runVolume = (name: unknown) => typeof name === "string" && RUN_VOLUME_NAMES.has(name);
  const mounts = objectList(c.volumeMounts, `${path}.volumeMounts`);
  if ("problem" in mounts) return mounts.problem;
  for (const [i, m] of mounts.items.entries()) {
    if (runVolume(m.name)) continue; // replaced by the controller's own mount
    const dir = coversRunDir(m.mountPath);
    if (dir) return runDirProblem(`${path}.volumeMounts[${i}].mountPath`, m.mountPath, dir);
  }
  const devices = objectList(c.volumeDevices, `${path}.volumeDevices`);
  if ("problem" in devices) return devices.problem;
  for (const [i, d] of devices.items.entries()) {
    const dir = coversRunDir(d.devicePath);
    if (dir) return runDirProblem(`${path}.volumeDevices[${i}].devicePath`, d.devicePath, dir);
  }
  const dir = coversRunDir(c.terminationMessagePath);
  if (dir) return runDirProblem(`${path}.terminationMessagePath`, c.terminationMessagePath, dir);
  return undefined;
};

const runDirProblem = (field: string, value: unknown, dir: string) =>
  `${field} ${JSON.stringify(value)} is not allowed: the agent container's ${dir === "/" ? "root" : dir} is the controller's (the witness, the workspace, the run's result)`;
