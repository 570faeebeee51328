/**
 * A small Dockerfile reader for the image invariants test: instructions with line
 * continuations joined, grouped into stages, ARG defaults substituted into FROM lines.
 * No docker engine is needed.
 */

export interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

export interface Stage {
  name?: string;
  image: string;
  instructions: Instruction[];
}

export function parseInstructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split(/\r?\n/);
  let current = "";
  let start = 0;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] ?? "";
    if (current === "" && (raw.trim() === "" || raw.trimStart().startsWith("#"))) continue;
    if (current === "") start = i + 1;
    if (raw.trimEnd().endsWith("\\")) {
      current += `${raw.trimEnd().slice(0, -1)} `;
      continue;
    }
    current += raw;
    const match = /^\s*(\w+)\s+([\s\S]*)$/.exec(current);
    if (match === null) throw new Error(`Dockerfile line ${start}: cannot parse ${JSON.stringify(current)}`);
    out.push({ keyword: (match[1] as string).toUpperCase(), args: (match[2] as string).trim(), line: start });
    current = "";
  }
  if (current !== "") throw new Error("Dockerfile ends inside a line continuation");
  return out;
}

/** Splits into stages; global ARG defaults (before the first FROM) are substituted into FROM. */
export function parseStages(text: string): Stage[] {
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const ins of parseInstructions(text)) {
    if (ins.keyword === "FROM") {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (m === null) throw new Error(`Dockerfile line ${ins.line}: bad FROM ${ins.args}`);
      const image = (m[1] as string).replace(/\$\{(\w+)\}|\$(\w+)/g, (_all, a: string, b: string) => {
        const name = a ?? b;
        const value = args.get(name);
        if (value === undefined) throw new Error(`Dockerfile line ${ins.line}: ARG ${name} has no default`);
        return value;
      });
      stages.push({ image, instructions: [], ...(m[2] ? { name: m[2] } : {}) });
      continue;
    }
    if (stages.length === 0) {
      if (ins.keyword === "ARG") {
        const [name, value] = ins.args.split("=", 2);
        if (name !== undefined && value !== undefined) args.set(name.trim(), value.trim());
      }
      continue;
    }
    (stages[stages.length - 1] as Stage).instructions.push(ins);
  }
  return stages;
}

/** The JSON (exec) form of ENTRYPOINT/CMD; undefined for the shell form. */
export function execForm(args: string): string[] | undefined {
  try {
    const parsed: unknown = JSON.parse(args);
    return Array.isArray(parsed) && parsed.every((a) => typeof a === "string") ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether .dockerignore keeps `path` out of the build context: the last matching pattern wins and
 * `!` re-includes. Handles the forms this repository uses: a path (which covers everything below
 * it) and `**`/`*` globs; not Docker's full filepath.Match syntax.
 */
export function dockerignoreExcludes(patterns: readonly string[], path: string): boolean {
  let excluded = false;
  for (const raw of patterns) {
    const negated = raw.startsWith("!");
    const pattern = (negated ? raw.slice(1) : raw).replace(/^\/+|\/+$/g, "");
    if (patternMatches(pattern, path)) excluded = !negated;
  }
  return excluded;
}

function patternMatches(pattern: string, path: string): boolean {
  const source = pattern
    .split("/")
    .map((part) =>
      part === "**" ? ".*" : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*"),
    )
    .join("/")
    .replace(/\.\*\//g, "(?:.*/)?");
  return new RegExp(`^${source}(?:/.*)?$`).test(path);
}
