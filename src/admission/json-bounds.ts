/**
 * A linear pass over a JSON text, before JSON.parse, that refuses what would make parsing and
 * checking it slow: deep nesting (parse time grows with depth, and the recursive checks after it
 * overflow the stack) and very many values (a 3 MiB body of `{},` is a million objects, seconds
 * of parsing on a busy node, all of it on the event loop the controller reconciles on). Strings
 * cost one value however long they are, so a large prompt passes.
 */
export interface JsonBounds {
  maxDepth: number;
  maxValues: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

/** Undefined when the text is within bounds, else why not. Malformed JSON is left to JSON.parse. */
export function exceedsJsonBounds(text: Uint8Array, bounds: JsonBounds): string | undefined {
  let depth = 0;
  // Every value but the first is preceded by a comma or opens a container; close enough a count.
  let values = 1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
      values++;
      if (depth > bounds.maxDepth) return `it is nested deeper than ${bounds.maxDepth} levels`;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
    else if (c === COMMA) values++;
    if (values > bounds.maxValues) return `it holds more than ${bounds.maxValues} JSON values`;
  }
  return undefined;
}
