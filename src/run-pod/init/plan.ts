/**
 * The init's plan (docs/run-pod.md#the-init): which tools are active, in which order, and what each needs,
 * decided from the injected environment alone. No I/O here: the executors in `tools/` carry it out.
 */
import { join, resolve } from "node:path";
import { routeModel, type Vendor } from "../../core/cli/routing.js";
import { type Env, jsonEnv } from "../common/run-env.js";
import { lexicalDestination } from "./confine.js";
import { stripHttpUserinfo } from "./redact.js";

export const DEFAULT_HOME = "/agent";
export const DEFAULT_WORKSPACE = "/workspace";
/** The supervisor's file name next to the init executable and in `$HOME/bin`. */
export const SUPERVISOR_NAME = "ai-agent-supervisor";

export type ToolName = "supervisor" | "git" | "files" | "skills" | "conversation";

/** Conversation state directory under $HOME per vendor (docs/templating-and-routing.md#what-each-vendor-can-do). */
export const CONVERSATION_STATE_DIRS: Readonly<Partial<Record<Vendor, string>>> = {
  claude: ".claude/projects",
  codex: ".codex/sessions",
  gemini: ".gemini",
};

const VALID_ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const VALID_SKILL_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

export interface RepoPlan {
  name: string;
  /** What git clones: `owner/name` expanded, http(s) userinfo stripped. */
  cloneUrl: string;
  /** Normalised destination; set even when it is refused, so the message can name it. */
  dest: string;
  /** Why the destination is refused (outside the workspace), else undefined. */
  destProblem?: string;
  ref?: string;
  /** Env var the credential helper reads the token from at use time. */
  tokenEnv?: string;
}

export interface FilePlan {
  /** The path as declared (what every message names). */
  path: string;
  url: string;
  headersEnv?: string;
  /** Normalised destination when the lexical check passed. */
  dest?: string;
  /** Why the entry cannot be written (`path`), else undefined. */
  pathProblem?: string;
}

export type ToolPlan =
  | { tool: "supervisor"; source: string; target: string }
  | { tool: "git"; repos: RepoPlan[]; skipped: string[] }
  | { tool: "files"; entries: FilePlan[]; inputProblem?: string }
  | {
      tool: "skills";
      /** Claude only (docs/decisions.md D-57); other vendors get `ignored` notices instead. */
      stage: boolean;
      names: string[];
      invalidNames: string[];
      source?: string;
      skillsDir: string;
      settingsPath: string;
    }
  | {
      tool: "conversation";
      id: string;
      url: string;
      /** AGENT_RESUME_SESSION: a missing or unfetchable archive fails the init (docs/decisions.md D-44). */
      required: boolean;
    };

export interface InitPlan {
  home: string;
  /** HOME was set in the environment. */
  homeSet: boolean;
  workspace: string;
  vendor: Vendor;
  tools: ToolPlan[];
  /** Lines logged before the tools run (unsupported fields, skipped entries). */
  notices: string[];
}

export interface PlanInputs {
  /** Directory of the running init executable (the supervisor sits next to it). */
  execDir: string;
}

