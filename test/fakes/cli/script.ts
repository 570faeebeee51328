/**
 * Test-side helpers for the fake CLIs: the env entries that script them (put them on a Station
 * template's `agent` container; the controller keeps Station env below its own, docs/decisions.md D-21) and a
 * journal file they append one JSON line per invocation to.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CliName, FakeCliScript } from "./fake-cli.js";

export type { CliName, FakeCliScript } from "./fake-cli.js";

/** One invocation of a fake CLI, as journalled. */
export interface FakeCliInvocation {
  cli: CliName;
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  uid?: number;
  time: string;
}

export interface FakeCliJournal {
  /** Host path (outside /agent and /workspace), world-writable: the agent runs as uid 1000. */
  path: string;
  entries(): FakeCliInvocation[];
  remove(): void;
}

/** A fresh journal file in its own tmp dir. */
export function createFakeCliJournal(): FakeCliJournal {
  const dir = mkdtempSync(join(tmpdir(), "fake-cli-journal-"));
  chmodSync(dir, 0o755);
  const path = join(dir, "journal.ndjson");
  writeFileSync(path, "");
  chmodSync(path, 0o666);
  return {
    path,
    entries: () =>
      existsSync(path)
        ? readFileSync(path, "utf8")
            .split("\n")
            .filter((l) => l.trim() !== "")
            .map((l) => JSON.parse(l) as FakeCliInvocation)
        : [],
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Container env entries that script the fake CLI (and name its journal). */
export function fakeCliEnv(
  script: FakeCliScript,
  journal?: FakeCliJournal,
): { name: string; value: string }[] {
  return [
    { name: "FAKE_CLI_SCRIPT", value: JSON.stringify(script) },
    ...(journal ? [{ name: "FAKE_CLI_JOURNAL", value: journal.path }] : []),
  ];
}

/** A host directory of gates for `FakeCliScript.gates`; `open(name)` lets a run held by `[gate <name>]` go on. */
export interface FakeCliGates {
  /** Host path (outside /agent and /workspace), readable by the agent's uid. */
  dir: string;
  open(name: string): void;
  remove(): void;
}

export function createFakeCliGates(): FakeCliGates {
  const dir = mkdtempSync(join(tmpdir(), "fake-cli-gates-"));
  chmodSync(dir, 0o755);
  return {
    dir,
    open: (name) => writeFileSync(join(dir, name), ""),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
