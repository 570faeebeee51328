/**
 * `npm run bench -- --cli-startup [--runs N] [--vendors claude,codex,gemini,opencode]`: what a run
 * pays before its model's first request, per real CLI (docs/agent-clis.md "Start-up cost"), with
 * the built run-pod programs (dist/agent) as processes on this machine, no control plane:
 *
 * - **init**: `ai-agent-init` with the run env of a plain CLI run (copies the supervisor, stages
 *   skills), spawn → exit;
 * - **supervisor → CLI ready**: `ai-agent-supervisor` spawn → its log line saying the CLI is on
 *   PATH (preinstalled: found, version read) or installed (the CLI installed with npm from the warm
 *   local npm cache, `npm_config_offline=true`: no network, so the figure is the install itself);
 * - **CLI setup and spawn**: → the `agent/started` event (the vendor's config written, CLI spawned);
 * - **CLI start → first model request**: → the local model server's journal time of the first
 *   model call.
 *
 * Each vendor runs against its local model server (test/fakes/models) with a text answer. The
 * pod's HOME and workspace are fresh temp dirs per run; runs as the invoking user (root here: the
 * CLI cache lives under /root). Prints a table and writes bench/results/<time>-cli-startup.json.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AGENT_CLIS, CLI_VENDORS, type CliVendor } from "../src/core/cli/agent-clis.js";
import { cliArgv } from "../src/core/cli/argv.js";
import { startAnthropicMessages } from "../test/fakes/models/anthropic-messages.js";
import type { ModelServer } from "../test/fakes/models/base.js";
import { startGeminiServer } from "../test/fakes/models/gemini-generate.js";
import { startOpenAiResponsesServer } from "../test/fakes/models/openai-responses.js";
import { ensureAgentClis, ensureNpmCache, giveNpmCacheToAgentUser } from "../test/harness/agent-clis.js";
import { load, log, pct, printRows, ROOT, writeResult } from "./lib.js";

const DIST = join(ROOT, "dist/agent");
const INIT = join(DIST, "ai-agent-init");
const SUPERVISOR = join(DIST, "ai-agent-supervisor");

interface VendorSetup {
  model: string;
  start(): Promise<ModelServer>;
  /** The agent container's env for this vendor: key and base URL (what the Job builder would give). */
  env(server: ModelServer): Record<string, string>;
}

const VENDORS: Record<CliVendor, VendorSetup> = {
  claude: {
    model: "claude-sonnet-4-6",
    start: startAnthropicMessages,
    env: (s) => ({ ANTHROPIC_API_KEY: "sk-ant-bench", ANTHROPIC_BASE_URL: s.origin }),
  },
  codex: {
    model: "gpt-5-codex",
    start: () => startOpenAiResponsesServer(),
    env: (s) => ({ OPENAI_API_KEY: "sk-proj-bench", OPENAI_BASE_URL: `${s.origin}/v1` }),
  },
  gemini: {
    model: "gemini-2.5-pro",
    start: startGeminiServer,
    env: (s) => ({ GEMINI_API_KEY: "AIza-bench", GOOGLE_GEMINI_BASE_URL: s.origin }),
  },
  opencode: {
    model: "opencode/anthropic/claude-sonnet-4-6",
    start: startAnthropicMessages,
    env: (s) => ({ ANTHROPIC_API_KEY: "sk-ant-bench", ANTHROPIC_BASE_URL: s.origin }),
  },
};

type Mode = "preinstalled" | "npm-offline";

interface Sample {
  vendor: CliVendor;
  mode: Mode;
  initMs: number;
  /** Supervisor spawn → the CLI found or installed. */
  cliReadyMs: number;
  /** → agent/started (setup written, CLI spawned). */
  setupMs: number;
  /** → the model server's first model call. */
  firstRequestMs: number;
  /** Supervisor spawn → first model request. */
  totalMs: number;
  /** Other requests the CLI sent the model server before its first model call (probes, model lists). */
  requestsBefore: string[];
}

