/**
 * Tool `conversation` (docs/run-pod.md#the-init, docs/decisions.md D-44, D-54): the saved archive `<source>/<id>` is
 * extracted into $HOME. For `resources.conversation.id` this is best-effort; for
 * AGENT_RESUME_SESSION the caller asked for that session, so a missing or unfetchable archive
 * fails the init (`init/failed tool=conversation reason=restore`, exit 1).
 *
 * The archive is downloaded whole before extraction, so a broken transfer leaves nothing half
 * restored.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { routeModel } from "../../../core/cli/routing.js";
import { conversationStateDir } from "../../../core/cli/vendors.js";
import { conversationAuthHeaders } from "../../common/conversation-auth.js";
import { errnoOf, type InitContext, type ToolResult, withoutHeaderValues } from "../context.js";
import { DownloadError, downloadToFile } from "../download.js";
import { extractTarGz } from "../extract.js";
import type { ToolPlan } from "../plan.js";

export async function restoreConversation(
  tool: Extract<ToolPlan, { tool: "conversation" }>,
  ctx: InitContext,
): Promise<ToolResult> {
  const headers = conversationAuthHeaders(ctx.env);
  const { home } = ctx.plan;
  let temp: string | undefined;
  try {
    temp = await mkdtemp(join(tmpdir(), "ai-agent-conversation-"));
    const archive = join(temp, "conversation.tar.gz");
    ctx.log(`conversation: restoring ${tool.id} into ${home}`);
    await downloadToFile(tool.url, archive, { ...ctx.download, headers }, 0o600);
    await mkdir(home, { recursive: true });
    // The archive holds the vendor's state dir and nothing else of HOME (the CLIs, skills,
    // settings, the supervisor itself live there too).
    const within = conversationStateDir(routeModel(ctx.env.AGENT_MODEL ?? ""));
    await extractTarGz(archive, home, within !== undefined ? { within } : {});
    ctx.log(`conversation: restored ${tool.id}`);
    return undefined;
  } catch (err) {
    const detail =
      err instanceof DownloadError && err.status === 404
        ? "no saved conversation (HTTP 404)"
        : err instanceof DownloadError
          ? err.message
          : errnoOf(err);
    const cause = withoutHeaderValues(detail, headers);
    if (!tool.required) {
      ctx.log(`conversation: cannot restore ${tool.id}: ${cause}; continuing without it`);
      return undefined;
    }
    return {
      tool: "conversation",
      reason: "restore",
      exit: 1,
      message: `conversation: cannot restore session ${tool.id}: ${cause}`,
    };
  } finally {
    if (temp !== undefined) await rm(temp, { recursive: true, force: true });
  }
}
