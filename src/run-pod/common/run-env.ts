/**
 * What every run-pod program reads from its injected environment (docs/run-pod.md#injected-environment): the run's
 * identity, its sinks and the sink retry settings. Parsing is forgiving where the spec says so
 * (a malformed AGENT_SINKS yields no sinks, docs/events.md#sinks) and never throws.
 */
import type { OutputSelector, Sink } from "../../core/types.js";
import type { EventSource } from "../../sinks/envelope.js";
import { normalizeSource } from "../../sinks/envelope.js";

export type Env = Readonly<Record<string, string | undefined>>;

/** The envelope source of a pod emitter: agent, station, task, pod, namespace (docs/events.md#envelope). */
export function podSource(env: Env): EventSource {
  return normalizeSource({
    agent: env.AGENT_NAME,
    station: env.STATION_NAME,
    task: env.TASK_ID,
    pod: env.POD_NAME,
    namespace: env.POD_NAMESPACE,
  });
}

/** JSON of an env var, or undefined when unset, empty or not valid JSON. */
export function jsonEnv(env: Env, name: string): unknown {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/**
 * The run's sinks: AGENT_SINKS plus one header-less http sink for AGENT_NOTIFY_URL (docs/events.md#sinks).
 * A malformed AGENT_SINKS yields no sinks; entries without a `type` are skipped.
 */
export function podSinks(env: Env): Sink[] {
  const declared = jsonEnv(env, "AGENT_SINKS");
  const sinks: Sink[] = Array.isArray(declared)
    ? declared.filter(
        (s): s is Sink => typeof s === "object" && s !== null && typeof (s as Sink).type === "string",
      )
    : [];
  const notify = env.AGENT_NOTIFY_URL;
  if (notify !== undefined && notify !== "") sinks.push({ type: "http", url: notify });
  return sinks;
}

/** AGENT_SELECT as a selector list; empty when unset or malformed (every line passes). */
export function podSelect(env: Env): OutputSelector[] {
  const select = jsonEnv(env, "AGENT_SELECT");
  return Array.isArray(select) ? (select as OutputSelector[]) : [];
}

/** A positive integer from env, else undefined (missing, invalid or ≤ 0). */
export function positiveIntEnv(env: Env, name: string): number | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || !/^\d+$/.test(raw)) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}
