import { describe, expect, it } from "vitest";
import {
  AGENTS_PAGE_1_JSON,
  AGENTS_PAGE_1_PROTOBUF,
  AGENTS_PAGE_2_JSON,
  AGENTS_PAGE_2_PROTOBUF,
  AGENTS_PLAIN_PROTOBUF_406,
  type CapturedAnswer,
  decodedPart,
  JOB_NOT_FOUND_PROTOBUF,
  JOBS_PAGE_JSON,
  JOBS_PAGE_PROTOBUF,
} from "../../test/support/metadata-protobuf-pages.js";
import { decodeMetadataPage, decodeStatus, isKubernetesProtobuf } from "./metadata-protobuf.js";

const bytes = (a: CapturedAnswer) => new Uint8Array(Buffer.from(a.body, "base64"));

/** What the JSON path gives for the same page, each item's metadata cut to the decoded fields. */
function jsonCut(a: CapturedAnswer) {
  const page = JSON.parse(a.body) as {
    metadata: Record<string, unknown>;
    items: { apiVersion: string; kind: string; metadata: Record<string, unknown> }[];
  };
  return {
    metadata: page.metadata,
    items: page.items.map((it) => ({
      apiVersion: it.apiVersion,
      kind: it.kind,
      metadata: decodedPart(it.metadata),
    })),
  };
}

describe("decodeMetadataPage: pages captured from kube-apiserver decode to what the JSON path gives", () => {
  it.each([
    [
      "Agents page 1 (continue, an Agent being deleted behind a finalizer)",
      AGENTS_PAGE_1_PROTOBUF,
      AGENTS_PAGE_1_JSON,
    ],
    ["Agents page 2 (the last: no continue; generateName)", AGENTS_PAGE_2_PROTOBUF, AGENTS_PAGE_2_JSON],
    ["Jobs (a controlling owner reference)", JOBS_PAGE_PROTOBUF, JOBS_PAGE_JSON],
  ])("%s", (_name, protobuf, json) => {
    expect(isKubernetesProtobuf(protobuf.contentType)).toBe(true);
    expect(decodeMetadataPage(bytes(protobuf))).toEqual(jsonCut(json));
  });

  it("leaves out what the caches never keep (managedFields, labels, annotations), which the page carries", () => {
    const json = JSON.parse(AGENTS_PAGE_1_JSON.body) as { items: { metadata: Record<string, unknown> }[] };
    expect(json.items[1]?.metadata).toHaveProperty("managedFields");
    expect(json.items[1]?.metadata).toHaveProperty("labels");
    const decoded = decodeMetadataPage(bytes(AGENTS_PAGE_1_PROTOBUF)).items[1]?.metadata;
    expect(decoded).toMatchObject({ name: "a-2", finalizers: ["agents.re-cinq.com/batch-cleanup"] });
    expect(Object.keys(decoded ?? {})).not.toContain("managedFields");
    expect(Object.keys(decoded ?? {})).not.toContain("labels");
  });
});

describe("decodeStatus: an error answered in protobuf", () => {
  it.each([
    [
      "404 of a Job",
      JOB_NOT_FOUND_PROTOBUF,
      { code: 404, reason: "NotFound", message: 'jobs.batch "nope" not found' },
    ],
    [
      "406 of a custom resource in plain protobuf",
      AGENTS_PLAIN_PROTOBUF_406,
      { code: 406, reason: "NotAcceptable" },
    ],
  ])("%s", (_name, answer, expected) => {
    expect(isKubernetesProtobuf(answer.contentType)).toBe(true);
    expect(decodeStatus(bytes(answer))).toMatchObject(expected);
  });
});

/** A protobuf field key and a varint (two's complement for a negative int64, 10 bytes). */
function varint(n: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  do {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v > 0n ? b | 0x80 : b);
  } while (v > 0n);
  return out;
}
const field = (key: number, body: number[]) => [key, ...varint(body.length), ...body];
const text = (s: string) => [...Buffer.from(s)];
/** A whole body: magic, runtime.Unknown{typeMeta{kind}, raw}. */
const envelope = (kind: string, raw: number[]) =>
  new Uint8Array([0x6b, 0x38, 0x73, 0x00, ...field(0x0a, field(0x12, text(kind))), ...field(0x12, raw)]);
const pageOf = (objectMeta: number[]) =>
  envelope("PartialObjectMetadataList", field(0x12, field(0x0a, objectMeta)));

describe("decodeMetadataPage: values the JSON path spells its own way", () => {
  it.each([
    [
      "Go's zero time is null, as its JSON",
      [...field(0x0a, text("a")), ...field(0x42, [0x08, ...varint(-62135596800)])],
      { name: "a", creationTimestamp: null },
    ],
    [
      "nanoseconds are dropped (JSON times are whole seconds)",
      [...field(0x42, [0x08, ...varint(1_800_000_000), 0x10, ...varint(999_000_000)])],
      { creationTimestamp: "2027-01-15T08:00:00Z" },
    ],
    ["empty strings and a zero generation are left out (omitempty)", [...field(0x0a, []), 0x38, 0], {}],
    [
      "an unknown field of any wire type is skipped",
      [
        ...[0xf8, 0x01, 5], // field 31, varint
        ...[0x99, 0x01, 1, 2, 3, 4, 5, 6, 7, 8], // field 19, fixed64
        ...[0xa5, 0x01, 9, 9, 9, 9], // field 20, fixed32
        ...[0x8a, 0x01, 3, 1, 2, 3], // field 17 (managedFields), length-delimited
        ...field(0x0a, text("b")),
      ],
      { name: "b" },
    ],
  ])("%s", (_name, objectMeta, expected) => {
    expect(decodeMetadataPage(pageOf(objectMeta)).items[0]?.metadata).toEqual(expected);
  });
});

describe("decodeMetadataPage: a malformed page is a clear error naming where it broke", () => {
  const whole = bytes(AGENTS_PAGE_1_PROTOBUF);
  it.each([
    [
      "truncated mid-page",
      whole.subarray(0, 400),
      /PartialObjectMetadataList envelope\.raw \(protobuf\) is \d+ bytes long, past the end/,
    ],
    [
      "no k8s magic (e.g. JSON)",
      new Uint8Array(Buffer.from('{"kind":"Status"}')),
      /does not start with the k8s\\0 magic/,
    ],
    ["a Status where a list was expected", bytes(JOB_NOT_FOUND_PROTOBUF), /the envelope holds a Status/],
    [
      "an item whose metadata claims more bytes than its item holds",
      pageOf([...field(0x0a, text("a"))]).map((b, i, all) => (i === all.length - 4 ? 0x7f : b)),
      /items\[0\]\.metadata \(protobuf\) is 127 bytes long, past the end of its message/,
    ],
    [
      "a varint cut short",
      pageOf([0x38, 0x80]),
      /items\[0\]\.metadata\.generation \(protobuf\) ends inside a varint/,
    ],
    ["wire type 3 (groups)", pageOf([0x7b]), /field 15 \(protobuf\) has wire type 3/],
  ])("%s", (_name, body, error) => {
    expect(() => decodeMetadataPage(body)).toThrow(error);
  });
});
