/**
 * Tool `skills` (docs/run-pod.md#the-init), best-effort: nothing here fails the init. Claude only
 * (docs/decisions.md D-57); other vendors got an `ignored` notice from the plan.
 *
 * Staging copies `<ws>/*\/.claude/skills` then `<ws>/.claude/skills` (the workspace's own wins) into
 * `$HOME/.claude/skills`, skipping symlinks: a cloned repo must not make the root init copy files
 * from outside the workspace into the agent's home.
 */
import { cp, lstat, mkdir, mkdtemp, readdir, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isStrictlyInside } from "../confine.js";
import { errnoOf, type InitContext, type ToolResult } from "../context.js";
import { downloadToFile } from "../download.js";
import { extractTarGz } from "../extract.js";
import type { ToolPlan } from "../plan.js";

type SkillsTool = Extract<ToolPlan, { tool: "skills" }>;

/** Workspace skill directories in staging order: each top-level directory's, then the workspace's own. */
async function workspaceSkillDirs(workspace: string): Promise<string[]> {
  let names: string[];
  try {
    names = (await readdir(workspace, { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
  } catch {
    return [];
  }
  return [...names.map((n) => join(workspace, n, ".claude", "skills")), join(workspace, ".claude", "skills")];
}

async function isRealDirInside(dir: string, realWorkspace: string): Promise<boolean> {
  try {
    if (!(await lstat(dir)).isDirectory()) return false;
    return isStrictlyInside(realWorkspace, await realpath(dir));
  } catch {
    return false;
  }
}

async function stageWorkspaceSkills(tool: SkillsTool, ctx: InitContext): Promise<void> {
  let realWorkspace: string;
  try {
    realWorkspace = await realpath(ctx.plan.workspace);
  } catch {
    return;
  }
  for (const dir of await workspaceSkillDirs(ctx.plan.workspace)) {
    if (!(await isRealDirInside(dir, realWorkspace))) continue;
    try {
      await cp(dir, tool.skillsDir, {
        recursive: true,
        force: true,
        filter: async (src) => !(await lstat(src)).isSymbolicLink(),
      });
      ctx.log(`skills: staged ${dir}`);
    } catch (err) {
      ctx.log(`skills: cannot stage ${dir}: ${errnoOf(err)}; continuing`);
    }
  }
}

async function fetchFromSource(tool: SkillsTool, source: string, ctx: InitContext): Promise<void> {
  const base = source.replace(/\/+$/, "");
  try {
    await downloadToFile(`${base}/settings.json`, tool.settingsPath, ctx.download, 0o644);
    ctx.log(`skills: fetched ${tool.settingsPath}`);
  } catch (err) {
    ctx.log(`skills: cannot fetch settings.json: ${errnoOf(err)}; continuing`);
  }
  if (tool.names.length === 0) return;
  const temp = await mkdtemp(join(tmpdir(), "ai-agent-skills-"));
  try {
    for (const name of tool.names) {
      const archive = join(temp, `${name}.tar.gz`);
      try {
        await downloadToFile(`${base}/${name}.tar.gz`, archive, ctx.download, 0o600);
        await extractTarGz(archive, tool.skillsDir);
        ctx.log(`skills: installed ${name}`);
      } catch (err) {
        ctx.log(`skills: cannot install ${name}: ${errnoOf(err)}; continuing`);
      }
    }
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}

export async function stageSkills(tool: SkillsTool, ctx: InitContext): Promise<ToolResult> {
  if (!tool.stage) return undefined;
  for (const name of tool.invalidNames)
    ctx.log(`skills: ${JSON.stringify(name)} is not a valid skill name; skipped`);
  try {
    await mkdir(tool.skillsDir, { recursive: true });
  } catch (err) {
    ctx.log(`skills: cannot create ${tool.skillsDir}: ${errnoOf(err)}; skipping skills`);
    return undefined;
  }
  try {
    await stageWorkspaceSkills(tool, ctx);
    if (tool.source !== undefined) await fetchFromSource(tool, tool.source, ctx);
  } catch (err) {
    ctx.log(`skills: ${errnoOf(err)}; continuing`);
  }
  return undefined;
}
