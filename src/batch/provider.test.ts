import { describe, expect, it } from "vitest";
import { BatchProviderError } from "./provider.js";

describe("BatchProviderError.permanent", () => {
  it.each([
    [429, "openai POST /v1/batches: HTTP 429: rate_limit_exceeded: Rate limit reached", false],
    [
      429,
      "openai POST /v1/batches: HTTP 429: insufficient_quota: You exceeded your current quota, please check your plan and billing details.",
      true,
    ],
    [
      400,
      "anthropic POST /v1/messages/batches: HTTP 400: invalid_request_error: Your credit balance is too low",
      true,
    ],
    [401, "anthropic POST /v1/messages/batches: HTTP 401: authentication_error: invalid x-api-key", true],
    [408, "gemini POST …: HTTP 408", false],
    [409, "openai POST …: HTTP 409", false],
    [529, "anthropic GET …: HTTP 529: overloaded_error: Overloaded", false],
    [undefined, "openai POST /v1/files: request failed: fetch failed", false],
  ])("HTTP %s %j → permanent %s", (status, message, permanent) => {
    expect(new BatchProviderError(message, status).permanent).toBe(permanent);
  });
});
