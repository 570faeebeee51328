/**
 * Tool `supervisor`: the agent container runs `$HOME/bin/ai-agent-witness`, which runs
 * `$HOME/bin/ai-agent-supervisor` as the agent's uid (docs/run-pod.md#the-init, docs/security.md):
 * one copy of the executable, the witness a hard link to it (the program is picked by name).
 */
import { constants } from "node:fs";
import { access, chmod, copyFile, link, mkdir, rename, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { REAPER_NAME } from "../../witness/reaper.js";
import { errnoOf, type InitContext, stepFailure, type ToolResult } from "../context.js";
import type { ToolPlan } from "../plan.js";

export async function installSupervisor(
  tool: Extract<ToolPlan, { tool: "supervisor" }>,
  ctx: InitContext,
): Promise<ToolResult> {
  const { source, target } = tool;
  ctx.log(`supervisor: copying ${source} to ${target}`);
  // Copied beside the target and renamed over it, so a half-written executable is never in place.
  const temp = `${target}.partial`;
  try {
    await mkdir(dirname(target), { recursive: true });
    await copyFile(source, temp);
    await chmod(temp, 0o755);
    await rename(temp, target);
    const witness = join(dirname(target), "ai-agent-witness");
    await rm(witness, { force: true });
    await link(target, witness);
    await installReaper(join(dirname(source), REAPER_NAME), join(dirname(target), REAPER_NAME), ctx);
    return undefined;
  } catch (err) {
    await rm(temp, { force: true }).catch(() => undefined);
    return stepFailure("supervisor", 1, `supervisor: cannot copy ${source} to ${target}: ${errnoOf(err)}`);
  }
}

/**
 * The reaper the witness runs the supervisor under (src/run-pod/witness/reaper.ts), copied from
 * beside the init's own executable when the image has it; without it the run still works, but
 * orphaned processes of the agent stay zombies.
 */
async function installReaper(source: string, target: string, ctx: InitContext): Promise<void> {
  try {
    await access(source, constants.X_OK);
  } catch {
    ctx.log(`supervisor: no ${source}; orphaned processes of the agent will not be reaped`);
    return;
  }
  const temp = `${target}.partial`;
  await copyFile(source, temp);
  await chmod(temp, 0o755);
  await rename(temp, target);
}
