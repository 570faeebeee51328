/**
 * One realtime turn's CLI argv (docs/decisions.md D-41): the definition's CLI-relevant fields arrive as
 * AGENT_RECIPE and go through the same vendor adapter the controller uses for interactive runs
 * (core/argv.ts), with the turn's prompt and the session to continue.
 *
 * Claude: a fresh session's first turn pins the id the supervisor chose (`--session-id`); later
 * turns, and every turn of a resumed session, continue it (`--resume`). Codex and Gemini learn
 * their id from the first turn's output and resume it afterwards.
 */
import { cliArgv } from "../../../core/cli/argv.js";
import type { Vendor } from "../../../core/cli/routing.js";
import type { AgentDefinitionSpec } from "../../../core/types.js";
import { type Env, jsonEnv } from "../../common/run-env.js";

/** What the Job builder puts into AGENT_RECIPE (job-env.ts recipeOf). */
export interface Recipe {
  model: string;
  permission_mode?: AgentDefinitionSpec["permission_mode"];
  allowed_tools?: string[];
  disallowed_tools?: string[];
  max_turns?: number;
  mcp_servers?: NonNullable<NonNullable<AgentDefinitionSpec["resources"]>["mcp_servers"]>;
  skills_source?: string;
  tool_config?: AgentDefinitionSpec["tool_config"];
}

/** AGENT_RECIPE, falling back to AGENT_MODEL alone when it is missing or malformed. */
export function recipeFromEnv(env: Env): Recipe {
  const raw = jsonEnv(env, "AGENT_RECIPE");
  const recipe =
    typeof raw === "object" && raw !== null && !Array.isArray(raw) ? (raw as Partial<Recipe>) : {};
  return { ...recipe, model: typeof recipe.model === "string" ? recipe.model : (env.AGENT_MODEL ?? "") };
}

/** How this turn relates to the session: start it under a chosen id, continue one, or neither. */
export type SessionArgs = { pin: string } | { resume: string } | Record<string, never>;

export function turnArgv(recipe: Recipe, prompt: string, session: SessionArgs): string[] {
  const def: AgentDefinitionSpec = {
    model: recipe.model,
    prompt,
    ...(recipe.permission_mode ? { permission_mode: recipe.permission_mode } : {}),
    ...(recipe.allowed_tools ? { allowed_tools: recipe.allowed_tools } : {}),
    ...(recipe.disallowed_tools ? { disallowed_tools: recipe.disallowed_tools } : {}),
    ...(recipe.max_turns !== undefined ? { max_turns: recipe.max_turns } : {}),
    ...(recipe.tool_config ? { tool_config: recipe.tool_config } : {}),
    resources: {
      ...(recipe.mcp_servers?.length ? { mcp_servers: recipe.mcp_servers } : {}),
      ...(recipe.skills_source ? { skills_source: recipe.skills_source } : {}),
      conversation:
        "pin" in session ? { pin: session.pin } : "resume" in session ? { id: session.resume } : {},
    },
  } as AgentDefinitionSpec;
  return cliArgv(def, recipe.model, prompt);
}

/**
 * Why a prompt cannot be a turn of this vendor, or undefined: one that cannot be a single argv
 * element. A prompt starting with `-` is fine: every vendor's argv puts `--` (or `--prompt=`)
 * before it (core/argv.ts).
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function promptProblem(_vendor: Vendor, prompt: string): string | undefined {
  if (prompt.includes("\u0000"))
    return "the prompt contains a NUL character, which cannot be passed as an argument";
  if (LONE_SURROGATE.test(prompt)) return "the prompt is not valid UTF-16 (a lone surrogate)";
  return undefined;
}
