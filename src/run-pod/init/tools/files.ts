/**
 * Tool `files` (runtime.md §7.3, seed agent-crd.txt spec.files, OQ-30): each declared input is
 * streamed into the workspace, in order; the first failure stops the init with
 * `init/failed tool=files reason=path|download` and `[init] files: <path>: <cause>`. A cause names
 * the declared path, never a header value.
 */
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { parseHeaderBlock } from "../../../sinks/headers.js";
import { existingKind, realAncestorProblem } from "../confine.js";
import {
  errnoOf,
  type InitContext,
  type InitFailure,
  type ToolResult,
  withoutHeaderValues,
} from "../context.js";
import { DownloadError, downloadToFile } from "../download.js";
import type { FilePlan, ToolPlan } from "../plan.js";

/** The URL as logged: scheme, host and path only (a query string may be a presigned credential). */
export function loggableUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

function failure(entry: { path: string }, reason: "path" | "download", cause: string): InitFailure {
  return { tool: "files", reason, exit: 1, message: `files: ${entry.path}: ${cause}` };
}

/** Undefined when `entry` may be written at its destination; else the `reason=path` failure. */
async function destinationFailure(entry: FilePlan, workspace: string): Promise<InitFailure | undefined> {
  if (entry.pathProblem !== undefined || entry.dest === undefined) {
    return failure(entry, "path", entry.pathProblem ?? "no destination");
  }
  const outside = await realAncestorProblem(workspace, entry.dest);
  if (outside !== undefined) return failure(entry, "path", outside);
  const kind = await existingKind(entry.dest);
  if (kind === "directory") return failure(entry, "path", `${entry.dest} is an existing directory`);
  if (kind === "symlink") return failure(entry, "path", `${entry.dest} is an existing symlink`);
  if (kind === "other") return failure(entry, "path", `${entry.dest} exists and is not a regular file`);
  try {
    await mkdir(dirname(entry.dest), { recursive: true });
  } catch (err) {
    return failure(entry, "path", `cannot create ${dirname(entry.dest)} (${errnoOf(err)})`);
  }
  return undefined;
}

export async function fetchFiles(
  tool: Extract<ToolPlan, { tool: "files" }>,
  ctx: InitContext,
): Promise<ToolResult> {
  if (tool.inputProblem !== undefined) return failure({ path: "AGENT_FILES" }, "path", tool.inputProblem);
  const { workspace } = ctx.plan;
  try {
    await mkdir(workspace, { recursive: true });
  } catch (err) {
    return failure({ path: workspace }, "path", `cannot create the workspace (${errnoOf(err)})`);
  }
  for (const entry of tool.entries) {
    const refused = await destinationFailure(entry, workspace);
    if (refused !== undefined) return refused;
    const dest = entry.dest as string;
    // An unresolvable header secret means "no headers", never a failure (events.md §2).
    const headers = entry.headersEnv !== undefined ? parseHeaderBlock(ctx.env[entry.headersEnv]) : [];
    ctx.log(`files: ${entry.path}: fetching ${loggableUrl(entry.url)}`);
    try {
      await downloadToFile(entry.url, dest, { ...ctx.download, headers }, 0o644);
    } catch (err) {
      const cause = err instanceof DownloadError ? err.message : `cannot write ${dest} (${errnoOf(err)})`;
      return failure(
        entry,
        err instanceof DownloadError ? "download" : "path",
        withoutHeaderValues(cause, headers),
      );
    }
  }
  return undefined;
}
