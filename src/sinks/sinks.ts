/**
 * Which sinks a batch run's events go to (docs/events.md#sinks), resolved from the definition.
 *
 * Pure. `stdout` needs nothing from the controller: every emitter writes bare lines to its own
 * stdout, and for batch runs that record is status.output, written directly. So only `http` and
 * `file` sinks are delivered by the controller.
 */
import type { Sink } from "../core/types.js";

export type ResolvedSink =
  | { type: "http"; url: string; headersSecret?: string }
  | { type: "file"; path: string };

export interface SinkResolution {
  sinks: ResolvedSink[];
  /** Entries that cannot be delivered, with why; the caller logs them. */
  skipped: string[];
}

/** The deliverable entries of `output.sinks`, in declaration order. */
export function resolveSinks(declared: readonly Sink[] | undefined): SinkResolution {
  const sinks: ResolvedSink[] = [];
  const skipped: string[] = [];
  const entries: unknown[] = Array.isArray(declared) ? declared : [];
  entries.forEach((raw, i) => {
    const entry = (typeof raw === "object" && raw !== null ? raw : {}) as Partial<Sink>;
    switch (entry.type) {
      case "stdout":
        return;
      case "http":
        if (typeof entry.url !== "string" || entry.url === "") {
          skipped.push(`output.sinks[${i}]: http sink has no url`);
          return;
        }
        sinks.push(
          entry.headers_secret
            ? { type: "http", url: entry.url, headersSecret: entry.headers_secret }
            : { type: "http", url: entry.url },
        );
        return;
      case "file":
        if (typeof entry.path !== "string" || entry.path === "") {
          skipped.push(`output.sinks[${i}]: file sink has no path`);
          return;
        }
        sinks.push({ type: "file", path: entry.path });
        return;
      default:
        skipped.push(`output.sinks[${i}]: unknown sink type ${JSON.stringify(entry.type ?? null)}`);
    }
  });
  return { sinks, skipped };
}

/** Identity of a sink for per-sink ordering. */
export function sinkKey(sink: ResolvedSink): string {
  return sink.type === "http" ? `http ${sink.url} ${sink.headersSecret ?? ""}` : `file ${sink.path}`;
}
