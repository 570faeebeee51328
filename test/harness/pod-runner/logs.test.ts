import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  CriLogWriter,
  goRfc3339Nano,
  logOptionsFromQuery,
  readCriLog,
  terminationMessageFromLog,
} from "./logs.js";

const dir = mkdtempSync(join(tmpdir(), "pod-runner-logs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const log = [
  "2026-01-01T00:00:01.000000000Z stdout F one",
  "2026-01-01T00:00:02.500000000Z stderr F two",
  "2026-01-01T00:00:03.000000000Z stdout P thr",
  "2026-01-01T00:00:03.000000000Z stdout F ee",
  "",
].join("\n");

describe("readCriLog (kubelet's ReadLogs)", () => {
  it.each([
    [{}, "one\ntwo\nthree\n"],
    [{ tailLines: 1 }, "ee\n"],
    [{ tailLines: 0 }, ""],
    [{ limitBytes: 5 }, "one\nt"],
    [{ tailLines: 3, limitBytes: 5 }, "two\nt"],
    // A partial entry prints without its newline, as the kubelet does.
    [
      { timestamps: true, tailLines: 3 },
      "2026-01-01T00:00:02.5Z two\n2026-01-01T00:00:03Z thr2026-01-01T00:00:03Z ee\n",
    ],
    [{ sinceTime: "2026-01-01T00:00:02Z" }, "two\nthree\n"],
  ])("%j", (opts, expected) => {
    expect(readCriLog(log, opts)).toBe(expected);
  });

  it("takes the termination message from the last 80 lines, at most 2048 bytes", () => {
    const lines = Array.from({ length: 100 }, (_, i) => `2026-01-01T00:00:00.000000000Z stdout F line ${i}`);
    expect(terminationMessageFromLog(`${lines.join("\n")}\n`).split("\n")[0]).toBe("line 20");
    const long = Array.from(
      { length: 10 },
      () => `2026-01-01T00:00:00.000000000Z stdout F ${"x".repeat(500)}`,
    );
    expect(Buffer.byteLength(terminationMessageFromLog(long.join("\n")))).toBe(2048);
  });
});

describe("CriLogWriter", () => {
  it("writes one entry per complete line per stream and the unterminated rest as partial", () => {
    const file = join(dir, "c.log");
    const w = new CriLogWriter(file, () => new Date("2026-01-01T00:00:00.123Z"));
    w.write("stdout", "a\nb");
    w.write("stderr", "err\n");
    w.write("stdout", "c\nd");
    w.close();
    expect(readFileSync(file, "utf8")).toBe(
      [
        "2026-01-01T00:00:00.123000000Z stdout F a",
        "2026-01-01T00:00:00.123000000Z stderr F err",
        "2026-01-01T00:00:00.123000000Z stdout F bc",
        "2026-01-01T00:00:00.123000000Z stdout P d",
        "",
      ].join("\n"),
    );
  });
});

describe("log request options", () => {
  it("parses the kubelet's query parameters and rejects a bad integer naming it", () => {
    expect(
      logOptionsFromQuery(new URLSearchParams("follow=true&tailLines=5&limitBytes=10&timestamps=true")),
    ).toEqual({
      follow: true,
      timestamps: true,
      tailLines: 5,
      limitBytes: 10,
    });
    expect(() => logOptionsFromQuery(new URLSearchParams("tailLines=x"))).toThrow(/tailLines/);
    expect(goRfc3339Nano("2026-01-01T00:00:00.120000000Z")).toBe("2026-01-01T00:00:00.12Z");
  });
});
