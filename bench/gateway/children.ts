/**
 * The bench's child processes (docs/gateway.md#benchmark): bundled by esbuild into plain ESM so
 * each runs under `node --enable-source-maps` as the gateway's Deployment runs it (no loader
 * thread of tsx in its RSS), spoken to over IPC (child-ipc.ts), its RSS read from /proc.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { ROOT } from "../lib.js";

const OUT = join(ROOT, ".cache/bench-gateway");
export const CHILD_ENTRIES = ["fake-provider-child", "passthrough-child", "gateway-child"] as const;
export type ChildEntry = (typeof CHILD_ENTRIES)[number];

/** Bundles the three entry points (packages stay external, resolved from node_modules). */
export async function bundleChildren(): Promise<void> {
  await build({
    entryPoints: CHILD_ENTRIES.map((e) => join(ROOT, "bench/gateway", `${e}.ts`)),
    outdir: OUT,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    sourcemap: true,
    logLevel: "warning",
  });
}

export class Child {
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private exited = false;

  private constructor(
    readonly name: ChildEntry,
    readonly process: ChildProcess,
    readonly ready: Record<string, unknown>,
  ) {
    process.on("message", (m: { id: number; value?: unknown; error?: string }) => {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error !== undefined) w?.reject(new Error(`${name}: ${m.error}`));
      else w?.resolve(m.value);
    });
    process.once("exit", (code) => {
      this.exited = true;
      for (const w of this.waiting.values()) w.reject(new Error(`${name} exited (${code})`));
    });
  }

  /** Starts a bundled child; its stderr goes to `logFile`. Resolves once it says ready. */
  static async start(name: ChildEntry, env: Record<string, string>, logFile: string): Promise<Child> {
    const fd = openSync(logFile, "a");
    const proc = spawn(process.execPath, ["--enable-source-maps", join(OUT, `${name}.mjs`)], {
      stdio: ["ignore", "inherit", fd, "ipc"],
      serialization: "advanced",
      env: { PATH: process.env.PATH ?? "", ...env },
    });
    closeSync(fd);
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} not ready in 30 s (see ${logFile})`)), 30_000);
      proc.once("message", (m: { ready?: Record<string, unknown> }) => {
        clearTimeout(timer);
        if (m.ready) resolve(m.ready);
        else reject(new Error(`${name}: unexpected first message`));
      });
      proc.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited with ${code} before it was ready (see ${logFile})`));
      });
    });
    return new Child(name, proc, ready);
  }

  ask<T>(what: string): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.process.send({ id, ask: what });
    });
  }

  /** The child's resident set now, from /proc (the child does nothing to answer). */
  rssBytes(): number {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.process.pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise((resolve) => this.process.once("exit", resolve));
    this.process.kill("SIGTERM");
    const timer = setTimeout(() => this.process.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

/** Samples a child's RSS every `everyMs` until stopped; the peak of the samples. */
export function sampleRss(child: Child, everyMs = 100): { stop(): number } {
  let peak = child.rssBytes();
  const timer = setInterval(() => {
    const rss = child.rssBytes();
    if (rss > peak) peak = rss;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, child.rssBytes());
    },
  };
}
