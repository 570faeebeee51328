/**
 * Test support for the run-pod programs (supervisor): tiny executable fixtures written at test
 * time, a recording HTTP listener on 127.0.0.1 standing in for sinks and the conversation store,
 * and captured stdout/stderr/signals in place of the real process.
 */
import { EventEmitter } from "node:events";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SupervisorIo } from "../../src/run-pod/supervisor/io.js";

/** A scratch tree: `bin` (put on PATH), `home` ($HOME), `workspace` (WORKSPACE_DIR). */
export interface RunPodDirs {
  root: string;
  bin: string;
  home: string;
  workspace: string;
  remove(): Promise<void>;
}

export async function runPodDirs(): Promise<RunPodDirs> {
  const root = await mkdtemp(join(tmpdir(), "run-pod-"));
  const dirs = { root, bin: join(root, "bin"), home: join(root, "home"), workspace: join(root, "workspace") };
  await Promise.all([mkdir(dirs.bin), mkdir(dirs.home), mkdir(dirs.workspace)]);
  return { ...dirs, remove: () => rm(root, { recursive: true, force: true }) };
}

/** Writes an executable script (`#!/bin/sh` unless the body has its own `#!`). */
export async function writeScript(dir: string, name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, body.startsWith("#!") ? body : `#!/bin/sh\n${body}`);
  await chmod(path, 0o755);
  return path;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** An HTTP listener on 127.0.0.1 that records every request and answers with `status`. */
export class RecordingListener {
  readonly requests: RecordedRequest[] = [];
  status = 200;
  private constructor(private readonly server: Server) {}

  static async start(): Promise<RecordingListener> {
    const server = createServer();
    const listener = new RecordingListener(server);
    server.on("request", (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        listener.requests.push({
          method: req.method ?? "",
          path: req.url ?? "",
          headers: req.headers,
          body: Buffer.concat(chunks),
        });
        res.statusCode = listener.status;
        res.end("ok");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return listener;
  }

  url(path = "/"): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  /** JSON bodies of the requests to `path`, in arrival order. */
  jsonBodies(path: string): unknown[] {
    return this.requests.filter((r) => r.path === path).map((r) => JSON.parse(r.body.toString("utf8")));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A SupervisorIo that records stdout and stderr lines and lets a test raise signals. */
export interface CapturedIo {
  io: SupervisorIo;
  stdout: string[];
  stderr: string[];
  signals: EventEmitter;
  /** Called after each stdout line is recorded (e.g. to raise a signal once the agent is up). */
  onStdout?: (line: string) => void;
}

export function capturedIo(): CapturedIo {
  const signals = new EventEmitter();
  const captured: CapturedIo = {
    stdout: [],
    stderr: [],
    signals,
    io: {
      stdout: (line) => {
        captured.stdout.push(line);
        captured.onStdout?.(line);
      },
      stderr: (line) => captured.stderr.push(line),
      signals: {
        on: (signal, listener) => signals.on(signal, listener),
        off: (signal, listener) => signals.off(signal, listener),
      },
    },
  };
  return captured;
}

/** stdout lines parsed as JSON where they are JSON (the lifecycle and file events), else kept. */
export function parsedLines(lines: readonly string[]): unknown[] {
  return lines.map((l) => {
    try {
      return JSON.parse(l);
    } catch {
      return l;
    }
  });
}
