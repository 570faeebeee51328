/**
 * src/core/provider-limits/: the model providers' limits. Recognising a limit in a CLI's lines or a
 * batch API's error (index.ts, a reader per CLI beside it), what the controller learns of an
 * endpoint (learner.ts), which endpoint and key a run spends on (endpoint.ts, run-endpoint.ts) and
 * whether a Pending Agent may start against it now (admission.ts).
 *
 * Recognising provider limits (docs/provider-limits.md#recognising-a-limit): the answer a model
 * provider gave, read from what each agent CLI prints (its lines and, for gemini, its exit code)
 * and from the batch APIs' errors, and whether waiting can help. Pure.
 */
import type { Vendor } from "../cli/routing.js";
import { type JsonLine, parseJsonLine } from "../cli/vendors.js";
import type { ProviderAnswer } from "./answer.js";
import { claudeAnswer } from "./claude.js";
import { codexAnswer } from "./codex.js";
import { geminiAnswer } from "./gemini.js";
import { opencodeAnswer, opencodeProvider } from "./opencode.js";

export type { AnswerKind, ProviderAnswer, ProviderName } from "./answer.js";
export { answerKind, providerAnswer } from "./answer.js";
export { batchAnswer } from "./batch.js";
export { opencodeProvider } from "./opencode.js";

/**
 * The provider's answer this line of the vendor's CLI reports, if any. `model` names the provider
 * for opencode; `exitCode` is the CLI's once it exited (gemini's carries the status).
 */
export function cliLineAnswer(
  vendor: Vendor,
  line: string | JsonLine,
  context: { model?: string; exitCode?: number } = {},
): ProviderAnswer | undefined {
  const parsed = typeof line === "string" ? parseJsonLine(line) : line;
  if (parsed === undefined) return undefined;
  switch (vendor) {
    case "claude":
      return claudeAnswer(parsed);
    case "codex":
      return codexAnswer(parsed);
    case "gemini":
      return geminiAnswer(parsed, context.exitCode);
    case "opencode":
      return opencodeAnswer(parsed, opencodeProvider(context.model ?? ""));
    case "exec":
      // A plain command prints claude-style lines but talks to whatever it likes.
      return undefined;
  }
}

/**
 * Whether this line may carry the provider's answer once the exit code is known: gemini's error
 * result names its status only through the exit code when its words do not.
 */
export function mayCarryAnswer(vendor: Vendor, line: JsonLine, model = ""): boolean {
  if (vendor === "gemini") return line.type === "result" && line.status === "error";
  return cliLineAnswer(vendor, line, { model }) !== undefined;
}

/**
 * How one CLI process ended, as far as its provider is concerned: the last answer its lines
 * reported, re-read with the exit code. Undefined when the process succeeded or its lines carry
 * no provider answer (a failure of its own: a bad flag, a tool, a missing key).
 */
export function attemptAnswer(
  vendor: Vendor,
  lines: readonly (string | JsonLine)[],
  exitCode: number,
  model = "",
): ProviderAnswer | undefined {
  if (exitCode === 0) return undefined;
  for (let i = lines.length - 1; i >= 0; i--) {
    const answer = cliLineAnswer(vendor, lines[i] as string | JsonLine, { model, exitCode });
    if (answer !== undefined) return answer;
  }
  return undefined;
}
