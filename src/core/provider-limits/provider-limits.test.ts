/**
 * The classification of every captured failure of the real CLIs (test/fakes/models/fixtures/<vendor>/:
 * the `api-*`, `http-*`, `stream-cut`, `unreachable`, `response-failed` captures and the `limit-*`
 * ones of capture-limits.ts, with the exit codes the CLIs gave) and of the batch APIs' errors:
 * retryable (429, 529/503 overloaded, 5xx, no answer) apart from permanent (401, 403, 400, an
 * unknown model, a context too long, a used-up quota).
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Vendor } from "../cli/routing.js";
import { parseJsonLine } from "../cli/vendors.js";
import type { BatchErrorParts } from "./batch.js";
import { answerKind, attemptAnswer, batchAnswer, cliLineAnswer, type ProviderAnswer } from "./index.js";

const EXT: Record<string, string> = { claude: "jsonl", codex: "ndjson", gemini: "ndjson", opencode: "jsonl" };
const fixture = (vendor: string, name: string): string =>
  readFileSync(
    new URL(`../../../test/fakes/models/fixtures/${vendor}/${name}.${EXT[vendor]}`, import.meta.url),
    "utf8",
  );
const lines = (vendor: string, name: string): string[] =>
  fixture(vendor, name)
    .split("\n")
    .filter((l) => l !== "");
const capturedExit = (vendor: string, name: string): number | undefined => {
  const codes = JSON.parse(
    readFileSync(
      new URL(`../../../test/fakes/models/fixtures/${vendor}/limit-exit-codes.json`, import.meta.url),
      "utf8",
    ),
  ) as Record<string, number>;
  return codes[name];
};

/** Exit codes of the older captures (docs/agent-clis.md): gemini's is the HTTP status modulo 256. */
const OLDER_EXIT: Record<string, number> = {
  "gemini/api-401": 145,
  "gemini/api-429": 173,
  "gemini/api-500": 244,
  "gemini/api-503": 247,
};
const exitOf = (vendor: string, name: string): number =>
  capturedExit(vendor, name) ?? OLDER_EXIT[`${vendor}/${name}`] ?? 1;

type Expected = Pick<ProviderAnswer, "provider" | "status" | "kind" | "retryable"> & {
  retryAfterSeconds?: number;
  /** A part of the message the answer keeps (the provider's or the CLI's words). */
  says: string;
};
const MODEL: Partial<Record<Vendor, string>> = { opencode: "opencode/anthropic/claude-sonnet-4-6" };

