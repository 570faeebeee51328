/**
 * Per-vendor CLI argv (docs/agent-clis.md#compatibility). The rendered prompt is always the last element and never
 * passes through a shell.
 */

import type { AgentDefinitionSpec, McpServer } from "../types.js";
import { routeModel, type Vendor } from "./routing.js";

/** Path of the supervisor binary the init copies into the agent volume. */
export const SUPERVISOR_PATH = "/agent/bin/ai-agent-supervisor";

/** Env var name an MCP server's header secret is exposed as: upper-cased, non-alphanumerics → `_`. */
export function mcpHeaderEnvName(secretKey: string): string {
  return secretKey.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

/** Claude's --mcp-config JSON; header tokens stay in env (`${NAME}`), never in argv. */
export function mcpConfigJson(servers: McpServer[]): string {
  // No prototype: a server the author named `__proto__` is a server, not the object's prototype.
  const mcpServers: Record<string, Record<string, unknown>> = Object.create(null);
  for (const s of servers) {
    if (s.transport === "stdio") {
      mcpServers[s.name] = {
        type: "stdio",
        command: s.command ?? "",
        ...(s.args?.length ? { args: s.args } : {}),
      };
    } else {
      mcpServers[s.name] = {
        type: s.transport,
        url: s.url ?? "",
        ...(s.headers_secret
          ? { headers: { Authorization: `\${${mcpHeaderEnvName(s.headers_secret)}}` } }
          : {}),
      };
    }
  }
  return JSON.stringify({ mcpServers });
}

/** tool_config.command when it is a non-empty array of strings; else undefined. */
export function execCommand(def: AgentDefinitionSpec): string[] | undefined {
  const cmd = def.tool_config?.command;
  if (!Array.isArray(cmd) || cmd.length === 0 || !cmd.every((c) => typeof c === "string")) return undefined;
  return cmd as string[];
}

/**
 * A model that names only its CLI (`codex`, `gemini`, like `opencode`) asks for the CLI's own
 * default model: an empty model routes to claude, so this is how a recipe runs codex or gemini
 * on their defaults (docs/decisions.md D-19). The run's lines name the model the CLI used.
 */
export function isCliDefault(model: string): boolean {
  const m = model.toLowerCase();
  return m === "codex" || m === "gemini";
}

/**
 * The CLI argv for one run of `model` with `prompt`. Throws for exec without a valid
 * tool_config.command (callers validate first).
 */
export function cliArgv(def: AgentDefinitionSpec, model: string, prompt: string): string[] {
  const vendor: Vendor = routeModel(model);
  const bypass = def.permission_mode === "bypass";
  const conv = def.resources?.conversation ?? {};
  switch (vendor) {
    case "claude": {
      const argv = ["claude", "--print", "--verbose", "--output-format", "stream-json"];
      // docs/decisions.md D-19: an empty model lets the CLI pick its own default.
      if (model !== "") argv.push("--model", model);
      if (bypass) argv.push("--dangerously-skip-permissions");
      else for (const t of def.allowed_tools ?? []) argv.push("--allowedTools", t);
      for (const t of def.disallowed_tools ?? []) argv.push("--disallowedTools", t);
      const mcp = def.resources?.mcp_servers ?? [];
      if (mcp.length > 0) argv.push("--mcp-config", mcpConfigJson(mcp), "--strict-mcp-config");
      // The CLI exits 1 when this file is missing, and the init's fetch of it is best-effort: the
      // supervisor's claude setup writes an empty one when none is there (docs/agent-clis.md,
      // "claude"), as this pure core cannot look at the pod's files.
      if (def.resources?.skills_source) argv.push("--settings", "/agent/.claude/settings.json");
      if (def.max_turns !== undefined && def.max_turns > 0) argv.push("--max-turns", String(def.max_turns));
      if (conv.id) argv.push("--resume", conv.id);
      if (conv.id && conv.pin) argv.push("--fork-session");
      if (conv.pin) argv.push("--session-id", conv.pin);
      argv.push("--", prompt);
      return argv;
    }
    case "codex": {
      // docs/agent-clis.md (codex): /workspace is never a git repository, hence the skip. Under
      // `auto` codex runs without its own sandbox (its default is read-only; workspace-write needs
      // bwrap and user namespaces, which the run pod's RuntimeDefault seccomp profile forbids, so
      // every write failed and the run "succeeded" having changed nothing): the pod is the sandbox.
      // `exec resume` has no --sandbox, so the setting goes through -c for both.
      const opts = [
        "--json",
        "--skip-git-repo-check",
        ...(model !== "" && !isCliDefault(model) ? ["--model", model] : []),
        ...(bypass
          ? ["--dangerously-bypass-approvals-and-sandbox"]
          : ["-c", 'sandbox_mode="danger-full-access"']),
      ];
      if (conv.id) return ["codex", "exec", "resume", conv.id, ...opts, "--", prompt];
      return ["codex", "exec", ...opts, "--", prompt];
    }
    case "gemini": {
      // docs/agent-clis.md (gemini): every value a user or a CLI chose rides in `--flag=value`, so
      // none can be read as an option (`--resume --yolo` switched auto-approve on). Trust, auth,
      // telemetry and disallowed tools are the CLI setup's (settings, policy file, environment).
      const argv = ["gemini", "--output-format", "stream-json"];
      if (model !== "" && !isCliDefault(model)) argv.push(`--model=${model}`);
      if (bypass) argv.push("--yolo");
      else for (const t of def.allowed_tools ?? []) argv.push(`--allowed-tools=${t}`);
      if (conv.id) argv.push(`--resume=${conv.id}`);
      argv.push(`--prompt=${prompt}`);
      return argv;
    }
    case "opencode": {
      const argv = ["opencode", "run", "--format", "json"];
      const stripped = model.replace(/^opencode\//i, "");
      if (model.toLowerCase() !== "opencode" && stripped !== "") argv.push("--model", stripped);
      // Without it `opencode run` refuses every permission request (a write outside the workspace,
      // a command its rules ask about) and ends the run; `--auto` approves all but explicit denials.
      if (bypass) argv.push("--auto");
      argv.push("--", prompt);
      return argv;
    }
    case "exec": {
      const cmd = execCommand(def);
      if (!cmd)
        throw new Error("tool_config.command must be a non-empty array of strings for the exec model");
      return [...cmd, prompt];
    }
  }
}
