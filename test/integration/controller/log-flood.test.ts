/**
 * The controller inside its 512 MiB limit against ten hostile 64 MiB logs finishing at once
 * (docs/controller.md#hostile-logs-inside-512-mib): the real controller process, started as the
 * Deployment starts it (`--enable-source-maps`, NODE_OPTIONS `--max-semi-space-size=4`; from the
 * TypeScript entry through tsx, which holds more memory than the compiled one), in a memory cgroup
 * of its own limited to 512 MiB as a container is, and the leader through its Lease. Ten
 * interactive Agents run on the kwok plane; each run pod's agent log is 64 MiB of one of three
 * hostile kinds, served by the real `pods/log` API from a CRI log file the test wrote (a log this
 * large cannot pass through a pod script's ConfigMap). While the controller reads them:
 * - it never exits and the kernel's OOM killer never kills it (the cgroup's oom_kill stays 0);
 * - its Lease stays held by it, its renewTime keeps advancing, and it never steps down (its log);
 * - `/healthz` answers 200 every time it is asked (polled every 250 ms);
 * - every Agent ends terminal with its bill bounded, each kind for its own documented reason
 *   (docs/cost-and-budgets.md#a-bill-within-bounds): `costSource: bounded` and the costNote.
 * How long the event loop was held is measured inside the controller (test/support/loop-delay-probe.ts)
 * and printed, not asserted: wall time on a loaded machine belongs to a benchmark.
 * Where no cgroup can be made (not root, no memory controller), the heap limit
 * `--max-old-space-size=512` is the bound instead and the test says so on stderr.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { openSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MSG_USAGE_UNREAD } from "../../../src/core/state-machine/running-job.js";
import type { Agent } from "../../../src/core/types.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { AGENTS, LEASES } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig, kubeconfigPath, scriptPods } from "../../harness/context.js";
import { writeCriLogFile } from "../../harness/cri-log-file.js";
import { eventually, eventuallyPasses } from "../../harness/eventually.js";
import { type MemoryCgroup, makeMemoryCgroup, memoryCgroupProblem } from "../../harness/memory-cgroup.js";
import { freePort } from "../../harness/ports.js";
import { clientFor, createAgent, createDefinition, createStation } from "./helpers.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const MAIN = join(HERE, "../../../src/controller/main.ts");
const PROBE = join(HERE, "../../support/loop-delay-probe.ts");
/** The controller container's memory limit (deploy/base/controller-deployment.yaml). */
const LIMIT_BYTES = 512 * 1024 * 1024;
const LOG_BYTES = 64 * 1024 * 1024;
const AGENTS_N = 10;
const POD_NAME = "flood-controller";
/** How long each run pod runs: long enough for the ten to be Running before the first ends. */
const RUN_TIME = "20s";

/** `{"type":"system"}` lines (H3's log: one line of work each) until `bytes`, then `tail`. */
function* systemLines(bytes: number, tail: string[] = []): Generator<string> {
  const line = '{"type":"system"}';
  for (let n = 0; n < bytes; n += line.length + 1) yield line;
  yield* tail;
}

/** The three hostile kinds, each about LOG_BYTES of log text, and the costNote each must lead to. */
const KINDS = [
  {
    name: "system-lines",
    lines: () => systemLines(LOG_BYTES),
    note: MSG_USAGE_UNREAD,
  },
  {
    // One line of 8 MiB among system lines, then a forged cheap result: the log was not read whole.
    name: "over-long-line",
    lines: function* () {
      yield* systemLines(LOG_BYTES / 2);
      yield `{"type":"assistant","message":{"id":"m-long","content":"${"z".repeat(8 * 1024 * 1024)}"}}`;
      yield* systemLines(LOG_BYTES / 2 - 8 * 1024 * 1024, [
        JSON.stringify({
          type: "result",
          total_cost_usd: 0.000001,
          usage: { input_tokens: 1, output_tokens: 1 },
        }),
      ]);
    },
    note: "1 line(s) of the run's log were longer than",
  },
  {
    // Streamed messages with ever new ids, then a forged result reporting 2^53-1 output tokens.
    name: "forged-usage",
    lines: function* () {
      for (let n = 0, i = 0; n < LOG_BYTES; i++) {
        const line = JSON.stringify({
          type: "assistant",
          message: {
            id: `msg-${i}`,
            model: "claude-sonnet-4-5",
            usage: { input_tokens: 3, output_tokens: 1 },
          },
        });
        n += line.length + 1;
        yield line;
      }
      yield JSON.stringify({
        type: "result",
        total_cost_usd: 0.01,
        usage: { input_tokens: 1, output_tokens: Number.MAX_SAFE_INTEGER },
      });
    },
    note: "the run's lines report more tokens than it could have consumed",
  },
] as const;

interface LeaseSample {
  holder: string | undefined;
  renewTime: string | undefined;
}