const RETRY = true;
const FINAL = false;
const TABLE: [Vendor, string, Expected][] = [
  // claude: the failed result line (api_error_status, api_error, terminal_reason)
  [
    "claude",
    "api-429",
    {
      provider: "anthropic",
      status: 429,
      kind: "rate_limited",
      retryable: RETRY,
      says: "Request rejected (429)",
    },
  ],
  [
    "claude",
    "api-529",
    {
      provider: "anthropic",
      status: 529,
      kind: "overloaded",
      retryable: RETRY,
      says: "Repeated 529 Overloaded",
    },
  ],
  [
    "claude",
    "limit-529-retry-after",
    { provider: "anthropic", status: 529, kind: "overloaded", retryable: RETRY, says: "529 Overloaded" },
  ],
  [
    "claude",
    "limit-503",
    { provider: "anthropic", status: 503, kind: "overloaded", retryable: RETRY, says: "API Error: 503" },
  ],
  [
    "claude",
    "api-500",
    { provider: "anthropic", status: 500, kind: "server_error", retryable: RETRY, says: "API Error: 500" },
  ],
  [
    "claude",
    "limit-stream-cut",
    {
      provider: "anthropic",
      status: 0,
      kind: "connection",
      retryable: RETRY,
      says: "Connection dropped (ECONNRESET)",
    },
  ],
  [
    "claude",
    "api-401",
    { provider: "anthropic", status: 401, kind: "unauthorized", retryable: FINAL, says: "Invalid API key" },
  ],
  [
    "claude",
    "api-401-default-retries",
    { provider: "anthropic", status: 401, kind: "unauthorized", retryable: FINAL, says: "Invalid API key" },
  ],
  [
    "claude",
    "limit-400-context",
    {
      provider: "anthropic",
      status: 400,
      kind: "context_too_long",
      retryable: FINAL,
      says: "Prompt is too long",
    },
  ],
  [
    "claude",
    "limit-400-credit",
    {
      provider: "anthropic",
      status: 400,
      kind: "quota_exhausted",
      retryable: FINAL,
      says: "Credit balance is too low",
    },
  ],
  [
    "claude",
    "limit-404-model",
    {
      provider: "anthropic",
      status: 404,
      kind: "unknown_model",
      retryable: FINAL,
      says: "issue with the selected model",
    },
  ],
  // codex: turn.failed's message
  [
    "codex",
    "http-429",
    {
      provider: "openai",
      status: 429,
      kind: "rate_limited",
      retryable: RETRY,
      says: "exceeded retry limit, last status: 429",
    },
  ],
  [
    "codex",
    "http-500",
    {
      provider: "openai",
      status: 500,
      kind: "server_error",
      retryable: RETRY,
      says: "experiencing high demand",
    },
  ],
  [
    "codex",
    "limit-502",
    { provider: "openai", status: 502, kind: "server_error", retryable: RETRY, says: "502 Bad Gateway" },
  ],
  [
    "codex",
    "limit-503",
    { provider: "openai", status: 503, kind: "overloaded", retryable: RETRY, says: "currently overloaded" },
  ],
  [
    "codex",
    "limit-stream-cut",
    { provider: "openai", status: 0, kind: "connection", retryable: RETRY, says: "stream disconnected" },
  ],
  [
    "codex",
    "response-failed",
    { provider: "openai", status: 0, kind: "connection", retryable: RETRY, says: "stream disconnected" },
  ],
  [
    "codex",
    "unreachable",
    { provider: "openai", status: 0, kind: "connection", retryable: RETRY, says: "Connection failed" },
  ],
  [
    "codex",
    "http-401",
    { provider: "openai", status: 401, kind: "unauthorized", retryable: FINAL, says: "Incorrect API key" },
  ],
  [
    "codex",
    "limit-429-quota",
    { provider: "openai", status: 429, kind: "quota_exhausted", retryable: FINAL, says: "Quota exceeded" },
  ],
  [
    "codex",
    "limit-400-context",
    {
      provider: "openai",
      status: 400,
      kind: "context_too_long",
      retryable: FINAL,
      says: "exceeds the context window",
    },
  ],
  [
    "codex",
    "limit-404-model",
    { provider: "openai", status: 404, kind: "unknown_model", retryable: FINAL, says: "does not exist" },
  ],
  // gemini: the error result and the exit code
  [
    "gemini",
    "api-429",
    {
      provider: "gemini",
      status: 429,
      kind: "rate_limited",
      retryable: RETRY,
      says: "Resource has been exhausted",
    },
  ],
  [
    "gemini",
    "limit-429-retry-after",
    {
      provider: "gemini",
      status: 429,
      kind: "rate_limited",
      retryable: RETRY,
      retryAfterSeconds: 1,
      says: "Resource has been exhausted",
    },
  ],
  [
    "gemini",
    "api-503",
    {
      provider: "gemini",
      status: 503,
      kind: "overloaded",
      retryable: RETRY,
      says: "The model is overloaded",
    },
  ],
  [
    "gemini",
    "api-500",
    {
      provider: "gemini",
      status: 500,
      kind: "server_error",
      retryable: RETRY,
      says: "An internal error has occurred",
    },
  ],
  [
    "gemini",
    "stream-cut",
    { provider: "gemini", status: 0, kind: "connection", retryable: RETRY, says: "terminated" },
  ],
  [
    "gemini",
    "unreachable",
    { provider: "gemini", status: 0, kind: "connection", retryable: RETRY, says: "fetch failed" },
  ],
  [
    "gemini",
    "api-401",
    {
      provider: "gemini",
      status: 401,
      kind: "unauthorized",
      retryable: FINAL,
      says: "invalid authentication credentials",
    },
  ],
  [
    "gemini",
    "limit-429-daily",
    {
      provider: "gemini",
      status: 429,
      kind: "quota_exhausted",
      retryable: FINAL,
      says: "exhausted your daily quota",
    },
  ],
  [
    "gemini",
    "limit-400-context",
    {
      provider: "gemini",
      status: 400,
      kind: "context_too_long",
      retryable: FINAL,
      says: "input token count",
    },
  ],
  [
    "gemini",
    "limit-404-model",
    {
      provider: "gemini",
      status: 404,
      kind: "unknown_model",
      retryable: FINAL,
      says: "Requested entity was not found",
    },
  ],
  // opencode: the error line (statusCode, isRetryable, responseHeaders)
  [
    "opencode",
    "api-429",
    {
      provider: "anthropic",
      status: 429,
      kind: "rate_limited",
      retryable: RETRY,
      retryAfterSeconds: 1,
      says: "per-minute rate limit",
    },
  ],
  [
    "opencode",
    "limit-529",
    { provider: "anthropic", status: 529, kind: "overloaded", retryable: RETRY, says: "Overloaded" },
  ],
  [
    "opencode",
    "limit-503-retry-after",
    {
      provider: "anthropic",
      status: 503,
      kind: "overloaded",
      retryable: RETRY,
      retryAfterSeconds: 1,
      says: "Internal server error",
    },
  ],
  [
    "opencode",
    "unreachable",
    { provider: "anthropic", status: 0, kind: "connection", retryable: RETRY, says: "Cannot connect to API" },
  ],
  [
    "opencode",
    "api-401",
    { provider: "anthropic", status: 401, kind: "unauthorized", retryable: FINAL, says: "invalid x-api-key" },
  ],
  [
    "opencode",
    "limit-400-context",
    {
      provider: "anthropic",
      status: 400,
      kind: "context_too_long",
      retryable: FINAL,
      says: "prompt is too long",
    },
  ],
];

