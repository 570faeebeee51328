/**
 * What the supervisor reads from its environment besides sinks and identity
 * (docs/supervisor.md#start-settings-and-signals). Pure and forgiving: a missing or malformed value
 * falls back to the default that page names, never throws.
 */
import { routeModel, type Vendor } from "../../core/cli/routing.js";
import type { WatchedFile } from "../../core/types.js";
import { type Env, jsonEnv, positiveIntEnv } from "../common/run-env.js";
import { DEFAULT_RETRY_BASE_MS } from "./provider-retry/backoff.js";

export const DEFAULT_EXIT_GRACE_MS = 5000;
export const DEFAULT_HOME = "/agent";
export const DEFAULT_WORKSPACE_DIR = "/workspace";
/** AGENT_TAIL_MS when unset: the Job builder's margin for the supervisor's report. */
export const DEFAULT_TAIL_MS = 30_000;

export type Execution = "interactive" | "realtime";

export interface SupervisorSettings {
  vendor: Vendor;
  /** AGENT_EXIT_GRACE_MS; missing, invalid or ≤ 0 ⇒ 5000. */
  graceMs: number;
  /** AGENT_DEADLINE_MS from the supervisor's start; missing, invalid or ≤ 0 ⇒ no deadline. */
  deadlineMs?: number;
  /** AGENT_DEADLINE_AT (epoch ms): the same deadline counted from the Job's creation. */
  deadlineAt?: number;
  /** AGENT_TAIL_MS: how long after the deadline the result must be reported; default 30 s. */
  tailMs: number;
  /** AGENT_PROVIDER_RETRY_BASE_MS: the first backoff after a provider limit (docs/provider-limits.md). */
  providerRetryBaseMs: number;
  home: string;
  workspaceDir: string;
  /** output.watch entries with a string `event` and `path`, in declaration order. */
  watch: WatchedFile[];
  /** Watch entries dropped because they were not `{event, path}` strings (for the log). */
  malformedWatch: number;
}

export function supervisorSettings(env: Env): SupervisorSettings {
  const watch: WatchedFile[] = [];
  let malformedWatch = 0;
  const declared = jsonEnv(env, "AGENT_WATCH");
  if (declared !== undefined) {
    if (!Array.isArray(declared)) malformedWatch++;
    else {
      for (const entry of declared) {
        const e = entry as Partial<WatchedFile> | null;
        if (e && typeof e.event === "string" && typeof e.path === "string" && e.path !== "") {
          watch.push({ event: e.event, path: e.path });
        } else malformedWatch++;
      }
    }
  }
  return {
    vendor: routeModel(env.AGENT_MODEL ?? ""),
    graceMs: positiveIntEnv(env, "AGENT_EXIT_GRACE_MS") ?? DEFAULT_EXIT_GRACE_MS,
    deadlineMs: positiveIntEnv(env, "AGENT_DEADLINE_MS"),
    deadlineAt: positiveIntEnv(env, "AGENT_DEADLINE_AT"),
    tailMs: positiveIntEnv(env, "AGENT_TAIL_MS") ?? DEFAULT_TAIL_MS,
    providerRetryBaseMs: positiveIntEnv(env, "AGENT_PROVIDER_RETRY_BASE_MS") ?? DEFAULT_RETRY_BASE_MS,
    home: env.HOME || DEFAULT_HOME,
    workspaceDir: env.WORKSPACE_DIR || DEFAULT_WORKSPACE_DIR,
    watch,
    malformedWatch,
  };
}

/** AGENT_EXECUTION; unset or empty means interactive (the Job builder always sets it). */
export function executionMode(env: Env): Execution | { invalid: string } {
  const raw = env.AGENT_EXECUTION ?? "";
  if (raw === "" || raw === "interactive") return "interactive";
  if (raw === "realtime") return "realtime";
  return { invalid: raw };
}
