/**
 * Container logs as the kubelet keeps and serves them: each container's stdout and stderr written
 * to a CRI-format log file (`<RFC3339Nano> <stream> <P|F> <content>`), and read back for
 * `GET /containerLogs/...` with the kubelet's `tailLines`, `limitBytes`, `timestamps` and
 * `sinceTime`/`sinceSeconds` semantics (tail first, then the byte limit).
 */
import { appendFileSync } from "node:fs";

/** A CRI timestamp: RFC 3339 with nine fractional digits, as the container runtime writes it. */
export function criTimestamp(at: Date): string {
  return at.toISOString().replace(/\.(\d{3})Z$/, ".$1000000Z");
}

/** Go's time.RFC3339Nano rendering (trailing fractional zeros trimmed), as `kubectl logs --timestamps` shows. */
export function goRfc3339Nano(stamp: string): string {
  return stamp.replace(/\.(\d*?)0*Z$/, (_, digits: string) => (digits ? `.${digits}Z` : "Z"));
}

/** Appends a container's output to its CRI log file, one entry per complete line. */
export class CriLogWriter {
  private readonly pending: Record<"stdout" | "stderr", string> = { stdout: "", stderr: "" };

  constructor(
    readonly file: string,
    private readonly now: () => Date = () => new Date(),
  ) {
    appendFileSync(file, "");
  }

  write(stream: "stdout" | "stderr", chunk: Buffer | string): void {
    const text = this.pending[stream] + chunk.toString();
    const lines = text.split("\n");
    this.pending[stream] = lines.pop() ?? "";
    if (lines.length === 0) return;
    const stamp = criTimestamp(this.now());
    appendFileSync(this.file, lines.map((l) => `${stamp} ${stream} F ${l}\n`).join(""));
  }

  /** Writes what is left of an unterminated last line (the kubelet shows it without a newline). */
  close(): void {
    const stamp = criTimestamp(this.now());
    for (const stream of ["stdout", "stderr"] as const) {
      if (this.pending[stream] !== "") {
        appendFileSync(this.file, `${stamp} ${stream} P ${this.pending[stream]}\n`);
        this.pending[stream] = "";
      }
    }
  }
}

export interface LogReadOptions {
  tailLines?: number;
  limitBytes?: number;
  timestamps?: boolean;
  /** Only entries at or after this time (RFC 3339). */
  sinceTime?: string;
}

interface CriEntry {
  stamp: string;
  partial: boolean;
  content: string;
}

function parseEntries(text: string): CriEntry[] {
  const entries: CriEntry[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const m = /^(\S+) (stdout|stderr) (P|F) ?(.*)$/.exec(line);
    if (m) entries.push({ stamp: m[1] ?? "", partial: m[3] === "P", content: m[4] ?? "" });
  }
  return entries;
}

/** What the kubelet answers for a container log file's `text` with `opts`. */
export function readCriLog(text: string, opts: LogReadOptions = {}): string {
  let entries = parseEntries(text);
  if (opts.sinceTime !== undefined) {
    const since = Date.parse(opts.sinceTime);
    entries = entries.filter((e) => Date.parse(e.stamp) >= since);
  }
  if (opts.tailLines !== undefined && opts.tailLines >= 0) {
    entries = opts.tailLines === 0 ? [] : entries.slice(-opts.tailLines);
  }
  const out = entries
    .map((e) => `${opts.timestamps ? `${goRfc3339Nano(e.stamp)} ` : ""}${e.content}${e.partial ? "" : "\n"}`)
    .join("");
  if (opts.limitBytes === undefined || opts.limitBytes < 0) return out;
  const bytes = Buffer.from(out, "utf8");
  return bytes.length <= opts.limitBytes ? out : bytes.subarray(0, opts.limitBytes).toString("utf8");
}

/** The kubelet's FallbackToLogsOnError message: the last 80 lines, at most 2048 bytes of them. */
export function terminationMessageFromLog(text: string): string {
  return readCriLog(text, { tailLines: 80, limitBytes: 2048 });
}

/** Parses the query of a `/containerLogs` request into read options (kubelet's PodLogOptions). */
export function logOptionsFromQuery(
  query: URLSearchParams,
  now: Date = new Date(),
): LogReadOptions & { follow: boolean } {
  const int = (name: string) => {
    const raw = query.get(name);
    if (raw === null || raw === "") return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n)) throw new Error(`${name} must be an integer, got ${JSON.stringify(raw)}`);
    return n;
  };
  const sinceSeconds = int("sinceSeconds");
  const sinceTime =
    query.get("sinceTime") ??
    (sinceSeconds !== undefined ? new Date(now.getTime() - sinceSeconds * 1000).toISOString() : undefined);
  return {
    follow: query.get("follow") === "true",
    timestamps: query.get("timestamps") === "true",
    ...(int("tailLines") !== undefined ? { tailLines: int("tailLines") } : {}),
    ...(int("limitBytes") !== undefined ? { limitBytes: int("limitBytes") } : {}),
    ...(sinceTime !== undefined ? { sinceTime } : {}),
  };
}
