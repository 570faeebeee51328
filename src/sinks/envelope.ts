/**
 * The `{"source", "event"}` envelope every sink delivery is wrapped in (docs/events.md#envelope).
 *
 * Only sink deliveries are wrapped; status.output keeps bare lines. Batch runs have no pod, so
 * the source the reconcile core puts in its emitSinkEvents action never carries `pod`.
 */

/** Identity of the run an event belongs to. Key order is the wire order. */
export interface EventSource {
  agent?: string;
  station?: string;
  task?: string;
  pod?: string;
  namespace?: string;
}

export interface Envelope {
  source: EventSource;
  event: unknown;
}

const SOURCE_KEYS = ["agent", "station", "task", "pod", "namespace"] as const;

/** Drops empty identity fields and fixes the key order agent, station, task, pod, namespace. */
export function normalizeSource(source: EventSource): EventSource {
  const out: EventSource = {};
  for (const key of SOURCE_KEYS) {
    const value = source[key];
    if (value !== undefined && value !== "") out[key] = value;
  }
  return out;
}

/** `event` is the line parsed as JSON; a line that is not valid JSON is carried as a JSON string. */
export function parseLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return line;
  }
}

/** True for a value that already is an envelope (an object with both `source` and `event`). */
export function isEnvelope(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.hasOwn(value, "source") &&
    Object.hasOwn(value, "event")
  );
}

/**
 * Wraps one event. Returns undefined for an event that already is an envelope: such a line is
 * neither wrapped again nor delivered (docs/events.md#envelope, docs/decisions.md D-36); the caller logs it.
 */
export function wrap(source: EventSource, event: unknown): Envelope | undefined {
  if (isEnvelope(event)) return undefined;
  return { source: normalizeSource(source), event };
}

/** Compact JSON, the body of an http POST and (plus "\n") a file sink line. */
export function serializeEnvelope(envelope: Envelope): string {
  return JSON.stringify(envelope);
}
