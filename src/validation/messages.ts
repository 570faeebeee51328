/**
 * Sentences for ajv errors. Each names the field by its dotted path, says what is expected
 * and, where it helps, what was found.
 */

/** What each schema pattern means, in words. A test keeps this in step with schemas/crds/. */
export const patternHints: Readonly<Record<string, string>> = {
  "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$":
    "a Kubernetes object name: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit",
  "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$": "a repository in owner/name form",
  "^[A-Za-z0-9_]([A-Za-z0-9_-]|\\.[A-Za-z0-9_-])*(/[A-Za-z0-9_]([A-Za-z0-9_-]|\\.[A-Za-z0-9_-])*)*$":
    "a git branch name: '/'-separated parts of letters, digits, '_', '-' and single dots, none starting with '.' or '-'",
  "^[A-Za-z0-9_]([A-Za-z0-9_-]|\\.[A-Za-z0-9_-])*(/[A-Za-z0-9_]([A-Za-z0-9_-]|\\.[A-Za-z0-9_-])*)*/?$":
    "a git branch prefix: '/'-separated parts of letters, digits, '_', '-' and single dots, none starting with '.' or '-', optionally ending in '/'",
  "^https?://[^/\\s]+": "an http:// or https:// URL; no other scheme is fetched",
  "^[-._a-zA-Z0-9]+$": "a Secret key: letters, digits, '-', '_' and '.'",
  "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$":
    "a condition type: an optional DNS-subdomain prefix and '/', then letters, digits, '-', '_' and '.'",
  "^[0-9]+(\\.[0-9]+)?$": "a non-negative decimal number, e.g. 0.0125",
  "^([1-9][0-9]{0,5}m|[1-9][0-9]{0,3}h|[1-9][0-9]{0,2}d)$":
    "a rolling window: a whole number of minutes (m), hours (h) or days (d), e.g. 90m, 24h or 30d",
  "^((\\*\\.)?[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*\\.?|\\[[0-9A-Fa-f:.]+\\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$":
    "a host name, a *.suffix wildcard, an IPv4 address or a bracketed IPv6 address, optionally with :port (1-65535), e.g. pypi.org, *.example.com or registry.example.com:8443",
  "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$":
    "a condition reason: a letter, then letters, digits, '_', ',' and ':', not ending in ',' or ':'",
};

const typeNames: Readonly<Record<string, string>> = {
  string: "a string",
  integer: "an integer",
  number: "a number",
  boolean: "a boolean (true or false)",
  object: "an object",
  array: "a list",
  null: "null",
};

export function describeType(type: unknown): string {
  if (Array.isArray(type)) return type.map(describeType).join(" or ");
  return typeNames[String(type)] ?? String(type);
}

export function actualType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a number";
  return typeNames[typeof value] ?? typeof value;
}

/** A short, bounded rendering of a value for "got …" clauses. */
export function shown(value: unknown): string {
  const text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
