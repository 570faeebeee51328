import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CRI_LINE_PART_BYTES, writeCriLogFile } from "./cri-log-file.js";

const dir = await mkdtemp(join(tmpdir(), "cri-log-file-"));
afterAll(() => rm(dir, { recursive: true, force: true }));
const AT = new Date("2026-01-01T00:00:00.123Z");
const STAMP = "2026-01-01T00:00:00.123000000Z";

describe("writeCriLogFile", () => {
  it("writes one full entry per line, and a line longer than a part as partial entries ending with a full one", async () => {
    const file = join(dir, "a.log");
    const long = "x".repeat(CRI_LINE_PART_BYTES * 2 + 5);
    const served = await writeCriLogFile(file, ["first", long, ""], AT);
    expect(served).toBe(6 + long.length + 1 + 1);
    expect((await readFile(file, "utf8")).split("\n")).toEqual([
      `${STAMP} stdout F first`,
      `${STAMP} stdout P ${"x".repeat(CRI_LINE_PART_BYTES)}`,
      `${STAMP} stdout P ${"x".repeat(CRI_LINE_PART_BYTES)}`,
      `${STAMP} stdout F xxxxx`,
      `${STAMP} stdout F `,
      "",
    ]);
  });
});
