/**
 * Test-side helpers for the fake CLIs: the env entries that script them (put them on a Station
 * template's `agent` container; the controller keeps Station env below its own, docs/decisions.md D-21) and a
 * journal file they append one JSON line per invocation to.
 */
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
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
  /** Local path (outside /agent and /workspace), world-writable: the agent runs as uid 1000. */
  path: string;
  /** What FAKE_CLI_JOURNAL is set to: `path`, or the URL of the journal's listener. */
  target: string;
  entries(): FakeCliInvocation[];
  remove(): Promise<void>;
}

/**
 * A fresh journal file in its own tmp dir. With `host`, the fakes reach it over http on that
 * address (a run pod on the real node cannot see the file): a listener appends what they post.
 */
export async function createFakeCliJournal(host?: string): Promise<FakeCliJournal> {
  const dir = mkdtempSync(join(tmpdir(), "fake-cli-journal-"));
  chmodSync(dir, 0o755);
  const path = join(dir, "journal.ndjson");
  writeFileSync(path, "");
  chmodSync(path, 0o666);
  const listener = host === undefined ? undefined : await serveDir(dir, host);
  return {
    path,
    target: listener ? `${listener.url}/journal.ndjson` : path,
    entries: () =>
      existsSync(path)
        ? readFileSync(path, "utf8")
            .split("\n")
            .filter((l) => l.trim() !== "")
            .map((l) => JSON.parse(l) as FakeCliInvocation)
        : [],
    remove: async () => {
      await listener?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A directory's files over http for the fakes in run pods: `POST /<name>` appends the body to the
 * file, `GET /<name>` answers 200 when it exists (a gate is open), else 404. Names are one plain
 * path segment; anything else is refused.
 */
async function serveDir(dir: string, host: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const name = decodeURIComponent((req.url ?? "/").slice(1));
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
      res.writeHead(400).end();
      return;
    }
    const file = join(dir, name);
    if (req.method === "GET") {
      res.writeHead(existsSync(file) ? 200 : 404).end();
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      appendFileSync(file, Buffer.concat(chunks));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Container env entries that script the fake CLI (and name its journal). */
export function fakeCliEnv(
  script: FakeCliScript,
  journal?: FakeCliJournal,
): { name: string; value: string }[] {
  return [
    { name: "FAKE_CLI_SCRIPT", value: JSON.stringify(script) },
    ...(journal ? [{ name: "FAKE_CLI_JOURNAL", value: journal.target }] : []),
  ];
}

/** Gates for `FakeCliScript.gates`; `open(name)` lets a run held by `[gate <name>]` go on. */
export interface FakeCliGates {
  /** Local path (outside /agent and /workspace), readable by the agent's uid. */
  dir: string;
  /** What `FakeCliScript.gates` is set to: `dir`, or the URL of its listener. */
  target: string;
  open(name: string): void;
  remove(): Promise<void>;
}

/** With `host`, the fakes poll the gates over http on that address (see createFakeCliJournal). */
export async function createFakeCliGates(host?: string): Promise<FakeCliGates> {
  const dir = mkdtempSync(join(tmpdir(), "fake-cli-gates-"));
  chmodSync(dir, 0o755);
  const listener = host === undefined ? undefined : await serveDir(dir, host);
  return {
    dir,
    target: listener?.url ?? dir,
    open: (name) => writeFileSync(join(dir, name), ""),
    remove: async () => {
      await listener?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
