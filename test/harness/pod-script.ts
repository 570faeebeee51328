/**
 * What a test chooses about the pods it cannot create itself (Job pods): exit codes, how long they
 * run, and what each container logs. Pure data and rules; the I/O lives in pod-scripter.ts.
 */

/** Outcome and logs of one pod. */
export interface PodScript {
  /** Exit code of every main container (not init containers). 0 ends the pod Succeeded, else Failed. */
  exitCode?: number;
  /** Exit code per container name (`init`, `agent`, `courier`, …); wins over `exitCode`. */
  exitCodes?: Record<string, number>;
  /** Go duration (`"1500ms"`, `"2s"`) the pod stays Running before it ends. */
  runTime?: string;
  /** Log of each container, as one text (lines split on "\n") or as lines. Unset containers log nothing. */
  logs?: Record<string, string | readonly string[]>;
  /**
   * Log of a container served straight from a file the test wrote, already in CRI log format
   * (`writeCriLogFile` in cri-log-file.ts), by absolute path: for logs too large for a ConfigMap
   * (a 64 MiB log). Wins over `logs` for that container; only through a rule (scriptPods), never
   * as an annotation. The file must stay until the pod's log is no longer read.
   */
  logFiles?: Record<string, string>;
}

export const ANNOTATION_PREFIX = "test.example/";
export const EXIT_CODE_ANNOTATION = "test.example/exit-code";
export const RUN_TIME_ANNOTATION = "test.example/run-time";
export const LOGS_ANNOTATION_PREFIX = "test.example/logs.";
/** Set by the scripter once the pod's logs are in place; kwok ends a pod only once it is set. */
export const FINISH_ANNOTATION = "harness.test.example/finish";
/**
 * Absolute RFC 3339 time at which kwok ends the pod: scripting time + runTime. Absolute, because
 * kwok re-arms a relative delay whenever it re-lists pods (e.g. after an API-server restart).
 */
export const FINISH_AT_ANNOTATION = "harness.test.example/finish-at";
/** Set by the scripter on every pod it has handled. */
export const SCRIPTED_ANNOTATION = "harness.test.example/scripted";
/** Label of the ConfigMaps that carry scripts keyed by pod labels (see scriptPods in context.ts). */
export const SCRIPT_RULE_LABEL = "harness.test.example/pod-script";

const GO_DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;
const CONTAINER_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function checkExitCode(where: string, code: unknown): number {
  if (typeof code !== "number" || !Number.isInteger(code) || code < 0 || code > 255) {
    throw new Error(`${where} must be an integer from 0 to 255, got ${JSON.stringify(code)}`);
  }
  return code;
}

function checkContainer(where: string, name: string): void {
  if (!CONTAINER_NAME.test(name) || name.length > 63) {
    throw new Error(`${where}: ${JSON.stringify(name)} is not a valid container name`);
  }
}

/** Throws an error naming the bad field; returns the script unchanged otherwise. */
export function validatePodScript(script: PodScript): PodScript {
  if (script.exitCode !== undefined) checkExitCode("exitCode", script.exitCode);
  for (const [name, code] of Object.entries(script.exitCodes ?? {})) {
    checkContainer("exitCodes", name);
    checkExitCode(`exitCodes.${name}`, code);
  }
  if (script.runTime !== undefined && !GO_DURATION.test(script.runTime)) {
    throw new Error(
      `runTime must be a Go duration such as "2s" or "1500ms", got ${JSON.stringify(script.runTime)}`,
    );
  }
  for (const name of Object.keys(script.logs ?? {})) checkContainer("logs", name);
  for (const [name, path] of Object.entries(script.logFiles ?? {})) {
    checkContainer("logFiles", name);
    if (typeof path !== "string" || !path.startsWith("/")) {
      throw new Error(`logFiles.${name} must be an absolute path, got ${JSON.stringify(path)}`);
    }
  }
  return script;
}

function logText(log: string | readonly string[]): string {
  return typeof log === "string" ? log : log.join("\n");
}

/**
 * The annotations that make a pod follow `script`; put them on a pod template
 * (e.g. a Station's) when the pod's labels are not known in advance.
 */
export function podScriptAnnotations(script: PodScript): Record<string, string> {
  validatePodScript(script);
  if (script.logFiles !== undefined) {
    throw new Error("logFiles: only through a rule (scriptPods), not as pod annotations");
  }
  const out: Record<string, string> = {};
  if (script.exitCode !== undefined) out[EXIT_CODE_ANNOTATION] = String(script.exitCode);
  for (const [name, code] of Object.entries(script.exitCodes ?? {})) {
    out[`${EXIT_CODE_ANNOTATION}.${name}`] = String(code);
  }
  if (script.runTime !== undefined) out[RUN_TIME_ANNOTATION] = script.runTime;
  for (const [name, log] of Object.entries(script.logs ?? {}))
    out[`${LOGS_ANNOTATION_PREFIX}${name}`] = logText(log);
  return out;
}

