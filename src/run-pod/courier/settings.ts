/**
 * What the courier reads from its environment (docs/run-pod.md#delivery; docs/decisions.md D-47, D-48): the
 * delivery settings the controller rendered into AGENT_DELIVERY, the forge token, the target
 * repository and branch, and where the agent's result appears. Pure: no I/O, never throws.
 */
import { join } from "node:path";
import { type Env, jsonEnv, positiveIntEnv } from "../common/run-env.js";
import { DEFAULT_RESULT_DIR, RESULT_FILE } from "../witness/result-dir.js";

/** Fallback when AGENT_DELIVERY carries no title (the controller always sends one). */
const FALLBACK_TITLE = "ai-agent delivery";

export interface DeliverySettings {
  /** `delivery.pullRequest.repo`: which workspace clone is delivered; "" = choose (see clone.ts). */
  repo: string;
  /** PR base branch; "" = the declared repo's ref when it is a branch, else the target's default branch. */
  base: string;
  title: string;
  body: string;
  draft: boolean;
}

export interface CourierSettings {
  delivery: DeliverySettings;
  /** DELIVERY_TOKEN; only ever handed to the push/fetch git process env and the API's header. */
  token: string;
  /** TARGET_REPO (`owner/name`); "" = the delivered clone's declared URL. */
  targetRepo: string;
  /** BRANCH_NAME; the controller defaults it to `agent/<Agent name>` with delivery. */
  branch: string;
  /**
   * AGENT_UID: the courier's commits carry it as an `Agent-UID:` trailer, and an existing branch is
   * rewritten only when its tip carries it (this Agent created the branch).
   */
  agentUid: string;
  workspaceDir: string;
  home: string;
  /** The witness's result directory (AGENT_RESULT_DIR) and its exit-code file in it. */
  resultDir: string;
  exitCodePath: string;
  /** How long to wait for that file: AGENT_DEADLINE_MS + 5 s; undefined = no bound (docs/decisions.md D-48). */
  waitMs: number | undefined;
  /**
   * When the supervisor must have reported (AGENT_DEADLINE_AT + AGENT_TAIL_MS, epoch ms on the
   * controller's clock), so the wait ends by the Job's clock even when the courier started late.
   */
  reportBy: number | undefined;
  /** GitHub REST API base, e.g. `https://api.github.com` (GITHUB_API_URL). */
  apiUrl: string;
  /** Git host base, e.g. `https://github.com` (GITHUB_SERVER_URL); push URLs are built on it. */
  serverUrl: string;
  /** AGENT_REPOS when the controller passes it: the spec's clones (trusted over a clone's config). */
  repos: RepoRef[] | undefined;
  agentName: string;
  stationName: string;
  taskId: string;
}

export interface RepoRef {
  name: string;
  url: string;
  path?: string;
  /** The ref the init checked out; the PR's base when the target has a branch of that name. */
  ref?: string;
}

/** Grace after AGENT_DEADLINE_MS for the witness to record the result (docs/decisions.md D-48). */
export const EXIT_CODE_GRACE_MS = 5000;

const trimSlash = (url: string) => url.replace(/\/+$/, "");

export function courierSettings(env: Env): CourierSettings {
  const raw = jsonEnv(env, "AGENT_DELIVERY");
  const d = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === "string" ? v : "");
  const home = env.HOME || "/agent";
  const deadline = positiveIntEnv(env, "AGENT_DEADLINE_MS");
  const deadlineAt = positiveIntEnv(env, "AGENT_DEADLINE_AT");
  const tailMs = positiveIntEnv(env, "AGENT_TAIL_MS");
  return {
    delivery: {
      repo: str(d.repo),
      base: str(d.base),
      title: str(d.title) || env.AGENT_NAME || FALLBACK_TITLE,
      body: str(d.body),
      draft: d.draft === true,
    },
    token: env.DELIVERY_TOKEN ?? "",
    targetRepo: (env.TARGET_REPO ?? "").trim(),
    branch: (env.BRANCH_NAME ?? "").trim() || (env.AGENT_NAME ? `agent/${env.AGENT_NAME}` : ""),
    agentUid: (env.AGENT_UID ?? "").trim(),
    workspaceDir: env.WORKSPACE_DIR || "/workspace",
    home,
    resultDir: env.AGENT_RESULT_DIR || DEFAULT_RESULT_DIR,
    exitCodePath: join(env.AGENT_RESULT_DIR || DEFAULT_RESULT_DIR, RESULT_FILE),
    waitMs: deadline === undefined ? undefined : deadline + EXIT_CODE_GRACE_MS,
    reportBy: deadlineAt === undefined ? undefined : deadlineAt + (tailMs ?? 0),
    apiUrl: trimSlash(env.GITHUB_API_URL || "https://api.github.com"),
    serverUrl: trimSlash(env.GITHUB_SERVER_URL || "https://github.com"),
    repos: reposOf(jsonEnv(env, "AGENT_REPOS")),
    agentName: env.AGENT_NAME ?? "",
    stationName: env.STATION_NAME ?? "",
    taskId: env.TASK_ID ?? "",
  };
}

/**
 * How long, from `now`, to wait for the agent's result: until its own budget from the courier's
 * start runs out or the supervisor's report-by time (plus the witness's grace) passes, whichever
 * comes first; undefined = no bound (the Job's deadline ends the pod).
 */
export function resultWaitMs(
  settings: Pick<CourierSettings, "waitMs" | "reportBy">,
  now: number,
): number | undefined {
  if (settings.reportBy === undefined) return settings.waitMs;
  const byClock = Math.max(0, settings.reportBy + EXIT_CODE_GRACE_MS - now);
  return settings.waitMs === undefined ? byClock : Math.min(settings.waitMs, byClock);
}

function reposOf(value: unknown): RepoRef[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value
    .filter((r): r is Record<string, unknown> => typeof r === "object" && r !== null)
    .filter((r) => typeof r.name === "string" && typeof r.url === "string")
    .map((r) => ({
      name: r.name as string,
      url: r.url as string,
      ...(typeof r.path === "string" && r.path !== "" ? { path: r.path } : {}),
      ...(typeof r.ref === "string" && r.ref !== "" ? { ref: r.ref } : {}),
    }));
}

/** The PR body when the definition sets none (docs/run-pod.md#delivery): who opened it, for what. */
export function defaultBody(s: Pick<CourierSettings, "agentName" | "stationName" | "taskId">): string {
  const lines = [`Opened by ai-agent for Agent \`${s.agentName}\` on Station \`${s.stationName}\`.`];
  if (s.taskId) lines.push("", `Task: \`${s.taskId}\``);
  return lines.join("\n");
}