let client: KubeClient;
let ns: string;
let logsDir: string;
let cgroup: MemoryCgroup | undefined;
let child: ChildProcess | undefined;

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  ns = await createTestNamespace("ctrl-log-flood");
  logsDir = await mkdtemp(join(tmpdir(), "log-flood-"));
  const problem = memoryCgroupProblem();
  if (problem === "") cgroup = await makeMemoryCgroup("agent-controller-test", LIMIT_BYTES);
  else
    console.warn(`log flood: no memory cgroup (${problem}); bounding the heap with --max-old-space-size=512`);
}, 60_000);

afterAll(async () => {
  child?.kill("SIGKILL");
  await cgroup?.remove();
  await client?.close();
  if (logsDir) await rm(logsDir, { recursive: true, force: true });
});

describe("the controller under ten hostile 64 MiB logs finishing at once, inside 512 MiB", () => {
  it("stays up, keeps its Lease, answers /healthz, and bounds every bill", { timeout: 240_000 }, async () => {
    // The logs, one file per kind, each served to every pod of its kind.
    const at = new Date();
    const files = await Promise.all(
      KINDS.map(async (kind) => {
        const file = join(logsDir, `${kind.name}.log`);
        const served = await writeCriLogFile(file, kind.lines(), at);
        expect(served).toBeGreaterThanOrEqual(LOG_BYTES);
        return file;
      }),
    );
    await createDefinition(client, ns, "def");
    // Every finished Agent kept (the default history keeps the last 3): each one's bill is checked.
    await createStation(client, ns, "st", "def", {
      maxConcurrentRuns: AGENTS_N,
      successfulRunsHistoryLimit: AGENTS_N,
      failedRunsHistoryLimit: AGENTS_N,
    });
    const names = Array.from({ length: AGENTS_N }, (_, i) => `flood-${i}`);
    for (const [i, name] of names.entries()) {
      await scriptPods(
        ns,
        { "agents.re-cinq.com/agent": name },
        { exitCode: 0, runTime: RUN_TIME, logFiles: { agent: files[i % KINDS.length] as string } },
      );
    }

    // The controller, as the Deployment runs it, inside the limit.
    const healthPort = await freePort();
    const probeFile = join(logsDir, "loop-delay.jsonl");
    const controllerLog = join(logsDir, "controller.log");
    const nodeArgs = [
      "--enable-source-maps",
      ...(cgroup ? [] : ["--max-old-space-size=512"]),
      "--import",
      "tsx",
      "--import",
      PROBE,
      MAIN,
    ];
    // In the cgroup before node starts: the shell joins it, then becomes node.
    const [command, args] = cgroup
      ? ["/bin/sh", ["-c", 'echo $$ > "$CGROUP_PROCS" && exec "$0" "$@"', process.execPath, ...nodeArgs]]
      : [process.execPath, nodeArgs];
    child = spawn(command as string, args as string[], {
      env: {
        ...process.env,
        ...(cgroup ? { CGROUP_PROCS: cgroup.procsFile } : {}),
        NODE_OPTIONS: "--max-semi-space-size=4",
        KUBECONFIG: kubeconfigPath(),
        NAMESPACE: ns,
        POD_NAME,
        HEALTH_PORT: String(healthPort),
        HEALTH_HOST: "127.0.0.1",
        BATCH_ENABLED: "false",
        REALTIME_ENABLED: "false",
        LOOP_PROBE_FILE: probeFile,
      },
      // Its log lines, for a failure to show.
      stdio: ["ignore", openSync(controllerLog, "w"), "inherit"],
    });
    let exit: string | undefined;
    child.on("exit", (code, signal) => {
      exit = `exit code ${code}, signal ${signal}`;
    });
    const base = `http://127.0.0.1:${healthPort}`;
    await eventually("the controller's /readyz", async () => (await fetch(`${base}/readyz`)).ok, 60_000);
    await eventually("the controller holding the Lease", async () => {
      const lease = await client.get<{ spec: { holderIdentity?: string } }>(LEASES, ns, "agent-controller");
      return lease?.spec.holderIdentity === POD_NAME;
    });

    // Watched throughout: every /healthz answer, and the Lease once a second.
    let watching = true;
    const answers: number[] = [];
    const leases: LeaseSample[] = [];
    const healthPoll = (async () => {
      while (watching) {
        answers.push(
          await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
            (r) => r.status,
            () => -1,
          ),
        );
        await sleep(250);
      }
    })();
    const leasePoll = (async () => {
      while (watching) {
        const lease = await client
          .get<{ spec: { holderIdentity?: string; renewTime?: string } }>(LEASES, ns, "agent-controller")
          .catch(() => undefined);
        if (lease) leases.push({ holder: lease.spec.holderIdentity, renewTime: lease.spec.renewTime });
        await sleep(1_000);
      }
    })();

    const started = Date.now();
    await Promise.all(names.map((name) => createAgent(client, ns, name, "st")));
    let ended: Agent[] = [];
    try {
      ended = await eventually(
        "all ten Agents terminal",
        async () => {
          if (exit !== undefined) throw new Error(`the controller ended: ${exit}`);
          const list = await client.list<Agent>(AGENTS, ns);
          const done = list.items.filter((a) => ["Succeeded", "Failed"].includes(a.status?.phase ?? ""));
          if (done.length === AGENTS_N) return done;
          // What the timeout error names: where each Agent is, and what the watchers saw so far.
          throw new Error(
            list.items.map((a) => `${a.metadata?.name} ${a.status?.phase ?? "Pending"}`).join(", ") +
              ` after ${((Date.now() - started) / 1000).toFixed(0)} s; /healthz not 200: ` +
              `${answers.filter((s) => s !== 200).length} of ${answers.length}; Lease holders seen: ` +
              `${[...new Set(leases.map((l) => l.holder))].join(", ")}, renewals seen: ` +
              `${new Set(leases.map((l) => l.renewTime)).size}` +
              (cgroup
                ? `; OOM kills: ${cgroup.oomKills()}, peak ${(cgroup.peakBytes() / 2 ** 20).toFixed(0)} MiB`
                : ""),
          );
        },
        180_000,
        1_000,
      );
      // The Lease is renewed after the reads too, by the same holder.
      const lastSeen = leases.at(-1)?.renewTime ?? "";
      await eventuallyPasses("a renewal after the reads", async () => {
        const lease = await client.get<{ spec: { holderIdentity?: string; renewTime?: string } }>(
          LEASES,
          ns,
          "agent-controller",
        );
        expect(lease?.spec.holderIdentity).toBe(POD_NAME);
        expect((lease?.spec.renewTime ?? "") > lastSeen).toBe(true);
      });
    } catch (err) {
      const tail = readFileSync(controllerLog, "utf8").split("\n").slice(-30).join("\n");
      console.error(`log flood: the controller's last log lines:\n${tail}`);
      throw err;
    } finally {
      watching = false;
      await Promise.all([healthPoll, leasePoll]);
    }
    const readSeconds = (Date.now() - started) / 1000;

    expect(exit).toBeUndefined();
    if (cgroup) expect(cgroup.oomKills()).toBe(0);
    expect(answers.length).toBeGreaterThan(10);
    expect(answers.filter((s) => s !== 200)).toEqual([]);
    expect(leases.length).toBeGreaterThan(2);
    expect(leases.filter((l) => l.holder !== POD_NAME)).toEqual([]);
    const renewals = leases.map((l) => l.renewTime ?? "");
    for (let i = 1; i < renewals.length; i++) {
      expect((renewals[i] as string) >= (renewals[i - 1] as string)).toBe(true);
    }
    expect(new Set(renewals).size).toBeGreaterThan(1);
    // Nor did it lose its leadership in between (a renewal that timed out steps it down, and it
    // takes the Lease back under the same name): its own log says so when it does.
    const leaderLines = readFileSync(controllerLog, "utf8")
      .split("\n")
      .filter((l) => l.includes("lease agent-controller:"));
    expect(leaderLines.filter((l) => l.includes("stepped down"))).toEqual([]);
    for (const agent of ended) {
      const kind = KINDS[Number(agent.metadata?.name?.split("-")[1]) % KINDS.length];
      expect({ name: agent.metadata?.name, phase: agent.status?.phase }).toEqual({
        name: agent.metadata?.name,
        phase: "Succeeded",
      });
      expect(agent.status?.costSource).toBe("bounded");
      expect(agent.status?.costNote).toContain(kind?.note);
    }

    // What the event loop went through while the logs were read: reported, not asserted.
    const windows = readFileSync(probeFile, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { at: number; maxMs: number; p99Ms: number; latestTickMs: number })
      .filter((w) => w.at >= started);
    const worst = (key: "maxMs" | "p99Ms" | "latestTickMs") => Math.max(...windows.map((w) => w[key]));
    const sorted = windows.map((w) => w.maxMs).sort((a, b) => a - b);
    console.log(
      `log flood: ${AGENTS_N} x ${LOG_BYTES / 1024 / 1024} MiB read in ${readSeconds.toFixed(0)} s; ` +
        `limit: ${cgroup ? `cgroup v${cgroup.version} memory limit, peak ${(cgroup.peakBytes() / 2 ** 20).toFixed(0)} MiB` : "--max-old-space-size=512"}; ` +
        `event loop per second: worst max ${worst("maxMs").toFixed(0)} ms, median of the per-second max ${(sorted[Math.floor(sorted.length / 2)] ?? 0).toFixed(0)} ms, ` +
        `worst p99 ${worst("p99Ms").toFixed(0)} ms, a 100 ms timer at most ${worst("latestTickMs").toFixed(0)} ms late; ` +
        `${answers.length} /healthz answers, ${new Set(renewals).size} Lease renewals seen; ` +
        `machine load ${loadavg()[0]?.toFixed(1)} on ${availableParallelism()} cores`,
    );
  });
});
