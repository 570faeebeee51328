/**
 * Tools `claude`, `codex`, `gemini`, `opencode` (runtime.md §7.4): the one CLI the model routes to
 * is installed, unless it is already on the run's PATH (checked here, against that PATH).
 */
import { displayCommand, findOnPath } from "../commands.js";
import { type InitContext, stepFailure, type ToolResult } from "../context.js";
import type { CliInstaller, CliVendor } from "../plan.js";

export function installerArgv(installer: CliInstaller): string[] {
  return ["bash", "-o", "pipefail", "-c", installer.script];
}

export async function installCli(
  tool: { tool: CliVendor; installer: CliInstaller },
  ctx: InitContext,
): Promise<ToolResult> {
  const { installer } = tool;
  const found = await findOnPath(installer.binary, ctx.env.PATH);
  if (found !== undefined) {
    ctx.log(`${tool.tool}: ${installer.binary} is already on PATH (${found}); not installing`);
    return undefined;
  }
  const argv = installerArgv(installer);
  ctx.log(`${tool.tool}: $ ${displayCommand(argv)}`);
  const code = await ctx.run({ argv, env: ctx.env });
  if (code !== 0) return stepFailure(tool.tool, code, `${tool.tool}: the installer exited with code ${code}`);
  if ((await findOnPath(installer.binary, ctx.env.PATH)) === undefined) {
    // Not fatal here: the supervisor reports `agent/failed reason=not-found` with the run's own PATH.
    ctx.log(
      `${tool.tool}: the installer succeeded but ${installer.binary} is not on PATH ${ctx.env.PATH ?? ""}`,
    );
  }
  return undefined;
}
