/**
 * ajv cannot evaluate CEL, so every `x-kubernetes-validations` rule in schemas/crds/ must be
 * listed here: either with a JSON Schema fragment that checks the same thing (compiled into
 * the ahead-of-time validators), or as enforced by the API server only, with the reason.
 * Codegen fails on a rule missing from this table, so the two can never drift apart silently.
 */
import type { JsonSchema } from "./crd-source.js";

export type CelEquivalent =
  | { enforcedBy: "schema-and-api-server"; schema: JsonSchema }
  | { enforcedBy: "api-server-only"; why: string };

/** `field` must be present and non-empty when `discriminator` takes one of `values`. */
function needsWhen(discriminator: string, values: string[], field: string): CelEquivalent {
  const match = values.length === 1 ? { const: values[0] } : { enum: values };
  return {
    enforcedBy: "schema-and-api-server",
    schema: {
      if: { type: "object", required: [discriminator], properties: { [discriminator]: match } },
      // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword, not a promise.
      then: { type: "object", required: [field], properties: { [field]: { type: "string", minLength: 1 } } },
    },
  };
}

/** The object's string `field` must not match `pattern` (an ECMAScript regex, same language as the CEL one). */
function mustNotMatch(field: string, pattern: string): CelEquivalent {
  return {
    enforcedBy: "schema-and-api-server",
    schema: {
      not: { type: "object", required: [field], properties: { [field]: { type: "string", pattern } } },
    },
  };
}

export const celEquivalents: Readonly<Record<string, CelEquivalent>> = {
  "!self.path.lowerAscii().matches('(^|/)[.]git(/|$)')": mustNotMatch("path", "(^|/)[.][gG][iI][tT](/|$)"),
  "!self.path.matches('(^|/)[.]{0,2}$')": mustNotMatch("path", "(^|/)[.]{0,2}$"),
  "self == oldSelf": {
    enforcedBy: "api-server-only",
    why: "a transition rule compares the update with the stored object, which a validator of one object never sees",
  },
  "self.type != 'http' || (has(self.url) && self.url != '')": needsWhen("type", ["http"], "url"),
  "self.type != 'file' || (has(self.path) && self.path != '')": needsWhen("type", ["file"], "path"),
  "self.transport != 'stdio' || (has(self.command) && self.command != '')": needsWhen(
    "transport",
    ["stdio"],
    "command",
  ),
  "!(self.transport in ['http', 'sse']) || (has(self.url) && self.url != '')": needsWhen(
    "transport",
    ["http", "sse"],
    "url",
  ),
};
