/**
 * The three model APIs the gateway serves, each in its own wire format (docs/gateway.md): which
 * header carries the real key upstream and how each API words an error, so a refusal reaches the
 * CLI in the shape it already prints.
 */

import type { GatewayVendor } from "../core/run-job/gateway-credential.js";

// The vendor type lives beside the credential, in the core, which the controller issues it from.
export {
  GATEWAY_VENDORS,
  type GatewayVendor,
  isGatewayVendor,
} from "../core/run-job/gateway-credential.js";

/** The header (lower-case name, value) that carries the vendor's real key upstream. */
export function upstreamAuthHeader(vendor: GatewayVendor, key: string): [string, string] {
  switch (vendor) {
    case "anthropic":
      return ["x-api-key", key];
    case "openai":
      return ["authorization", `Bearer ${key}`];
    case "gemini":
      return ["x-goog-api-key", key];
  }
}

/** What went wrong, in words every vendor's shape can carry. */
export type ErrorKind =
  | "unauthenticated"
  | "forbidden"
  | "not-found"
  | "too-large"
  | "bad-request"
  | "upgrade-required"
  | "bad-gateway"
  | "unavailable"
  | "gateway-timeout";

const STATUS: Readonly<Record<ErrorKind, number>> = {
  unauthenticated: 401,
  forbidden: 403,
  "not-found": 404,
  "too-large": 413,
  "bad-request": 400,
  "upgrade-required": 426,
  "bad-gateway": 502,
  unavailable: 503,
  "gateway-timeout": 504,
};

/** Anthropic's documented error types (docs/batch-providers.md#what-each-api-refuses). */
const ANTHROPIC_TYPE: Readonly<Record<ErrorKind, string>> = {
  unauthenticated: "authentication_error",
  forbidden: "permission_error",
  "not-found": "not_found_error",
  "too-large": "request_too_large",
  "bad-request": "invalid_request_error",
  "upgrade-required": "invalid_request_error",
  "bad-gateway": "api_error",
  unavailable: "api_error",
  "gateway-timeout": "timeout_error",
};

/** google.rpc canonical status names. */
const GOOGLE_STATUS: Readonly<Record<ErrorKind, string>> = {
  unauthenticated: "UNAUTHENTICATED",
  forbidden: "PERMISSION_DENIED",
  "not-found": "NOT_FOUND",
  "too-large": "INVALID_ARGUMENT",
  "bad-request": "INVALID_ARGUMENT",
  "upgrade-required": "FAILED_PRECONDITION",
  "bad-gateway": "UNAVAILABLE",
  unavailable: "UNAVAILABLE",
  "gateway-timeout": "DEADLINE_EXCEEDED",
};

const OPENAI_CODE: Readonly<Record<ErrorKind, string>> = {
  unauthenticated: "invalid_api_key",
  forbidden: "permission_denied",
  "not-found": "not_found",
  "too-large": "request_too_large",
  "bad-request": "invalid_request",
  "upgrade-required": "websocket_not_supported",
  "bad-gateway": "bad_gateway",
  unavailable: "service_unavailable",
  "gateway-timeout": "timeout",
};

export interface ErrorAnswer {
  status: number;
  body: string;
}

/**
 * A refusal in the vendor's own error JSON: Anthropic `{"type":"error","error":{type,message}}`,
 * OpenAI `{"error":{message,type,param,code}}`, Google `{"error":{code,message,status}}`. Each CLI
 * prints the `message` of its own vendor's shape, so the message says who refused and why.
 */
export function errorAnswer(vendor: GatewayVendor, kind: ErrorKind, message: string): ErrorAnswer {
  const status = STATUS[kind];
  switch (vendor) {
    case "anthropic":
      return {
        status,
        body: JSON.stringify({ type: "error", error: { type: ANTHROPIC_TYPE[kind], message } }),
      };
    case "openai":
      return {
        status,
        body: JSON.stringify({
          error: {
            message,
            type: status >= 500 ? "server_error" : "invalid_request_error",
            param: null,
            code: OPENAI_CODE[kind],
          },
        }),
      };
    case "gemini":
      return {
        status,
        body: JSON.stringify({ error: { code: status, message, status: GOOGLE_STATUS[kind] } }),
      };
  }
}
