/**
 * Installs the fake CLIs into a directory (the pod runner's image bin dir, mounted over
 * /usr/local/bin in run containers): fake-cli.ts compiled alone to CommonJS, written once as
 * `claude` with `#!/usr/bin/node`, and hard-linked as `codex`, `gemini`, `opencode`.
 */
import { readFileSync } from "node:fs";
import { chmod, link, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { CLI_NAMES } from "./fake-cli.js";

const SOURCE = join(dirname(fileURLToPath(import.meta.url)), "fake-cli.ts");

/** The fake's program text: compiled fake-cli.ts plus the call of its main(). */
export function fakeCliProgram(): string {
  const { outputText, diagnostics } = ts.transpileModule(readFileSync(SOURCE, "utf8"), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
    reportDiagnostics: true,
    fileName: SOURCE,
  });
  if (diagnostics?.length) {
    const text = diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n")).join("\n");
    throw new Error(`compiling ${SOURCE}: ${text}`);
  }
  return `#!/usr/bin/node\n${outputText}\nmain();\n`;
}

/** Writes the four executables into `binDir` (mode 0755). Returns their paths. */
export async function installFakeClis(binDir: string): Promise<string[]> {
  const [first, ...others] = CLI_NAMES;
  const main = join(binDir, first as string);
  await rm(main, { force: true });
  await writeFile(main, fakeCliProgram());
  await chmod(main, 0o755);
  const paths = [main];
  for (const name of others) {
    const path = join(binDir, name);
    await rm(path, { force: true });
    await link(main, path);
    paths.push(path);
  }
  return paths;
}