function runDir(root: string, name: string) {
  const home = join(root, name, "home");
  const workspace = join(root, name, "workspace");
  mkdirSync(home, { recursive: true });
  mkdirSync(workspace, { recursive: true });
  return { home, workspace };
}

/** Runs the init as a run pod's would, for a run of `model`; resolves with its duration. */
function timeInit(dir: { home: string; workspace: string }, model: string): Promise<number> {
  const started = performance.now();
  const child = spawn(INIT, [], {
    stdio: ["ignore", "ignore", "pipe"],
    env: {
      HOME: dir.home,
      WORKSPACE_DIR: dir.workspace,
      PATH: "/usr/bin:/bin",
      AGENT_MODEL: model,
      AGENT_SINKS: "[]",
      AGENT_REPOS: "[]",
      AGENT_SKILLS: "[]",
      AGENT_DEADLINE_MS: "240000",
    },
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve, reject) =>
    child.on("close", (code) =>
      code === 0 ? resolve(performance.now() - started) : reject(new Error(`init exited ${code}: ${stderr}`)),
    ),
  );
}

/** One supervised run until the model's first request; the CLI is then stopped. */
async function timeSupervisor(
  vendor: CliVendor,
  mode: Mode,
  dir: { home: string; workspace: string },
  server: ModelServer,
  pathDirs: string[],
  npmCache: string,
): Promise<Omit<Sample, "initMs" | "vendor" | "mode">> {
  const v = VENDORS[vendor];
  const prompt = "Say hello.";
  // The default permission mode: claude refuses bypass as root, and it does not change the start-up.
  const argv = cliArgv({ model: v.model, prompt } as never, v.model, prompt);
  const before = server.modelCalls().length;
  const journalBefore = server.journal().length;
  const startedWall = Date.now();
  const started = performance.now();
  let cliReady: number | undefined;
  let cliStarted: number | undefined;
  const child: ChildProcess = spawn(SUPERVISOR, ["--", ...argv], {
    cwd: dir.workspace,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      HOME: dir.home,
      WORKSPACE_DIR: dir.workspace,
      PATH: [...pathDirs, "/usr/bin", "/bin"].join(":"),
      AGENT_MODEL: v.model,
      AGENT_EXECUTION: "interactive",
      AGENT_SINKS: "[]",
      AGENT_DEADLINE_MS: "240000",
      AGENT_CLI_VERSION: AGENT_CLIS[vendor].version,
      ...(mode === "npm-offline" ? { npm_config_cache: npmCache, npm_config_offline: "true" } : {}),
      ...v.env(server),
    },
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    const text = d.toString();
    stderr += text;
    if (cliReady === undefined && /"msg":"[a-z]+: [^"]*(is on PATH|installed )/.test(text))
      cliReady = performance.now();
  });
  child.stdout?.on("data", (d: Buffer) => {
    if (cliStarted === undefined && d.toString().includes('"phase":"agent","status":"started"'))
      cliStarted = performance.now();
  });
  const exited = new Promise<void>((r) => child.on("close", () => r()));
  const deadline = Date.now() + 300_000;
  while (server.modelCalls().length === before) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await exited;
      throw new Error(`${vendor} (${mode}): no model request; supervisor stderr:\n${stderr.slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const first = server.modelCalls()[before];
  try {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGTERM");
  } catch {
    // Already gone.
  }
  await exited;
  const firstMs = (first?.at ?? Date.now()) - startedWall;
  const ready = (cliReady ?? started) - started;
  const spawned = (cliStarted ?? started) - started;
  const requestsBefore = server
    .journal()
    .slice(journalBefore)
    .filter((e) => e.step === undefined && e.at <= (first?.at ?? Number.POSITIVE_INFINITY))
    .map((e) => `${e.method} ${e.path} +${e.at - startedWall} ms`);
  return {
    cliReadyMs: ready,
    setupMs: spawned - ready,
    firstRequestMs: firstMs - spawned,
    totalMs: firstMs,
    requestsBefore,
  };
}

function parseVendors(argv: string[]): CliVendor[] {
  const i = argv.indexOf("--vendors");
  if (i < 0) return CLI_VENDORS;
  const list = (argv[i + 1] ?? "").split(",").filter((x) => x !== "");
  for (const v of list)
    if (!(CLI_VENDORS as string[]).includes(v))
      throw new Error(`--vendors: unknown vendor "${v}" (${CLI_VENDORS.join(", ")})`);
  return list as CliVendor[];
}

function parseRuns(argv: string[]): number {
  const i = argv.indexOf("--runs");
  if (i < 0) return 3;
  const n = Number(argv[i + 1]);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--runs must be a positive integer, got: "${argv[i + 1]}"`);
  return n;
}

