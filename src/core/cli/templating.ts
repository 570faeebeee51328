/**
 * Prompt templating (docs/templating-and-routing.md#templating): `{name}` tokens, one left-to-right pass,
 * unknown names kept verbatim, values never re-scanned.
 */

const TOKEN = /\{([A-Za-z0-9_.-]+)\}/g;

/** Largest rendered prompt a run accepts (docs/decisions.md D-63: the realtime per-prompt limit). */
export const MAX_PROMPT_BYTES = 102400;

export function renderPrompt(
  template: string | undefined,
  parameters: Record<string, string> | undefined,
): string {
  if (!template) return "";
  const params = parameters ?? {};
  // String.replace with a global regex is a single pass; the replacement is never re-scanned.
  return template.replace(TOKEN, (whole, name: string) =>
    Object.hasOwn(params, name) ? (params[name] as string) : whole,
  );
}
