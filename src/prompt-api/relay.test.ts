import { describe, expect, it } from "vitest";
import { relaySupervisorAnswer } from "./relay.js";

const err = (m: string) => JSON.stringify({ error: m });
const bad = (status: number) => ({
  status: 502,
  error: `unexpected answer from the session's supervisor (${status})`,
});

describe("relaySupervisorAnswer (docs/decisions.md D-46)", () => {
  it.each([
    // action, supervisor status, supervisor body, controller status, controller body
    ["prompt", 202, '{"turn":1,"queued":1,"sessionId":""}', 202, { turn: 1, queued: 1, sessionId: "" }],
    [
      "prompt",
      202,
      '{"turn":7,"queued":3,"sessionId":"s-1","extra":true}',
      202,
      { turn: 7, queued: 3, sessionId: "s-1" },
    ],
    ["close", 202, '{"queued":0}', 202, { queued: 0 }],
    ["close", 202, '{"queued":4}', 202, { queued: 4 }],
    [
      "prompt",
      400,
      err("the body is not JSON with a non-empty prompt string"),
      400,
      { error: "the body is not JSON with a non-empty prompt string" },
    ],
    ["prompt", 409, err("the session is ending"), 409, { error: "the session is ending" }],
    ["close", 409, err("the session is ending"), 409, { error: "the session is ending" }],
    ["prompt", 413, err("prompt exceeds 102400 bytes"), 413, { error: "prompt exceeds 102400 bytes" }],
    ["prompt", 429, err("too many queued prompts"), 429, { error: "too many queued prompts" }],
    ["prompt", 503, err("starting"), 503, { error: "the session is not serving yet" }],
    ["prompt", 503, "", 503, { error: "the session is not serving yet" }],
  ] as const)("%s: %i %s ⇒ %i", (action, status, text, outStatus, outBody) => {
    const r = relaySupervisorAnswer(action, status, text);
    expect(r.status).toBe(outStatus);
    expect(r.body).toEqual(outBody);
  });

  it.each([
    ["prompt", 200, '{"turn":1,"queued":1,"sessionId":""}'],
    ["prompt", 201, '{"turn":1,"queued":1,"sessionId":""}'],
    ["prompt", 401, err("the bearer token is missing or wrong")],
    ["prompt", 404, err("not found")],
    ["prompt", 500, err("boom")],
    ["prompt", 302, ""],
    ["prompt", 202, "not json"],
    ["prompt", 202, "[]"],
    ["prompt", 202, '{"turn":0,"queued":1,"sessionId":""}'],
    ["prompt", 202, '{"turn":1.5,"queued":1,"sessionId":""}'],
    ["prompt", 202, '{"turn":1,"queued":-1,"sessionId":""}'],
    ["prompt", 202, '{"turn":"1","queued":1,"sessionId":""}'],
    ["prompt", 202, '{"turn":1,"queued":1}'],
    ["prompt", 202, '{"turn":1,"queued":1,"sessionId":null}'],
    ["prompt", 202, '{"queued":1}'],
    ["close", 202, '{"queued":-1}'],
    ["close", 202, "{}"],
    ["close", 202, ""],
    ["prompt", 409, "the session is ending"],
    ["prompt", 429, '{"error":42}'],
    ["prompt", 413, '{"message":"too big"}'],
  ] as const)("%s: %i %j ⇒ 502", (action, status, text) => {
    const r = relaySupervisorAnswer(action, status, text);
    expect({ status: r.status, error: (r.body as { error: string }).error }).toEqual(bad(status));
    expect(r.kind).toBe("unexpected");
  });
});
