/**
 * `npm run codegen`: regenerate generated/, deploy/crds/ and docs/reference/ from schemas/, and
 * docs/state-machine.md from the reconcile core's rule tables.
 * `npm run codegen:check`: regenerate into a temporary directory and fail, naming each
 * drifted, missing or extra file, when the checkout differs.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { generate, managedPaths } from "./generate.js";
import { compareTrees, describeDrift, hasDrift, writeTree } from "./tree.js";

export interface RunOptions {
  root: string;
  check: boolean;
  log?: (line: string) => void;
}

/** Returns the process exit code. */
export async function run(options: RunOptions): Promise<number> {
  const log = options.log ?? ((line: string) => console.log(line));
  const files = await generate({ schemasDir: path.join(options.root, "schemas") });
  if (!options.check) {
    await writeTree(options.root, files, managedPaths);
    log(`codegen: wrote ${files.size} files under ${managedPaths.join(", ")}`);
    return 0;
  }
  const tmp = await mkdtemp(path.join(os.tmpdir(), "codegen-check-"));
  try {
    await writeTree(tmp, files, managedPaths);
    const drift = await compareTrees(tmp, options.root, managedPaths);
    if (hasDrift(drift)) {
      log(describeDrift(drift));
      return 1;
    }
    log(`codegen:check: ${files.size} generated files are up to date`);
    return 0;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== "--check");
  if (unknown.length > 0) {
    console.error(`codegen: unknown argument ${unknown.join(" ")}; usage: tsx codegen/index.ts [--check]`);
    process.exit(2);
  }
  run({ root, check: args.includes("--check") }).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(`codegen failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
