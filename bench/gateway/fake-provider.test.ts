import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { SseReader } from "../../src/gateway/sse.js";
import { AnthropicUsageReader } from "../../src/gateway/usage/anthropic.js";
import { type PacedProvider, startPacedProvider } from "./fake-provider.js";
import { sentAtOf } from "./report.js";

const ask = (origin: string, id: string) =>
  request(`${origin}/v1/messages?beta=true`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "claude-sonnet-4-6",
      stream: true,
      metadata: { user_id: id },
      messages: [],
    }),
  });

let provider: PacedProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

describe("the gateway bench's paced provider journals what it sent (docs/gateway.md#benchmark)", () => {
  it("a whole stream: the usage a Messages reader reads from it is the journal's, and each delta carries its send time", async () => {
    provider = await startPacedProvider({ events: 4, paceMs: 1 });
    const res = await ask(provider.origin, "whole-1");
    const sse = new SseReader();
    const reader = new AnthropicUsageReader();
    let stamped = 0;
    for await (const chunk of res.body) {
      for (const e of sse.push(chunk as Uint8Array)) {
        reader.event(e);
        if (sentAtOf(e) !== undefined) stamped++;
      }
    }
    expect(stamped).toBe(4);
    const [entry] = provider.journal();
    expect(entry?.id).toBe("whole-1");
    expect(entry?.complete).toBe(true);
    expect(reader.reading().complete).toBe(true);
    expect(reader.reading().usage).toEqual(entry?.usage);
    expect(entry?.usage?.outputTokens).toBeGreaterThan(1);
  });

  it("a stream cut after its first delta is journaled with message_start's counts only", async () => {
    provider = await startPacedProvider({ events: 1000, paceMs: 50 });
    const res = await ask(provider.origin, "cut-1");
    const sse = new SseReader();
    const reader = new AnthropicUsageReader();
    outer: for await (const chunk of res.body) {
      for (const e of sse.push(chunk as Uint8Array)) {
        reader.event(e);
        if (sentAtOf(e) !== undefined) break outer;
      }
    }
    const [entry] = provider.journal();
    expect(entry?.complete).toBe(false);
    expect(entry?.usage?.outputTokens).toBe(1);
    expect(reader.reading().usage).toEqual(entry?.usage);
  });
});
