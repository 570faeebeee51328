/**
 * Decodes one page of a metadata-only LIST answered in Kubernetes protobuf
 * (`application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`), reading
 * only the fields the controller's caches keep (transform.ts: identity, version, generation, times,
 * finalizers, owner references) and skipping every other field by its length prefix without
 * decoding it: above all `managedFields`, about 1 KB of each item's 1.1 KB, whose JSON parse and
 * garbage were most of an idle poll's CPU (docs/controller.md#watch-poll-and-cache).
 *
 * Each value comes out as the JSON path gives it (RFC 3339 times in UTC to the second, empty strings
 * and a zero generation left out, as Go's `omitempty` does), so the rest of the controller cannot
 * tell the encodings apart. Field numbers: k8s.io/apimachinery pkg/apis/meta/v1/generated.proto and
 * pkg/runtime/generated.proto (v0.33). Pure: bytes in, plain data out.
 */

/** The metadata of one listed item: the fields the caches keep, as the JSON path spells them. */
export interface ListedMetadata {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string | null;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  ownerReferences?: ListedOwnerReference[];
  finalizers?: string[];
}

export interface ListedOwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** One page, in the shape the JSON path's `PartialObjectMetadataList` has. */
export interface MetadataPage {
  items: { apiVersion: string; kind: string; metadata: ListedMetadata }[];
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
}

/** The fields of a protobuf `Status` an error message needs. */
export interface ProtobufStatus {
  code?: number;
  reason?: string;
  message?: string;
}

/** True for a Content-Type the API server gives its protobuf encoding. */
export function isKubernetesProtobuf(contentType: string | undefined): boolean {
  return (contentType ?? "").trim().toLowerCase().startsWith("application/vnd.kubernetes.protobuf");
}

const MAGIC = [0x6b, 0x38, 0x73, 0x00]; // "k8s\0"
/** Go's zero time.Time, which JSON writes as null. */
const ZERO_TIME_SECONDS = -62135596800;

/** Decodes a whole response body (magic, runtime.Unknown) holding a PartialObjectMetadataList. */
export function decodeMetadataPage(body: Uint8Array): MetadataPage {
  const raw = unwrap(body, "PartialObjectMetadataList");
  const r = Reader.of(raw, "PartialObjectMetadataList");
  const page: MetadataPage = { items: [], metadata: {} };
  while (r.more()) {
    const tag = r.tag();
    if (tag === 0x0a) page.metadata = listMeta(r.message("metadata"));
    else if (tag === 0x12) {
      const item = r.message(`items[${page.items.length}]`);
      let metadata: ListedMetadata = {};
      while (item.more()) {
        if (item.tag() === 0x0a) metadata = objectMeta(item.message("metadata"));
        else item.skip();
      }
      page.items.push({ apiVersion: "meta.k8s.io/v1", kind: "PartialObjectMetadata", metadata });
    } else r.skip();
  }
  return page;
}

/** Decodes a protobuf `Status` (an error answer), for its code, reason and message. */
export function decodeStatus(body: Uint8Array): ProtobufStatus {
  const r = Reader.of(unwrap(body, "Status"), "Status");
  const s: ProtobufStatus = {};
  while (r.more()) {
    const tag = r.tag();
    if (tag === 0x1a) s.message = r.string("message");
    else if (tag === 0x22) s.reason = r.string("reason");
    else if (tag === 0x30) s.code = r.varint("code");
    else r.skip();
  }
  return s;
}

/** Checks the magic and the runtime.Unknown envelope; returns the message of `kind` inside. */
function unwrap(body: Uint8Array, kind: string): Uint8Array {
  if (body.length < 4 || MAGIC.some((b, i) => body[i] !== b))
    throw new Error(`${kind} (protobuf): the body does not start with the k8s\\0 magic`);
  const r = Reader.of(body.subarray(4), `${kind} envelope`);
  let gotKind = "";
  let raw: Uint8Array | undefined;
  let encoding = "";
  while (r.more()) {
    const tag = r.tag();
    if (tag === 0x0a) {
      const typeMeta = r.message("typeMeta");
      while (typeMeta.more()) {
        if (typeMeta.tag() === 0x12) gotKind = typeMeta.string("typeMeta.kind");
        else typeMeta.skip();
      }
    } else if (tag === 0x12) raw = r.bytes("raw");
    else if (tag === 0x1a) encoding = r.string("contentEncoding");
    else r.skip();
  }
  if (gotKind !== kind)
    throw new Error(`${kind} (protobuf): the envelope holds a ${gotKind || "message of no kind"}`);
  if (encoding !== "") throw new Error(`${kind} (protobuf): unsupported contentEncoding ${encoding}`);
  return raw ?? new Uint8Array(0);
}

function listMeta(r: Reader): MetadataPage["metadata"] {
  const m: MetadataPage["metadata"] = {};
  while (r.more()) {
    const tag = r.tag();
    if (tag === 0x12) set(m, "resourceVersion", r.string("metadata.resourceVersion"));
    else if (tag === 0x1a) set(m, "continue", r.string("metadata.continue"));
    else if (tag === 0x20) m.remainingItemCount = r.varint("metadata.remainingItemCount");
    else r.skip();
  }
  return m;
}

