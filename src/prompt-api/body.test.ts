import { describe, expect, it } from "vitest";
import { promptFromBody, readLimitedBody } from "./body.js";
import { MAX_REQUEST_BYTES } from "./messages.js";

function streamOf(chunks: Uint8Array[]): { stream: ReadableStream<Uint8Array>; pulled: () => number } {
  let i = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks[i];
      if (next === undefined) controller.close();
      else {
        i++;
        controller.enqueue(next);
      }
    },
  });
  return { stream, pulled: () => i };
}

const bytes = (n: number) => new Uint8Array(n).fill(0x61);

describe("readLimitedBody", () => {
  it("is 200 KiB", () => {
    expect(MAX_REQUEST_BYTES).toBe(204800);
  });

  it.each([
    [0, true],
    [1, true],
    [204799, true],
    [204800, true],
    [204801, false],
    [300000, false],
  ])("a %i-byte body in 4 KiB chunks is accepted: %s", async (size, ok) => {
    const chunks: Uint8Array[] = [];
    for (let off = 0; off < size; off += 4096) chunks.push(bytes(Math.min(4096, size - off)));
    const read = await readLimitedBody(streamOf(chunks).stream, null, MAX_REQUEST_BYTES);
    expect(read.ok).toBe(ok);
    if (read.ok) expect(read.bytes.byteLength).toBe(size);
  });

  it("stops reading as soon as the limit is passed", async () => {
    const chunks = Array.from({ length: 100 }, () => bytes(65536));
    const s = streamOf(chunks);
    const read = await readLimitedBody(s.stream, null, MAX_REQUEST_BYTES);
    expect(read).toEqual({ ok: false, reason: "too-large" });
    expect(s.pulled()).toBeLessThanOrEqual(5);
  });

  it("refuses a declared Content-Length over the limit without reading", async () => {
    const s = streamOf([bytes(10)]);
    expect(await readLimitedBody(s.stream, "204801", MAX_REQUEST_BYTES)).toEqual({
      ok: false,
      reason: "too-large",
    });
    expect(s.pulled()).toBe(0);
  });

  it("does not trust a Content-Length under the limit over the actual bytes", async () => {
    const read = await readLimitedBody(streamOf([bytes(204801)]).stream, "10", MAX_REQUEST_BYTES);
    expect(read.ok).toBe(false);
  });

  it("treats a missing body as empty", async () => {
    const read = await readLimitedBody(null, undefined, MAX_REQUEST_BYTES);
    expect(read.ok && read.bytes.byteLength).toBe(0);
  });
});

describe("promptFromBody", () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  it.each([
    ['{"prompt":"hi"}', "hi"],
    ['{"prompt":" "}', " "],
    ['{"prompt":"a\\u00fc","other":1}', "aü"],
    ['{"prompt":""}', undefined],
    ['{"prompt":1}', undefined],
    ['{"prompt":null}', undefined],
    ['{"prompt":["x"]}', undefined],
    ["{}", undefined],
    ['["prompt"]', undefined],
    ['"prompt"', undefined],
    ["null", undefined],
    ["", undefined],
    ["prompt=hi", undefined],
    ['{"prompt":"hi"', undefined],
  ])("%j ⇒ %j", (text, prompt) => {
    expect(promptFromBody(enc(text))).toBe(prompt);
  });

  it("refuses a body that is not UTF-8", () => {
    const bad = new Uint8Array([...enc('{"prompt":"'), 0xff, 0xfe, ...enc('"}')]);
    expect(promptFromBody(bad)).toBeUndefined();
  });
});