/** Reads a script back from pod annotations (the inverse of podScriptAnnotations). */
export function podScriptFromAnnotations(annotations: Record<string, string>): PodScript {
  const script: PodScript = {};
  for (const [key, value] of Object.entries(annotations)) {
    if (key === EXIT_CODE_ANNOTATION) {
      script.exitCode = checkExitCode(key, Number(value));
    } else if (key.startsWith(`${EXIT_CODE_ANNOTATION}.`)) {
      const name = key.slice(EXIT_CODE_ANNOTATION.length + 1);
      script.exitCodes = { ...script.exitCodes, [name]: checkExitCode(key, Number(value)) };
    } else if (key === RUN_TIME_ANNOTATION) {
      script.runTime = value;
    } else if (key.startsWith(LOGS_ANNOTATION_PREFIX)) {
      script.logs = { ...script.logs, [key.slice(LOGS_ANNOTATION_PREFIX.length)]: value };
    }
  }
  return validatePodScript(script);
}

/** Field-wise merge; `over` wins where both set a value (per container for exit codes and logs). */
export function mergePodScripts(base: PodScript, over: PodScript): PodScript {
  const merged: PodScript = { ...base, ...stripUndefined(over) };
  if (base.exitCodes || over.exitCodes) merged.exitCodes = { ...base.exitCodes, ...over.exitCodes };
  if (base.logs || over.logs) merged.logs = { ...base.logs, ...over.logs };
  if (base.logFiles || over.logFiles) merged.logFiles = { ...base.logFiles, ...over.logFiles };
  return merged;
}

function stripUndefined(script: PodScript): PodScript {
  return Object.fromEntries(Object.entries(script).filter(([, v]) => v !== undefined)) as PodScript;
}

/** A script that applies to every pod whose labels include all of `matchLabels`. */
export interface PodScriptRule {
  name: string;
  /** Creation order (milliseconds since the epoch, made unique by the writer); later rules win. */
  order: number;
  matchLabels: Record<string, string>;
  script: PodScript;
}

export function ruleMatches(rule: PodScriptRule, labels: Record<string, string>): boolean {
  return Object.entries(rule.matchLabels).every(([k, v]) => labels[k] === v);
}

/**
 * Final script of a pod: every matching rule merged oldest first (so a later rule overrides only
 * the fields it sets), then what the pod's own annotations say (those came from its pod template,
 * i.e. they were chosen for this very pod).
 */
export function resolvePodScript(
  rules: readonly PodScriptRule[],
  labels: Record<string, string>,
  annotations: Record<string, string>,
): PodScript {
  const matching = rules
    .filter((r) => ruleMatches(r, labels))
    .sort((a, b) => a.order - b.order || a.name.localeCompare(b.name));
  let script: PodScript = {};
  for (const rule of matching) script = mergePodScripts(script, rule.script);
  return mergePodScripts(script, podScriptFromAnnotations(annotations));
}

/**
 * Annotations the scripter adds to a pod: the script's outcome (so kwok's stage can read it) plus
 * the finish marker when the pod should end (Job pods always; other pods when an exit code is set).
 */
export function scripterPatch(
  script: PodScript,
  existing: Record<string, string>,
  ownedByJob: boolean,
  now: Date,
): Record<string, string> {
  const outcome = podScriptAnnotations({ ...script, logs: undefined, logFiles: undefined });
  const patch: Record<string, string> = { [SCRIPTED_ANNOTATION]: "true" };
  for (const [k, v] of Object.entries(outcome)) if (existing[k] !== v) patch[k] = v;
  const ends = ownedByJob || script.exitCode !== undefined || Object.keys(script.exitCodes ?? {}).length > 0;
  if (ends) {
    patch[FINISH_ANNOTATION] = "true";
    const runMs = script.runTime === undefined ? 0 : goDurationMs(script.runTime);
    patch[FINISH_AT_ANNOTATION] = new Date(now.getTime() + runMs).toISOString();
  }
  return patch;
}

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Milliseconds of a Go duration string such as "1m30s" or "1500ms". */
export function goDurationMs(duration: string): number {
  if (!GO_DURATION.test(duration)) throw new Error(`not a Go duration: ${JSON.stringify(duration)}`);
  let total = 0;
  for (const [, value, unit] of duration.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) {
    total += Number(value) * (UNIT_MS[unit ?? ""] ?? 0);
  }
  return total;
}

/**
 * Renders a log as a CRI log file (what kubelet writes and kwok serves): one
 * `<RFC3339Nano> stdout F <line>` entry per line. A trailing newline adds no empty line.
 */
export function renderCriLog(log: string | readonly string[], at: Date): string {
  const text = logText(log);
  if (text.length === 0) return "";
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const stamp = at.toISOString().replace(/\.(\d{3})Z$/, ".$1000000Z");
  return lines.map((line) => `${stamp} stdout F ${line}\n`).join("");
}