function objectMeta(r: Reader): ListedMetadata {
  const m: ListedMetadata = {};
  while (r.more()) {
    // managedFields (17), annotations (12), labels (11), selfLink (4): skipped by r.skip().
    switch (r.tag()) {
      case 0x0a:
        set(m, "name", r.string("name"));
        break;
      case 0x12:
        set(m, "generateName", r.string("generateName"));
        break;
      case 0x1a:
        set(m, "namespace", r.string("namespace"));
        break;
      case 0x2a:
        set(m, "uid", r.string("uid"));
        break;
      case 0x32:
        set(m, "resourceVersion", r.string("resourceVersion"));
        break;
      case 0x38: {
        const generation = r.varint("generation");
        if (generation !== 0) m.generation = generation;
        break;
      }
      case 0x42:
        m.creationTimestamp = time(r.message("creationTimestamp"));
        break;
      case 0x4a:
        m.deletionTimestamp = time(r.message("deletionTimestamp")) ?? undefined;
        break;
      case 0x50:
        m.deletionGracePeriodSeconds = r.varint("deletionGracePeriodSeconds");
        break;
      case 0x6a:
        m.ownerReferences = [...(m.ownerReferences ?? []), ownerReference(r.message("ownerReferences"))];
        break;
      case 0x72:
        m.finalizers = [...(m.finalizers ?? []), r.string("finalizers")];
        break;
      default:
        r.skip();
    }
  }
  return m;
}

function ownerReference(r: Reader): ListedOwnerReference {
  const o: ListedOwnerReference = { apiVersion: "", kind: "", name: "", uid: "" };
  while (r.more()) {
    const tag = r.tag();
    if (tag === 0x0a) o.kind = r.string("kind");
    else if (tag === 0x1a) o.name = r.string("name");
    else if (tag === 0x22) o.uid = r.string("uid");
    else if (tag === 0x2a) o.apiVersion = r.string("apiVersion");
    else if (tag === 0x30) o.controller = r.varint("controller") !== 0;
    else if (tag === 0x38) o.blockOwnerDeletion = r.varint("blockOwnerDeletion") !== 0;
    else r.skip();
  }
  return o;
}

/** metav1.Time {seconds=1, nanos=2} as its JSON: RFC 3339 in UTC, whole seconds; zero is null. */
function time(r: Reader): string | null {
  let seconds = 0;
  while (r.more()) {
    if (r.tag() === 0x08) seconds = r.varint("seconds");
    else r.skip(); // nanos: the JSON form has none
  }
  if (seconds === ZERO_TIME_SECONDS) return null;
  return `${new Date(seconds * 1000).toISOString().slice(0, 19)}Z`;
}

/** Sets a string field unless empty, as Go's `omitempty` leaves it out of the JSON. */
function set<K extends string>(o: { [k in K]?: string }, key: K, value: string): void {
  if (value !== "") o[key] = value;
}

/** A cursor over one protobuf message; every read checks the message's bounds. */
class Reader {
  private pos: number;
  private lastTag = 0;

  constructor(
    private readonly buf: Buffer,
    private readonly end: number,
    start: number,
    /** Where this message is, for the error of a malformed one (built only then). */
    private readonly name: string,
    private readonly parent?: Reader,
  ) {
    this.pos = start;
  }

  /** A reader of a whole body (any Uint8Array; a Buffer is used as it is). */
  static of(body: Uint8Array, name: string): Reader {
    const buf = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    return new Reader(buf, buf.length, 0, name);
  }

  more(): boolean {
    return this.pos < this.end;
  }

  /** The next field's key (field number << 3 | wire type). */
  tag(): number {
    this.lastTag = this.varint("field key");
    return this.lastTag;
  }

  /** A varint as a number (int64 values beyond 2^53 lose precision; negative ones are 10 bytes). */
  varint(what: string): number {
    let lo = 0;
    let hi = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.pos >= this.end) throw this.error(what, "ends inside a varint");
      const b = this.buf[this.pos++] as number;
      if (shift < 28) lo |= (b & 0x7f) << shift;
      else if (shift === 28) {
        lo |= (b & 0x0f) << 28;
        hi |= (b & 0x7f) >> 4;
      } else hi |= (b & 0x7f) << (shift - 32);
      if (b < 0x80) {
        return hi & 0x80000000
          ? -((~hi >>> 0) * 2 ** 32 + (~lo >>> 0) + 1)
          : (hi >>> 0) * 2 ** 32 + (lo >>> 0);
      }
    }
    throw this.error(what, "has a varint longer than 10 bytes");
  }

  /** A length-delimited field's start, checked against this message's end; moves past it. */
  private span(what: string): number {
    const length = this.varint(what);
    const start = this.pos;
    if (start + length > this.end)
      throw this.error(what, `is ${length} bytes long, past the end of its message`);
    this.pos = start + length;
    return start;
  }

  string(what: string): string {
    const start = this.span(what);
    return this.buf.toString("utf8", start, this.pos);
  }

  bytes(what: string): Buffer {
    const start = this.span(what);
    return this.buf.subarray(start, this.pos);
  }

  message(what: string): Reader {
    const start = this.span(what);
    return new Reader(this.buf, this.pos, start, what, this);
  }

  /** Skips the field whose key was just read, whatever it holds, without decoding it. */
  skip(): void {
    const wireType = this.lastTag & 7;
    const what = `field ${this.lastTag >>> 3}`;
    if (wireType === 0) this.varint(what);
    else if (wireType === 2) this.span(what);
    else if (wireType === 1 || wireType === 5) {
      const size = wireType === 1 ? 8 : 4;
      if (this.pos + size > this.end) throw this.error(what, "ends inside a fixed-size value");
      this.pos += size;
    } else throw this.error(what, `has wire type ${wireType}, which this reader does not skip`);
  }

  private error(what: string, problem: string): Error {
    let path = what;
    for (let r: Reader | undefined = this; r; r = r.parent) path = `${r.name}.${path}`;
    return new Error(`${path} (protobuf) ${problem} (byte ${this.pos} of ${this.buf.length})`);
  }
}
