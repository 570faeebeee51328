import { describe, expect, it } from "vitest";
import { conversationAuthHeaders } from "./conversation-auth.js";

describe("conversationAuthHeaders (docs/decisions.md D-54)", () => {
  it.each<[string, Record<string, string | undefined>, Array<[string, string]>]>([
    ["no AGENT_CONVERSATION_AUTH", { CONV: "Bearer t" }, []],
    ["empty AGENT_CONVERSATION_AUTH", { AGENT_CONVERSATION_AUTH: "", CONV: "Bearer t" }, []],
    ["the named var is unset", { AGENT_CONVERSATION_AUTH: "CONV" }, []],
    ["the named var is blank", { AGENT_CONVERSATION_AUTH: "CONV", CONV: " \n " }, []],
    [
      "a bare value is the Authorization value",
      { AGENT_CONVERSATION_AUTH: "CONV", CONV: "Bearer t0k\n" },
      [["Authorization", "Bearer t0k"]],
    ],
    [
      "a bare value with a colon inside",
      { AGENT_CONVERSATION_AUTH: "CONV", CONV: "Basic a b:c" },
      [["Authorization", "Basic a b:c"]],
    ],
    [
      "a full header line",
      { AGENT_CONVERSATION_AUTH: "CONV", CONV: "Authorization: Bearer t" },
      [["Authorization", "Bearer t"]],
    ],
    [
      "a header block",
      { AGENT_CONVERSATION_AUTH: "CONV", CONV: "\nX-Api-Key: k1\n\nX-Tenant : acme\n" },
      [
        ["X-Api-Key", "k1"],
        ["X-Tenant", "acme"],
      ],
    ],
  ])("%s", (_name, env, want) => {
    expect(conversationAuthHeaders(env)).toEqual(want);
  });
});
