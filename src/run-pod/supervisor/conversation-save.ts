/**
 * Conversation save (docs/supervisor.md#order-of-one-interactive-run): after the agent exits, the vendor's state directory
 * under $HOME is archived (tar.gz, paths relative to $HOME, so the init can extract it into $HOME
 * again) and POSTed to `<AGENT_CONVERSATION_SOURCE>/<AGENT_CONVERSATION_PIN>`. Best-effort: every
 * failure is logged and never changes the run's result.
 */
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { create as createTar } from "tar";
import type { Vendor } from "../../core/cli/routing.js";
import { conversationStateDir } from "../../core/cli/vendors.js";
import { timedPost } from "../../http-post.js";
import type { JsonLineLogger } from "../../log.js";
import { conversationAuthHeaders } from "../common/conversation-auth.js";
import { runPodDispatcher } from "../common/http-dispatcher.js";
import type { Env } from "../common/run-env.js";

/** Bound on the upload; the run's remaining steps (events, sink drain) need time too. */
export const SAVE_TIMEOUT_MS = 20_000;

export interface ConversationTarget {
  url: string;
  /** The state directory relative to $HOME, e.g. `.claude`. */
  stateDir: string;
}

/**
 * Where to save, when source, pin and the vendor's state directory are all known; otherwise why
 * not. Whether the directory exists is checked separately (I/O).
 */
export function conversationTarget(env: Env, vendor: Vendor): ConversationTarget | { skip: string } {
  const source = env.AGENT_CONVERSATION_SOURCE?.trim() ?? "";
  const pin = env.AGENT_CONVERSATION_PIN?.trim() ?? "";
  const stateDir = conversationStateDir(vendor);
  if (source === "") return { skip: "AGENT_CONVERSATION_SOURCE is not set" };
  if (pin === "") return { skip: "AGENT_CONVERSATION_PIN is not set" };
  if (stateDir === undefined) return { skip: `${vendor} keeps no conversation state` };
  return { url: `${source.replace(/\/+$/, "")}/${encodeURIComponent(pin)}`, stateDir };
}

/**
 * A gzipped tar of `home/stateDir`, entry names relative to `home`, as a stream: the archive is
 * never held whole in memory (a realtime session saves after every turn, and a vendor's state can
 * be hundreds of MiB). `sent.bytes` counts what was read from it.
 */
export function archiveStateDir(
  home: string,
  stateDir: string,
  sent: { bytes: number } = { bytes: 0 },
): AsyncIterable<Buffer> {
  // portable: no uid/gid/uname/dev/ino, which mean nothing in the next run's pod.
  const pack = createTar({ gzip: true, cwd: home, portable: true }, [stateDir]);
  return (async function* () {
    for await (const chunk of pack) {
      sent.bytes += (chunk as Buffer).length;
      yield chunk as Buffer;
    }
  })();
}

export type SaveResult = "saved" | "skipped" | "failed";

export async function saveConversation(options: {
  env: Env;
  vendor: Vendor;
  home: string;
  log: JsonLineLogger;
  timeoutMs?: number;
}): Promise<SaveResult> {
  const { env, vendor, home, log } = options;
  const target = conversationTarget(env, vendor);
  if ("skip" in target) {
    // Only worth a line when a save was asked for.
    if (env.AGENT_CONVERSATION_SOURCE) log.info(`conversation not saved: ${target.skip}`);
    return "skipped";
  }
  const timeoutMs = options.timeoutMs ?? SAVE_TIMEOUT_MS;
  if (timeoutMs <= 0) {
    log.warn("conversation not saved: no time left before the run must report its result");
    return "skipped";
  }
  const dir = join(home, target.stateDir);
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error("not a directory");
  } catch {
    log.info(`conversation not saved: ${dir} does not exist`);
    return "skipped";
  }
  const where = redactUserinfo(target.url);
  try {
    const sent = { bytes: 0 };
    const body = Readable.from(archiveStateDir(home, target.stateDir, sent));
    const headers: Record<string, string> = { "Content-Type": "application/gzip" };
    for (const [name, value] of conversationAuthHeaders(env)) headers[name] = value;
    const { status } = await timedPost({
      url: target.url,
      headers,
      body,
      timeoutMs,
      dispatcher: runPodDispatcher(),
    });
    if (status < 200 || status >= 300) {
      log.warn(`conversation save failed: HTTP ${status} from ${where}`);
      return "failed";
    }
    log.info(`conversation saved to ${where}`, { bytes: sent.bytes });
    return "saved";
  } catch (err) {
    log.warn(`conversation save failed: ${where}: ${errorText(err)}`);
    return "failed";
  }
}

/** Credentials in a URL's userinfo stay out of the log. */
function redactUserinfo(url: string): string {
  try {
    const u = new URL(url);
    if (u.username === "" && u.password === "") return url;
    u.username = "redacted";
    u.password = "";
    return u.toString();
  } catch {
    return url;
  }
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  }
  return String(err);
}
