/**
 * claude: what the CLI needs before its first run (docs/agent-clis.md, "claude").
 *
 * - CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1: without it Claude Code 2.1.328 probes
 *   `HEAD <base>/api/hello` and resolves api.anthropic.com for its telemetry even when
 *   ANTHROPIC_BASE_URL points elsewhere; with it, the model endpoint is the only host it contacts.
 * - CLAUDE_CODE_MAX_RETRIES bounds the CLI's own retry loop, which retries every failed API call,
 *   a 401 included, 10 times with backoff growing to about 40 s (a revoked key failed a run only
 *   after 3 minutes). With 3 a 401 ends the run in seconds, a 429 still gets three tries honouring
 *   retry-after. A run that sets the variable itself keeps its value.
 * - `$HOME/.claude/settings.json`, written only when absent: the argv passes `--settings` with that
 *   path when the definition has a skills_source (core/argv.ts), and the CLI exits 1 with
 *   `Settings file not found` when the init could not fetch the file. An empty settings object
 *   changes nothing; a file the init fetched is kept.
 */
import { join } from "node:path";
import type { CliSetup, CliSetupInput } from "./types.js";

/** Retries the CLI gets for one API call unless the run says otherwise. */
export const CLAUDE_MAX_RETRIES = "3";

export function claudeSetup(input: CliSetupInput): CliSetup {
  const retries = input.env.CLAUDE_CODE_MAX_RETRIES?.trim() ? undefined : CLAUDE_MAX_RETRIES;
  return {
    env: {
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      ...(retries !== undefined ? { CLAUDE_CODE_MAX_RETRIES: retries } : {}),
    },
    files: [
      { path: join(input.home, ".claude", "settings.json"), content: "{}\n", mode: 0o644, ifAbsent: true },
    ],
    notices:
      retries !== undefined
        ? [`claude: API calls retried at most ${retries} times (CLAUDE_CODE_MAX_RETRIES)`]
        : [],
  };
}
