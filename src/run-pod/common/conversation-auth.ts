/**
 * The header block sent with a conversation download (init) or upload (supervisor). The env var
 * named by AGENT_CONVERSATION_AUTH holds it (docs/run-pod.md#injected-environment). docs/decisions.md D-54: it is parsed like a sink
 * header block (`Name: value` lines), and a value that does not start with a `Name:` is the
 * Authorization value itself (the schema text calls it "the Authorization header").
 */
import { parseHeaderBlock } from "../../sinks/headers.js";
import type { Env } from "./run-env.js";

/** An RFC 9110 field name (token characters) followed by a colon. */
const HEADER_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+[ \t]*:/;

/** The headers in block order; empty when AGENT_CONVERSATION_AUTH or the var it names is unset. */
export function conversationAuthHeaders(env: Env): Array<[string, string]> {
  const key = env.AGENT_CONVERSATION_AUTH?.trim();
  if (!key) return [];
  const block = env[key];
  const first = block
    ?.split(/\r?\n/)
    .map((l) => l.trim())
    .find((l) => l !== "");
  if (block === undefined || first === undefined) return [];
  if (!HEADER_LINE.test(first)) return [["Authorization", block.trim()]];
  return parseHeaderBlock(block);
}
