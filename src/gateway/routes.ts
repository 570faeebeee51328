/**
 * Which requests the gateway forwards, matched on the raw request target exactly as it arrived
 * (docs/gateway.md#what-reaches-upstream). Nothing is decoded or normalised before matching: a
 * target is forwarded only when it is one of the native paths below, character for character, so
 * `..`, `%2e%2e`, `%2f`, a backslash, `//host` or an absolute URL never turn into another path or
 * another host. The upstream's origin is not taken from the request at all (see proxy.ts).
 */
import type { GatewayVendor } from "./vendors.js";

export interface Route {
  /** Stable name for metrics and logs. */
  name: string;
  /** The vendors whose API has this path; `/v1/models` is Anthropic's and OpenAI's. */
  vendors: readonly GatewayVendor[];
  /** Whether the answer is a model call whose usage is metered. */
  metered: boolean;
  /** The model named by the path (Gemini), when there is one. */
  model?: string;
}

export interface MatchedTarget {
  route: Route;
  /** The path forwarded upstream: the raw path, unchanged. */
  path: string;
  /** The query forwarded upstream (`?…` or ""), without any `key` parameter. */
  query: string;
}

export type TargetMatch =
  | { ok: true; target: MatchedTarget }
  | { ok: false; kind: "bad-request" | "not-found" | "upgrade-required"; message: string };

/** A model id as a path segment: starts with a letter or digit, then letters, digits, `.`, `_`, `-`. */
const MODEL = "([A-Za-z0-9][A-Za-z0-9._-]{0,127})";
const GEMINI_CALL = new RegExp(
  `^/v1beta/models/${MODEL}:(generateContent|streamGenerateContent|countTokens)$`,
);
const GEMINI_MODEL = new RegExp(`^/v1beta/models/${MODEL}$`);
const MODEL_ID = new RegExp(`^/v1/models/${MODEL}$`);

const ANTHROPIC_OR_OPENAI: readonly GatewayVendor[] = ["anthropic", "openai"];

function matchPath(method: string, path: string): Route | undefined {
  if (method === "POST") {
    if (path === "/v1/messages") return { name: "messages", vendors: ["anthropic"], metered: true };
    if (path === "/v1/messages/count_tokens")
      return { name: "count_tokens", vendors: ["anthropic"], metered: false };
    if (path === "/v1/responses") return { name: "responses", vendors: ["openai"], metered: true };
    const call = GEMINI_CALL.exec(path);
    if (call) {
      const [, model, verb] = call;
      const name =
        verb === "generateContent"
          ? "generate_content"
          : verb === "streamGenerateContent"
            ? "stream_generate_content"
            : "count_tokens";
      return { name, vendors: ["gemini"], metered: verb !== "countTokens", model };
    }
    return undefined;
  }
  if (method === "GET") {
    if (path === "/v1/models") return { name: "models", vendors: ANTHROPIC_OR_OPENAI, metered: false };
    if (MODEL_ID.test(path)) return { name: "model", vendors: ANTHROPIC_OR_OPENAI, metered: false };
    if (path === "/v1beta/models") return { name: "models", vendors: ["gemini"], metered: false };
    const model = GEMINI_MODEL.exec(path);
    if (model) return { name: "model", vendors: ["gemini"], metered: false, model: model[1] };
  }
  return undefined;
}

/**
 * The query without the `key` parameter in any case (Google's API-key parameter, a client
 * credential), re-encoded, so nothing but plain name=value pairs goes upstream.
 */
export function forwardedQuery(rawQuery: string): string {
  const params = new URLSearchParams(rawQuery);
  const kept = new URLSearchParams();
  for (const [name, value] of params) if (name.toLowerCase() !== "key") kept.append(name, value);
  const text = kept.toString();
  return text === "" ? "" : `?${text}`;
}

/**
 * Matches a request's method and raw target (`IncomingMessage.url`, before any parsing) against the
 * native routes. `upgrade`: the request asks to switch protocols (codex's WebSocket transport).
 */
export function matchTarget(method: string, rawTarget: string, upgrade = false): TargetMatch {
  if (!rawTarget.startsWith("/") || rawTarget.startsWith("//")) {
    return {
      ok: false,
      kind: "bad-request",
      message: "gateway: the request target must be a path on this gateway (no absolute URL, no //host)",
    };
  }
  const q = rawTarget.indexOf("?");
  const path = q < 0 ? rawTarget : rawTarget.slice(0, q);
  const query = q < 0 ? "" : rawTarget.slice(q + 1);
  if (upgrade) {
    return {
      ok: false,
      kind: "upgrade-required",
      message:
        "gateway: WebSocket transport is not served; use HTTP streaming (codex: supports_websockets = false)",
    };
  }
  const route = matchPath(method, path);
  if (!route) {
    return {
      ok: false,
      kind: "not-found",
      message: `gateway: no model API route ${method} ${path.slice(0, 200)}`,
    };
  }
  return { ok: true, target: { route, path, query: forwardedQuery(query) } };
}
