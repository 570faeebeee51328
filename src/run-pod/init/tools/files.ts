/**
 * Tool `files` (docs/run-pod.md#the-init, docs/security.md#specfiles, docs/decisions.md D-30): each declared input is
 * streamed into the workspace, in order; the first failure stops the init with
 * `init/failed tool=files reason=path|download|write` and `[init] files: <path>: <cause>`. A cause
 * names the declared path, never a header value. Before anything is fetched, every entry's shape is
 * checked (no directory name as the last component) and no two entries may share a destination
 * (docs/security.md, spec.files). A path inside a clone's `.git` is written like any other.
 */
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { parseHeaderBlock } from "../../../sinks/headers.js";
import { existingKind, fileShapeProblem, realAncestorProblem } from "../confine.js";
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

function failure(entry: { path: string }, reason: "path" | "download" | "write", cause: string): InitFailure {
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

/** The first entry whose shape is refused or whose destination an earlier entry already has. */
function shapeOrDuplicateFailure(entries: readonly FilePlan[]): InitFailure | undefined {
  const seen = new Map<string, string>();
  for (const entry of entries) {
    const shape = fileShapeProblem(entry.path);
    if (shape !== undefined) return failure(entry, "path", shape);
    if (entry.dest === undefined) continue;
    const first = seen.get(entry.dest);
    if (first !== undefined)
      return failure(entry, "path", `${entry.dest} is also the destination of ${first}`);
    seen.set(entry.dest, entry.path);
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
  const refusedEntry = shapeOrDuplicateFailure(tool.entries);
  if (refusedEntry !== undefined) return refusedEntry;
  for (const entry of tool.entries) {
    const refused = await destinationFailure(entry, workspace);
    if (refused !== undefined) return refused;
    const dest = entry.dest as string;
    // An unresolvable header secret means "no headers", never a failure (docs/events.md#sinks).
    const headers = entry.headersEnv !== undefined ? parseHeaderBlock(ctx.env[entry.headersEnv]) : [];
    ctx.log(`files: ${entry.path}: fetching ${loggableUrl(entry.url)}`);
    try {
      await downloadToFile(entry.url, dest, { ...ctx.download, headers }, 0o644);
    } catch (err) {
      const cause = err instanceof DownloadError ? err.message : `cannot write ${dest} (${errnoOf(err)})`;
      // A full disk or a read-only mount is the pod's problem, not the URL's: reason=write.
      return failure(
        entry,
        err instanceof DownloadError ? "download" : "write",
        withoutHeaderValues(cause, headers),
      );
    }
  }
  return undefined;
}
