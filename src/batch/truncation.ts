/**
 * One outcome for a truncated answer, whatever the vendor (docs/decisions.md D-108): Anthropic
 * `stop_reason: max_tokens` (or `model_context_window_exceeded`), Gemini `finishReason:
 * MAX_TOKENS` and OpenAI `status: incomplete` all fail the run with codex's wording
 * (docs/batch-runs.md#a-truncated-answer), `Incomplete response returned, reason: <the vendor's reason>`.
 * A cut-off answer (under output.schema, half a JSON document) is not a result anyone can use,
 * and the seed already fixes that outcome for OpenAI.
 */
export function incompleteReason(reason: string): string {
  return `Incomplete response returned, reason: ${reason}`;
}
