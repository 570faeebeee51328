/** Provider API types from schemas/providers/*.yaml, via openapi-typescript. */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import openapiTS, { astToString } from "openapi-typescript";
import { formatScript } from "./format.js";
import { slashHeader } from "./header.js";

export async function listProviderSchemas(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((n) => n.endsWith(".yaml")).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

export async function emitProviderTypes(file: string, sourcePath: string): Promise<string> {
  const text = await readFile(file, "utf8");
  const ast = await openapiTS(text, { silent: true, alphabetize: false });
  return formatScript(`${slashHeader(sourcePath)}\n${astToString(ast)}`, `${path.basename(file)}.ts`);
}
