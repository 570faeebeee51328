/** What every tool executor gets and returns (docs/run-pod.md#the-init step 4). */
import type { Env } from "../common/run-env.js";
import type { CommandRunner } from "./commands.js";
import type { DownloadOptions } from "./download.js";
import type { InitPlan } from "./plan.js";

/** Why the init stops: the `init/failed` event's fields, the exit code and the cause to print last. */
export interface InitFailure {
  tool?: string;
  reason?: string;
  /** The failing step's exit code, on the event (docs/run-pod.md#the-init step 4). */
  exitCode?: number;
  /** The init's own exit code. */
  exit: number;
  /** Human-readable cause naming the failing path or step; printed as `[init] <message>`. */
  message: string;
}

export interface InitContext {
  /** The environment the init runs with and hands to its children. */
  env: Env;
  plan: InitPlan;
  /** Writes `[init] <line>` to stderr, with URL credentials redacted. */
  log(line: string): void;
  run: CommandRunner;
  /** Download settings the tools start from (tests add a CA; headers are per request). */
  download: Partial<DownloadOptions>;
}

/** A tool either completes (undefined) or names why the init stops. */
export type ToolResult = InitFailure | undefined;

/** A step exited non-zero: `init/failed tool=<name> exitCode=<n>`, exit n. */
export function stepFailure(tool: string, exitCode: number, message: string): InitFailure {
  return { tool, exitCode, exit: exitCode, message };
}

export function errnoOf(err: unknown): string {
  const e = err as NodeJS.ErrnoException | undefined;
  return e?.code ?? (err instanceof Error ? err.message : String(err));
}

/** Replaces every header value in `text`: a cause must never carry one (docs/run-pod.md#the-init). */
export function withoutHeaderValues(text: string, headers: ReadonlyArray<[string, string]>): string {
  let out = text;
  for (const [, value] of headers) if (value.length >= 4) out = out.split(value).join("<redacted>");
  return out;
}
