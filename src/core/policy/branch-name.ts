/**
 * Git's own rule for a branch name: what `git check-ref-format --branch <name>` accepts (outside
 * a repository, so `@{-N}` is never expanded). refs.c `check_refname_format` on
 * `refs/heads/<name>` plus the branch-only rules (no leading `-`, not `HEAD`). Pure; proved
 * against the real git over a table (branch-name.test.ts).
 */

/** Characters git refuses anywhere in a ref beside controls, DEL and space. */
const FORBIDDEN_PRINTABLE = new Set(["~", "^", ":", "?", "*", "[", "\\"]);

function forbiddenChar(name: string): string | undefined {
  for (const ch of name) {
    const code = ch.codePointAt(0) ?? 0;
    if (code <= 0x20 || code === 0x7f || FORBIDDEN_PRINTABLE.has(ch)) return ch;
  }
  return undefined;
}

/** Why `name` is not a valid git branch name, or undefined when git accepts it. */
export function branchNameProblem(name: string): string | undefined {
  if (name === "") return "is empty";
  if (name.startsWith("-")) return "starts with -";
  if (name === "HEAD") return "is HEAD";
  const bad = forbiddenChar(name);
  if (bad !== undefined) return `contains ${JSON.stringify(bad)}, which git refuses in a ref name`;
  if (name.includes("..")) return "contains ..";
  if (name.includes("@{")) return "contains @{";
  if (name.endsWith(".")) return "ends with .";
  for (const part of name.split("/")) {
    if (part === "") return "has an empty part (a leading, trailing or doubled /)";
    if (part.startsWith(".")) return `has a part starting with . (${JSON.stringify(part)})`;
    if (part.endsWith(".lock")) return `has a part ending in .lock (${JSON.stringify(part)})`;
  }
  return undefined;
}
