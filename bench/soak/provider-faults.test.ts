import { describe, expect, it } from "vitest";
import { providerCall, providerRule } from "./provider-faults.js";

const PATHS = {
  "anthropic create": ["POST", "/v1/messages/batches"],
  "anthropic poll": ["GET", "/v1/messages/batches/msgbatch_1"],
  "anthropic cancel": ["POST", "/v1/messages/batches/msgbatch_1/cancel"],
  "anthropic delete": ["DELETE", "/v1/messages/batches/msgbatch_1"],
  "gemini create": ["POST", "/v1beta/models/gemini-3.1-flash-lite:batchGenerateContent"],
  "gemini poll": ["GET", "/v1beta/batches/b1"],
  "gemini cancel": ["POST", "/v1beta/batches/b1:cancel"],
  "gemini delete": ["DELETE", "/v1beta/batches/b1"],
  "openai upload": ["POST", "/v1/files"],
  "openai create": ["POST", "/v1/batches"],
  "openai poll": ["GET", "/v1/batches/batch_1"],
  "openai cancel": ["POST", "/v1/batches/batch_1/cancel"],
  "openai delete": ["DELETE", "/v1/files/file_1"],
} as const;

const hits = (call: string) =>
  Object.entries(PATHS)
    .filter(([, [method, path]]) => {
      const rule = providerCall(call);
      const pathOk =
        rule.path === undefined ||
        (typeof rule.path === "string" ? rule.path === path : rule.path.test(path));
      return rule.method === method && pathOk;
    })
    .map(([name]) => name.split(" ")[1])
    .sort();

describe("provider faults on the fakes (test/fakes/providers/README.md#faults)", () => {
  it.each([
    ["submit", ["create", "create", "create", "upload"]],
    ["poll", ["poll", "poll", "poll"]],
    ["cancel", ["cancel", "cancel", "cancel"]],
    ["delete", ["delete", "delete", "delete"]],
  ])("%s hits exactly those calls of the three fakes", (call, want) => {
    expect(hits(call)).toEqual([...want].sort());
  });

  it("a 429 carries its retry-after and count; an unknown call is named", () => {
    expect(
      providerRule({
        at: 0,
        kind: "provider-429",
        target: "gemini",
        windowMs: 5_000,
        params: { call: "poll", times: 3, retryAfter: 7 },
      }),
    ).toEqual({ kind: "status", status: 429, retryAfter: 7, method: "GET", times: 3 });
    const lost = providerRule({
      at: 0,
      kind: "provider-lost-answer",
      target: "openai",
      windowMs: 5_000,
      params: { call: "submit", times: 1 },
    });
    expect(lost).toMatchObject({ kind: "lose-answer", how: "reset", method: "POST", times: 1 });
    expect(
      providerRule({
        at: 0,
        kind: "provider-timeout",
        target: "anthropic",
        windowMs: 1,
        params: { call: "cancel", times: 2 },
      }),
    ).toMatchObject({ kind: "hang", method: "POST", times: 2 });
    expect(() =>
      providerRule({
        at: 0,
        kind: "leader-evict",
        target: "leader",
        windowMs: 1,
        params: { call: "poll", times: 1 },
      }),
    ).toThrow("leader-evict is not a provider fault");
    expect(() => providerCall("upload")).toThrow(
      'params.call must be submit, poll, cancel or delete, got "upload"',
    );
  });
});