describe("a failed run of a real CLI: the provider's last answer", () => {
  it.each(TABLE)("%s %s", (vendor, name, expected) => {
    const answer = attemptAnswer(vendor, lines(vendor, name), exitOf(vendor, name), MODEL[vendor]);
    const { says, ...fields } = expected;
    expect(answer).toMatchObject(fields);
    expect(answer?.message).toContain(says);
    if (expected.retryAfterSeconds === undefined) expect(answer).not.toHaveProperty("retryAfterSeconds");
  });

  it("covers every error capture of every vendor", () => {
    const covered = new Set(TABLE.map(([v, n]) => `${v}/${n}`));
    for (const vendor of ["claude", "codex", "gemini", "opencode"]) {
      const dir = new URL(`../../../test/fakes/models/fixtures/${vendor}/`, import.meta.url);
      const names = readdirSync(dir).filter((n) =>
        /^(api-|http-|limit-|stream-cut\.|unreachable|response-failed)/.test(n),
      );
      for (const n of names) {
        if (n === "limit-exit-codes.json") continue;
        expect(covered, `${vendor}/${n}`).toContain(`${vendor}/${n.replace(/\.(jsonl|ndjson)$/, "")}`);
      }
    }
  });
});

describe("each error line the CLIs print on the way", () => {
  it("claude's api_retry lines name the status of each failed call (null: no answer)", () => {
    const statuses = (name: string) =>
      lines("claude", name)
        .map((l) => parseJsonLine(l))
        .filter((l) => l?.subtype === "api_retry")
        .map((l) => cliLineAnswer("claude", l ?? {}))
        .map((a) => [a?.status, a?.retryable]);
    expect(statuses("api-429")).toEqual(Array(3).fill([429, true]));
    expect(statuses("limit-stream-cut")).toEqual(Array(3).fill([0, true]));
    expect(statuses("api-401")).toEqual(Array(3).fill([401, false]));
  });

  it("codex's Reconnecting lines carry the cause codex retried", () => {
    const causes = (name: string) =>
      lines("codex", name)
        .filter((l) => l.includes("Reconnecting"))
        .map((l) => cliLineAnswer("codex", l))
        .map((a) => [a?.status, a?.kind]);
    expect(causes("limit-503")).toEqual(Array(2).fill([503, "overloaded"]));
    expect(causes("http-401")).toEqual(Array(2).fill([401, "unauthorized"]));
    expect(causes("unreachable")).toEqual(Array(2).fill([0, "connection"]));
  });

  it("no line of a successful run is an answer to retry", () => {
    const ok: [Vendor, string][] = [
      ["claude", "edit-and-bash"],
      ["claude", "stream-cut-retried"],
      ["codex", "edit"],
      ["gemini", "edit-success"],
      ["opencode", "edit-anthropic"],
    ];
    for (const [vendor, name] of ok) {
      expect(attemptAnswer(vendor, lines(vendor, name), 0, MODEL[vendor])).toBeUndefined();
      // The lines of a retried stream cut are the CLI's own retries, not the run's answer.
      const final = lines(vendor, name).filter((l) => !l.includes("api_retry"));
      expect(final.map((l) => cliLineAnswer(vendor, l, { model: MODEL[vendor] ?? "" }))).toEqual(
        final.map(() => undefined),
      );
    }
  });

  it("failures of the CLI itself are no provider answer (they fail the run as before)", () => {
    const own: [Vendor, string][] = [
      ["claude", "max-turns"],
      ["claude", "resume-without-id"],
      ["codex", "missing-key"],
      ["opencode", "unknown-model"],
      ["opencode", "google-key-missing"],
    ];
    for (const [vendor, name] of own) {
      expect(
        attemptAnswer(vendor, lines(vendor, name), 1, MODEL[vendor]),
        `${vendor}/${name}`,
      ).toBeUndefined();
    }
  });

  it("gemini's exit code gives the status when its words do not", () => {
    const line = { type: "result", status: "error", error: { message: "[API Error: something new]" } };
    expect(cliLineAnswer("gemini", line, { exitCode: 247 })).toMatchObject({ status: 503, retryable: true });
    expect(cliLineAnswer("gemini", line, { exitCode: 145 })).toMatchObject({ status: 401, retryable: false });
    expect(cliLineAnswer("gemini", line, { exitCode: 1 })).toBeUndefined();
  });

  it("exec prints claude's lines but its provider is unknown: never an answer to retry", () => {
    expect(attemptAnswer("exec", lines("claude", "api-429"), 1)).toBeUndefined();
  });
});

