/**
 * The argv that continues a CLI's session after a provider limit (docs/provider-limits.md#riding-out-a-limit):
 * the run's own argv (core/argv.ts) with the session to resume and the continuation prompt in
 * place of the original prompt, every other option kept (model, permissions, tools, MCP servers,
 * settings). Pure.
 *
 * - claude: `--resume <id>` (an earlier `--resume`, `--fork-session` and `--session-id` are
 *   dropped: the id is the session the failed process announced, the pinned or forked one included);
 * - codex: `exec resume <thread id>`;
 * - gemini: `--resume=<id>`;
 * - opencode: `--session <id>` (its sessions live under $HOME, which the run keeps between processes);
 * - exec: a plain command has no session to continue.
 */
import type { Vendor } from "../../../core/cli/routing.js";

/** What the CLI reads as the next user message of the continued session. */
export const RESUME_PROMPT =
  "Continue the task from where you stopped. Your last request to the model failed on a temporary provider limit (rate limit, overload or a dropped connection); it has passed.";

/** The options before the trailing `-- <prompt>` of a claude, codex or opencode argv; undefined when it has none. */
function optionsBeforePrompt(argv: readonly string[]): string[] | undefined {
  if (argv.length < 3 || argv[argv.length - 2] !== "--") return undefined;
  return argv.slice(0, -2);
}

/** Drops `flag <value>` pairs (and bare `flag`s when `takesValue` is false). */
function without(argv: readonly string[], flag: string, takesValue: boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === flag) {
      if (takesValue) i++;
      continue;
    }
    out.push(argv[i] as string);
  }
  return out;
}

/** The argv continuing `sessionId` with `prompt`, or undefined when this argv cannot be continued. */
export function resumeArgv(
  vendor: Vendor,
  argv: readonly string[],
  sessionId: string,
  prompt: string = RESUME_PROMPT,
): string[] | undefined {
  if (sessionId === "" || sessionId.startsWith("-")) return undefined;
  switch (vendor) {
    case "claude": {
      const options = optionsBeforePrompt(argv);
      if (options === undefined) return undefined;
      let kept = without(options, "--resume", true);
      kept = without(kept, "--session-id", true);
      kept = without(kept, "--fork-session", false);
      return [...kept, "--resume", sessionId, "--", prompt];
    }
    case "codex": {
      const options = optionsBeforePrompt(argv);
      if (options === undefined || options[0] !== "codex" || options[1] !== "exec") return undefined;
      const rest = options[2] === "resume" ? options.slice(4) : options.slice(2);
      return ["codex", "exec", "resume", sessionId, ...rest, "--", prompt];
    }
    case "gemini": {
      if (!argv.some((a) => a.startsWith("--prompt="))) return undefined;
      const kept = argv.filter(
        (a) => !a.startsWith("--resume=") && !a.startsWith("--prompt=") && a !== "--resume",
      );
      return [...kept, `--resume=${sessionId}`, `--prompt=${prompt}`];
    }
    case "opencode": {
      const options = optionsBeforePrompt(argv);
      if (options === undefined) return undefined;
      return [...without(options, "--session", true), "--session", sessionId, "--", prompt];
    }
    case "exec":
      return undefined;
  }
}