export async function cliStartup(argv: string[]): Promise<void> {
  if (!existsSync(INIT) || !existsSync(SUPERVISOR))
    throw new Error("dist/agent is missing: run `npm run build:agent`");
  const vendors = parseVendors(argv);
  const runs = parseRuns(argv);
  const at = new Date().toISOString();
  const cache = await ensureAgentClis({ log: (m) => log(`agent CLIs: ${m}`) });
  const npmCache = await ensureNpmCache(vendors, { log: (m) => log(`npm cache: ${m}`) });
  const root = mkdtempSync(join(tmpdir(), "bench-cli-startup-"));
  const samples: Sample[] = [];
  const loadStart = load();
  log(`CLI start-up: ${vendors.join(", ")}, ${runs} runs per mode; load ${loadStart.join(" ")}`);
  try {
    for (const vendor of vendors) {
      const server = await VENDORS[vendor].start();
      try {
        for (const mode of ["preinstalled", "npm-offline"] as const) {
          for (let i = 0; i < runs; i++) {
            const dir = runDir(root, `${vendor}-${mode}-${i}`);
            const initMs = await timeInit(dir, VENDORS[vendor].model);
            // The image's PATH: the preinstalled CLI (cache bin dir), or only Node and npm.
            const pathDirs =
              mode === "preinstalled"
                ? [join(dir.home, ".local/bin"), cache.binDir]
                : [join(dir.home, ".local/bin")];
            const s = await timeSupervisor(vendor, mode, dir, server, pathDirs, npmCache);
            samples.push({ vendor, mode, initMs, ...s });
            log(
              `${vendor} ${mode} #${i + 1}: init ${initMs.toFixed(0)} ms, CLI ready ${s.cliReadyMs.toFixed(0)} ms, setup ${s.setupMs.toFixed(0)} ms, first request after ${s.firstRequestMs.toFixed(0)} ms (total ${s.totalMs.toFixed(0)} ms)`,
            );
            rmSync(join(root, `${vendor}-${mode}-${i}`), { recursive: true, force: true });
          }
        }
      } finally {
        await server.close();
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
    // The benchmark's npm (as root) may have added entries; the run pods' npm (uid 1000) must write them.
    await giveNpmCacheToAgentUser(npmCache);
  }
  const med = (xs: number[]) => `${pct(xs, 50).toFixed(0)} ms`;
  for (const vendor of vendors) {
    const rows: [string, string, string?][] = [];
    for (const key of ["initMs", "cliReadyMs", "setupMs", "firstRequestMs", "totalMs"] as const) {
      const of = (mode: Mode) =>
        samples.filter((s) => s.vendor === vendor && s.mode === mode).map((s) => s[key]);
      rows.push([key, med(of("preinstalled")), med(of("npm-offline"))]);
    }
    printRows(
      `${vendor} ${AGENT_CLIS[vendor].version} (median of ${runs}): preinstalled | npm-offline`,
      rows,
    );
  }
  const file = writeResult(`${at.replace(/[:.]/g, "-")}-cli-startup.json`, {
    at,
    load: { start: loadStart, end: load() },
    runs,
    samples,
  });
  log(`wrote ${file}`);
}
