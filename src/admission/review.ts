/**
 * AdmissionReview (admission.k8s.io/v1) in and out: which requests deserve checks, and the
 * response, which always allows. Pure.
 */
import type { ReviewUser } from "./access.js";
import type { AdmittedKind } from "./warnings.js";

export const ADMISSION_GROUP_VERSION = "admission.k8s.io/v1";
const AGENTS_GROUP = "agents.re-cinq.com";

/** The fields of AdmissionRequest the webhook reads. */
export interface AdmissionRequest {
  uid: string;
  kind?: { group?: string; version?: string; kind?: string };
  operation?: string;
  namespace?: string;
  object?: unknown;
  oldObject?: unknown;
  /** Who wrote the object, as the API server authenticated them (forgeable by a direct caller). */
  userInfo?: ReviewUser;
}

export interface AdmissionReview {
  apiVersion: string;
  kind: "AdmissionReview";
  request?: AdmissionRequest;
  response?: { uid: string; allowed: boolean; warnings?: string[] };
}

export class ReviewError extends Error {}

/** Reads an AdmissionReview body; throws ReviewError naming what is wrong. */
export function parseReview(body: unknown): AdmissionRequest {
  if (body === null || typeof body !== "object") throw new ReviewError("body is not a JSON object");
  const review = body as Partial<AdmissionReview>;
  if (review.apiVersion !== ADMISSION_GROUP_VERSION || review.kind !== "AdmissionReview") {
    throw new ReviewError(
      `expected apiVersion ${ADMISSION_GROUP_VERSION} kind AdmissionReview, got ${String(review.apiVersion)} ${String(review.kind)}`,
    );
  }
  const req = review.request;
  if (!req || typeof req.uid !== "string" || req.uid === "") throw new ReviewError("request.uid is missing");
  return req;
}

const ADMITTED: readonly AdmittedKind[] = ["Agent", "Station", "AgentDefinition"];

const specOf = (obj: unknown): unknown =>
  obj !== null && typeof obj === "object" ? (obj as { spec?: unknown }).spec : undefined;

function deletionRequested(obj: unknown): boolean {
  const meta =
    obj !== null && typeof obj === "object"
      ? (obj as { metadata?: { deletionTimestamp?: unknown } }).metadata
      : undefined;
  return meta?.deletionTimestamp !== undefined && meta.deletionTimestamp !== null;
}

/**
 * The kind to check, or undefined when the request needs no warnings: another namespace (this
 * controller does not serve it), an operation other than CREATE/UPDATE, an object being deleted,
 * or an UPDATE that leaves the spec as it was (finalizer and label writes, the controller's own
 * included, are not worth a lookup).
 */
export function kindToCheck(req: AdmissionRequest, servedNamespace: string): AdmittedKind | undefined {
  if (req.kind?.group !== AGENTS_GROUP) return undefined;
  const kind = ADMITTED.find((k) => k === req.kind?.kind);
  if (!kind) return undefined;
  if (req.namespace !== servedNamespace) return undefined;
  if (req.operation !== "CREATE" && req.operation !== "UPDATE") return undefined;
  if (req.object === null || typeof req.object !== "object" || deletionRequested(req.object))
    return undefined;
  if (
    req.operation === "UPDATE" &&
    JSON.stringify(specOf(req.object)) === JSON.stringify(specOf(req.oldObject))
  ) {
    return undefined;
  }
  return kind;
}

/** The API server truncates longer warnings; we cut them ourselves so the end is visible as "…". */
export const MAX_WARNING_CHARS = 256;
/** More warnings than this are summarised in one line. */
export const MAX_WARNINGS = 20;

/**
 * Line breaks and tabs become spaces; every other control character (C0, DEL, C1) and every
 * bidirectional formatting character (which can make a terminal show a name reversed or hide
 * part of it) is shown as its \uXXXX escape, so a name taken from the object reads as written.
 */
export function printable(text: string): string {
  const spaced = text.replace(/[\t\n\r\u2028\u2029]+/g, " ");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is escaped
  const unseen = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  return spaced.replace(unseen, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** One printable line per warning, at most MAX_WARNING_CHARS, duplicates dropped. */
export function cleanWarnings(warnings: readonly string[]): string[] {
  const lines = [
    ...new Set(
      warnings.map((w) => {
        const flat = printable(w).trim();
        return flat.length > MAX_WARNING_CHARS ? `${flat.slice(0, MAX_WARNING_CHARS - 1)}…` : flat;
      }),
    ),
  ].filter((w) => w !== "");
  if (lines.length <= MAX_WARNINGS) return lines;
  return [...lines.slice(0, MAX_WARNINGS - 1), `and ${lines.length - MAX_WARNINGS + 1} more warnings`];
}

/** The answer: always allowed, with the warnings when there are any. */
export function allowedReview(uid: string, warnings: readonly string[]): AdmissionReview {
  const cleaned = cleanWarnings(warnings);
  return {
    apiVersion: ADMISSION_GROUP_VERSION,
    kind: "AdmissionReview",
    response: { uid, allowed: true, ...(cleaned.length > 0 ? { warnings: cleaned } : {}) },
  };
}
