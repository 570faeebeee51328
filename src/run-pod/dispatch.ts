/**
 * Which run-pod program one multi-call executable runs (docs/decisions.md D-25: init, supervisor and courier are
 * one binary with hard links). Pure: it reads the invocation, main.ts does the I/O.
 *
 * The program is chosen by the name the executable was invoked as, `ai-agent-<program>`, or, for
 * `ai-agent` itself and for a run through node/tsx (argv[1] is a script file), by the first
 * argument: `ai-agent <program> [args…]`.
 */

/** The executable's own name; a program's hard link is `${EXECUTABLE}-<program>`. */
export const EXECUTABLE = "ai-agent";

export type Dispatch<P extends string> =
  | { kind: "run"; program: P; args: string[] }
  | { kind: "usage"; message: string };

/**
 * `argv0` is `process.argv0` (the name as invoked); `argv` is `process.argv`. Under a single
 * executable argv[1] repeats the invoked name; under node/tsx it is the script. Either way the
 * program's own arguments start at argv[2].
 */
export function dispatch<P extends string>(
  programs: readonly P[],
  argv0: string,
  argv: readonly string[],
): Dispatch<P> {
  const names = [argv0, argv[1] ?? ""].map(baseName);
  const args = argv.slice(2);
  for (const name of names) {
    const program = programs.find((p) => name === `${EXECUTABLE}-${p}`);
    if (program !== undefined) return { kind: "run", program, args };
  }
  const explicit = names.includes(EXECUTABLE) || isScript(argv[1] ?? "");
  if (explicit) {
    const program = programs.find((p) => p === args[0]);
    if (program !== undefined) return { kind: "run", program, args: args.slice(1) };
    const why = args[0] === undefined ? "no program given" : `unknown program ${JSON.stringify(args[0])}`;
    return { kind: "usage", message: usage(programs, why) };
  }
  return {
    kind: "usage",
    message: usage(programs, `cannot tell the program from the name ${JSON.stringify(names[0])}`),
  };
}

export function usage(programs: readonly string[], why: string): string {
  const links = programs.map((p) => `${EXECUTABLE}-${p}`).join(" | ");
  return [
    `${EXECUTABLE}: ${why}`,
    `usage: ${EXECUTABLE} <${programs.join("|")}> [args…]`,
    `   or: invoke it as ${links} [args…]`,
  ].join("\n");
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

function isScript(path: string): boolean {
  return /\.(?:[cm]?js|[cm]?ts)$/.test(path);
}
