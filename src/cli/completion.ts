/**
 * Shell completion the way kubectl plugins do it (kubectl ≥ 1.26): kubectl runs
 * `kubectl_complete-agent <args…> <partial word>` and reads one candidate a line, then
 * `:<directive>` (cobra's ShellCompDirective). The plugin answers the same protocol as
 * `kubectl-agent __complete …`, and `completion bash|zsh` prints scripts for calling
 * `kubectl-agent` directly. Candidate selection is pure; names come from `lookup`.
 */
import { COMMANDS } from "./args.js";

/** cobra.ShellCompDirectiveDefault: the shell may fall back to file names. */
export const DIRECTIVE_DEFAULT = 0;
/** cobra.ShellCompDirectiveNoFileComp. */
export const DIRECTIVE_NO_FILES = 4;

export type NameLookup = (kind: "agents" | "stations") => Promise<string[]>;

const GLOBAL_FLAGS = ["--namespace", "-n", "--context", "--kubeconfig", "--output", "-o", "--help"];
const VALUE_FLAGS = new Set([
  "-n",
  "--namespace",
  "--context",
  "--kubeconfig",
  "-o",
  "--output",
  "-p",
  "--param",
  "--model",
  "--timeout",
  "--token",
  "--api-url",
  "--station",
  "-f",
  "--filename",
]);
const FILE_FLAGS = new Set(["--kubeconfig", "-f", "--filename"]);

function flagsOf(command: string | undefined): string[] {
  const spec = command === undefined ? undefined : COMMANDS[command];
  const own = Object.entries(spec?.options ?? {}).flatMap(([name, o]) => [
    `--${name}`,
    ...(o.short ? [`-${o.short}`] : []),
  ]);
  const output =
    spec && spec.outputs.length > 0
      ? GLOBAL_FLAGS
      : GLOBAL_FLAGS.filter((f) => f !== "-o" && f !== "--output");
  return [...own, ...output];
}

/** `words`: the arguments after the plugin name, the last one being the word being completed. */
export async function complete(
  words: readonly string[],
  lookup: NameLookup,
): Promise<{ candidates: string[]; directive: number }> {
  const partial = words.at(-1) ?? "";
  const before = words.slice(0, -1);
  const previous = before.at(-1);
  const none = { candidates: [], directive: DIRECTIVE_NO_FILES };
  const positionals: string[] = [];
  for (let i = 0; i < before.length; i++) {
    const w = before[i] as string;
    if (VALUE_FLAGS.has(w)) i++;
    else if (!w.startsWith("-")) positionals.push(w);
  }
  const [command, ...args] = positionals;
  const filter = (list: string[]) => list.filter((c) => c.startsWith(partial));
  if (previous !== undefined && VALUE_FLAGS.has(previous)) {
    if (FILE_FLAGS.has(previous)) return { candidates: [], directive: DIRECTIVE_DEFAULT };
    if (previous === "-o" || previous === "--output") {
      return {
        candidates: filter(command ? (COMMANDS[command]?.outputs ?? []) : ["json", "yaml", "name"]),
        directive: DIRECTIVE_NO_FILES,
      };
    }
    if (previous === "--station")
      return { candidates: filter(await lookup("stations")), directive: DIRECTIVE_NO_FILES };
    return none;
  }
  if (partial.startsWith("-")) return { candidates: filter(flagsOf(command)), directive: DIRECTIVE_NO_FILES };
  if (command === undefined)
    return { candidates: filter([...Object.keys(COMMANDS), "help"]), directive: DIRECTIVE_NO_FILES };
  if (args.length > 0) return none;
  switch (command) {
    case "run":
      return { candidates: filter(await lookup("stations")), directive: DIRECTIVE_NO_FILES };
    case "logs":
    case "prompt":
    case "close":
    case "status":
      return { candidates: filter(await lookup("agents")), directive: DIRECTIVE_NO_FILES };
    case "completion":
      return { candidates: filter(["bash", "zsh"]), directive: DIRECTIVE_NO_FILES };
    case "help":
      return { candidates: filter(Object.keys(COMMANDS)), directive: DIRECTIVE_NO_FILES };
    default:
      return none;
  }
}

export function formatCompletion(result: { candidates: string[]; directive: number }): string {
  return `${result.candidates.map((c) => `${c}\n`).join("")}:${result.directive}\n`;
}

const HOOK_NOTE = `# For \`kubectl agent <TAB>\`, kubectl (>= 1.26) runs kubectl_complete-agent from PATH; the
# package installs it beside kubectl-agent (or: ln -s "$(command -v kubectl-agent)" \\
#   /usr/local/bin/kubectl_complete-agent). This script completes \`kubectl-agent\` itself.`;

export function completionScript(shell: "bash" | "zsh"): string {
  if (shell === "bash") {
    return `# bash completion for kubectl-agent: source <(kubectl agent completion bash)
${HOOK_NOTE}
_kubectl_agent() {
  local cur=\${COMP_WORDS[COMP_CWORD]}
  local out directive
  out=$(kubectl-agent __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
  directive=\${out##*:}
  out=\${out%:*}
  COMPREPLY=($(compgen -W "$out" -- "$cur"))
  if [[ \${#COMPREPLY[@]} -eq 0 && $(( directive & ${DIRECTIVE_NO_FILES} )) -eq 0 ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _kubectl_agent kubectl-agent
`;
  }
  return `#compdef kubectl-agent
# zsh completion for kubectl-agent: source <(kubectl agent completion zsh)
${HOOK_NOTE}
_kubectl_agent() {
  local out directive
  local -a lines comps
  out=$(kubectl-agent __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)
  lines=("\${(@f)out}")
  directive=\${lines[-1]#:}
  comps=("\${(@)lines[1,-2]}")
  if (( \${#comps} )); then
    compadd -- "\${comps[@]}"
  elif (( (directive & ${DIRECTIVE_NO_FILES}) == 0 )); then
    _files
  fi
}
compdef _kubectl_agent kubectl-agent
`;
}