/** `owner/name` ⇒ its GitHub https URL; anything else as given (crds.md resources.repos). */
export function expandRepoUrl(url: string): string {
  return /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(url) && !url.startsWith(".")
    ? `https://github.com/${url}.git`
    : url;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function planRepos(env: Env, workspace: string, notices: string[]): { repos: RepoPlan[]; skipped: string[] } {
  const raw = jsonEnv(env, "AGENT_REPOS");
  const repos: RepoPlan[] = [];
  const skipped: string[] = [];
  if (raw !== undefined && !Array.isArray(raw))
    notices.push("AGENT_REPOS is not a JSON array; no repos cloned");
  for (const [i, entry] of (Array.isArray(raw) ? raw : []).entries()) {
    const e = (entry ?? {}) as Record<string, unknown>;
    const name = str(e.name);
    const url = str(e.url);
    if (name === undefined || url === undefined) {
      skipped.push(`repo #${i + 1} has no name or url; skipped`);
      continue;
    }
    const declared = str(e.path) ?? name;
    const confined = lexicalDestination(workspace, declared);
    const tokenSecret = str(e.token_secret);
    repos.push({
      name,
      cloneUrl: stripHttpUserinfo(expandRepoUrl(url)),
      dest: confined.ok ? confined.path : resolve(workspace, declared),
      ...(confined.ok ? {} : { destProblem: confined.cause }),
      ...(str(e.ref) !== undefined ? { ref: str(e.ref) } : {}),
      ...(tokenSecret !== undefined && VALID_ENV_NAME.test(tokenSecret) ? { tokenEnv: tokenSecret } : {}),
    });
  }
  return { repos, skipped };
}

function planFiles(env: Env, workspace: string): ToolPlan | undefined {
  const text = env.AGENT_FILES;
  if (text === undefined || text.trim() === "") return undefined;
  const raw = jsonEnv(env, "AGENT_FILES");
  if (!Array.isArray(raw))
    return { tool: "files", entries: [], inputProblem: "not a JSON array of {path, url, headers_secret?}" };
  if (raw.length === 0) return undefined;
  const entries = raw.map((entry, i): FilePlan => {
    const e = (entry ?? {}) as Record<string, unknown>;
    const path = str(e.path) ?? `#${i + 1}`;
    const url = str(e.url) ?? "";
    const headersEnv = str(e.headers_secret);
    const base = { path, url, ...(headersEnv !== undefined ? { headersEnv } : {}) };
    if (str(e.path) === undefined) return { ...base, pathProblem: "the entry has no path" };
    const confined = lexicalDestination(workspace, path);
    return confined.ok ? { ...base, dest: confined.path } : { ...base, pathProblem: confined.cause };
  });
  return { tool: "files", entries };
}

function planSkills(env: Env, home: string, vendor: Vendor, notices: string[]): ToolPlan {
  const raw = jsonEnv(env, "AGENT_SKILLS");
  const declared = Array.isArray(raw) ? raw.filter((n): n is string => typeof n === "string") : [];
  const source = str(env.AGENT_SKILLS_SOURCE?.trim());
  const stage = vendor === "claude";
  if (!stage) {
    if (declared.length > 0) notices.push(`resources.skills is not supported by ${vendor}; ignored`);
    if (source !== undefined) notices.push(`resources.skills_source is not supported by ${vendor}; ignored`);
  }
  return {
    tool: "skills",
    stage,
    names: declared.filter((n) => VALID_SKILL_NAME.test(n)),
    invalidNames: declared.filter((n) => !VALID_SKILL_NAME.test(n)),
    ...(source !== undefined ? { source } : {}),
    skillsDir: join(home, ".claude", "skills"),
    settingsPath: join(home, ".claude", "settings.json"),
  };
}

/** `<source>/<id>`, with the id as one path segment. */
export function conversationUrl(source: string, id: string): string {
  return `${source.replace(/\/+$/, "")}/${encodeURIComponent(id)}`;
}

function planConversation(env: Env, vendor: Vendor): ToolPlan | undefined {
  const resume = str(env.AGENT_RESUME_SESSION?.trim());
  const id = resume ?? str(env.AGENT_CONVERSATION_ID?.trim());
  const source = str(env.AGENT_CONVERSATION_SOURCE?.trim());
  if (id === undefined || source === undefined || CONVERSATION_STATE_DIRS[vendor] === undefined)
    return undefined;
  return {
    tool: "conversation",
    id,
    url: conversationUrl(source, id),
    required: resume !== undefined,
  };
}

export function buildInitPlan(env: Env, inputs: PlanInputs): InitPlan {
  const homeSet = (env.HOME ?? "") !== "";
  const home = resolve(homeSet ? (env.HOME as string) : DEFAULT_HOME);
  const workspace = resolve(str(env.WORKSPACE_DIR) ?? DEFAULT_WORKSPACE);
  const vendor = routeModel(env.AGENT_MODEL ?? "");
  const notices: string[] = [];
  const tools: ToolPlan[] = [];

  tools.push({
    tool: "supervisor",
    source: str(env.AGENT_SUPERVISOR_SOURCE) ?? join(inputs.execDir, SUPERVISOR_NAME),
    target: join(home, "bin", SUPERVISOR_NAME),
  });
  const { repos, skipped } = planRepos(env, workspace, notices);
  if (repos.length > 0 || skipped.length > 0) tools.push({ tool: "git", repos, skipped });
  const files = planFiles(env, workspace);
  if (files !== undefined) tools.push(files);
  tools.push(planSkills(env, home, vendor, notices));
  const conversation = planConversation(env, vendor);
  if (conversation !== undefined) tools.push(conversation);

  return { home, homeSet, workspace, vendor, tools, notices };
}

/**
 * Executables the active tools need, in first-use order (docs/run-pod.md#the-init, step 2): git for clones. The CLI is
 * not the init's: the supervisor finds or installs it in the agent container, on the Station's
 * image (docs/agent-clis.md). Files, skills, conversation and the sinks work in-process.
 */
export function requiredExecutables(plan: InitPlan): string[] {
  return plan.tools.some((t) => t.tool === "git" && t.repos.length > 0) ? ["git"] : [];
}