describe("the batch APIs' errors", () => {
  it.each([
    [
      {
        status: 429,
        message: "anthropic POST /v1/messages/batches: HTTP 429: rate_limit_error: slow down",
        retryAfterSeconds: 7,
      },
      "rate_limited",
      true,
      7,
    ],
    [
      {
        status: 429,
        message:
          "openai POST /v1/batches: HTTP 429: insufficient_quota: You exceeded your current quota, please check your plan and billing details.",
      },
      "quota_exhausted",
      false,
      undefined,
    ],
    [
      {
        status: 529,
        message: "anthropic GET /v1/messages/batches/x: HTTP 529: overloaded_error: Overloaded",
      },
      "overloaded",
      true,
      undefined,
    ],
    [
      {
        status: 503,
        message: "gemini GET /v1beta/batches/x: HTTP 503: UNAVAILABLE: The service is currently unavailable.",
      },
      "overloaded",
      true,
      undefined,
    ],
    [{ status: 500, message: "openai GET /v1/batches/x: HTTP 500" }, "server_error", true, undefined],
    [
      { message: "openai POST /v1/files: request failed: fetch failed (connect ECONNREFUSED 127.0.0.1:9)" },
      "connection",
      true,
      undefined,
    ],
    [
      { status: 200, message: "gemini GET /v1beta/batches/x: response is not JSON" },
      "server_error",
      true,
      undefined,
    ],
    [
      {
        status: 401,
        message: "anthropic POST /v1/messages/batches: HTTP 401: authentication_error: invalid x-api-key",
      },
      "unauthorized",
      false,
      undefined,
    ],
    [
      { status: 403, message: "gemini POST …: HTTP 403: PERMISSION_DENIED: denied" },
      "forbidden",
      false,
      undefined,
    ],
    [
      { status: 400, message: "openai POST /v1/batches: HTTP 400: invalid_request_error: bad" },
      "bad_request",
      false,
      undefined,
    ],
    [
      {
        status: 404,
        message: "openai POST /v1/batches: HTTP 404: model_not_found: The model `x` does not exist",
      },
      "unknown_model",
      false,
      undefined,
    ],
  ] as [BatchErrorParts, string, boolean, number | undefined][])(
    "%j → %s (retryable %s)",
    (error, kind, retryable, retryAfter) => {
      const answer = batchAnswer("openai", error);
      expect(answer).toMatchObject({ kind, retryable, status: error.status ?? 0 });
      expect(answer.retryAfterSeconds).toBe(retryAfter);
    },
  );
});

describe("the status table", () => {
  it.each([
    [429, "", "rate_limited"],
    [529, "", "overloaded"],
    [503, "", "overloaded"],
    [500, "", "server_error"],
    [502, "", "server_error"],
    [504, "", "server_error"],
    [408, "", "server_error"],
    [0, "", "connection"],
    [401, "", "unauthorized"],
    [403, "", "forbidden"],
    [403, "billing not active for this project", "quota_exhausted"],
    [402, "", "quota_exhausted"],
    [400, "", "bad_request"],
    [400, "max_tokens: prompt is too long", "context_too_long"],
    [413, "", "context_too_long"],
    [404, "", "unknown_model"],
    [422, "", "bad_request"],
  ])("%i %j → %s", (status, message, kind) => {
    expect(answerKind(status, message)).toBe(kind);
  });
});
