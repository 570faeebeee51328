/**
 * `kubectl agent` end to end, as users run it: the plugin built as `npm run build:kubectl-agent`
 * builds it (the Node single executable, into a temporary directory put first on PATH) and driven
 * through the real `kubectl`, which finds it there by its name, with `--kubeconfig` and `-n`
 * passed explicitly. The cluster side is the local plane with the controller in-process
 * (setup.ts): kwok Stations whose run pods end as scripted for `run`, `status` and `logs`, and a
 * real realtime session on the real node (init + supervisor + fake claude) behind the controller's
 * prompt API for `prompt` and `close`. docs/kubectl-plugin.md.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildKubectlAgent } from "../../../scripts/build-kubectl-agent.js";
import { type Agent, AgentsClient, phaseOf } from "../../../src/client/index.js";
import { PODS } from "../../../src/kube/resources.js";
import { parseInvocation } from "../../fakes/cli/fake-cli.js";
import { eventually, kubeconfigPath } from "../../harness/context.js";
import {
  CLAUDE_LINES,
  CLAUDE_RENDERED,
  type ClientEnv,
  createDefinition,
  createKwokStation,
  createRealNodeStation,
  RUN_POD_SKIP,
  startClientEnv,
} from "./setup.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const EXAMPLES = path.join(ROOT, "deploy", "examples");

let env: ClientEnv;
let agents: AgentsClient;
let work: string;
/** Holds the single executable `kubectl-agent` (and `kubectl_complete-agent`). */
let seaDir: string;
/** Holds `kubectl-agent`, a symlink to the bundle, as npm installs the package's `bin`. */
let bundleDir: string;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), "kubectl-agent-e2e-"));
  seaDir = path.join(work, "sea");
  bundleDir = path.join(work, "bundle");
  await buildKubectlAgent(() => {}, seaDir);
  await mkdir(bundleDir);
  await symlink(path.join(seaDir, "kubectl-agent.cjs"), path.join(bundleDir, "kubectl-agent"));

  env = await startClientEnv("plugin");
  await createDefinition(env, "def");
  await createKwokStation(env, "ok", "def", { exitCode: 0, runTime: "1s", logs: { agent: CLAUDE_LINES } });
  await createKwokStation(env, "pair", "def", { exitCode: 0, logs: { agent: CLAUDE_LINES } });
  await createKwokStation(env, "three", "def", { exitCode: 3, logs: { agent: "it broke" } });
  await createDefinition(env, "rt-def", {
    execution: "realtime",
    prompt: "Start on {topic}.",
    permission_mode: "bypass",
  });
  await createRealNodeStation(env, "rt", "rt-def", { answer: "turn done" });
  agents = await AgentsClient.connect({ kubeconfig: kubeconfigPath(), namespace: env.ns });
});

afterAll(async () => {
  await agents?.close();
  await env?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `kubectl agent ARGS --kubeconfig K -n NS` with the plugin found on PATH in `dir`. The child's
 * environment is only PATH, HOME and `extraEnv`: no KUBECONFIG, AGENT_API_TOKEN or AGENT_API_URL
 * leaks in from the test's own.
 */
function kubectlAgent(
  args: readonly string[],
  o: { input?: string; env?: Record<string, string>; dir?: string; cluster?: boolean } = {},
): Promise<Outcome> {
  return kubectl(["agent", ...args, ...(o.cluster === false ? [] : clusterFlags())], o);
}

const clusterFlags = () => ["--kubeconfig", kubeconfigPath(), "-n", env.ns];

/** `kubectl ARGS` with the plugin's directory first on PATH. */
function kubectl(
  args: readonly string[],
  o: { input?: string; env?: Record<string, string>; dir?: string } = {},
): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn("kubectl", args, {
      env: {
        PATH: `${o.dir ?? seaDir}${path.delimiter}${process.env.PATH ?? ""}`,
        HOME: process.env.HOME ?? tmpdir(),
        ...o.env,
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 240_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(o.input ?? "");
  });
}

async function mustGet(name: string): Promise<Agent> {
  const agent = await agents.get(name);
  if (!agent) throw new Error(`Agent ${name} does not exist`);
  return agent;
}

/** The line `status AGENT` prints for a field: the label padded to 11 columns, a space, the value. */
const field = (label: string, value: string | number) => `${`${label}:`.padEnd(11)} ${value}`;

/** A `status` table's rows, cells split where kubectl-style padding (3+ spaces) separates them. */
function tableRows(text: string): string[][] {
  return text
    .trimEnd()
    .split("\n")
    .map((line) => line.split(/ {3,}/));
}

const CLAUDE_SESSION = (JSON.parse(CLAUDE_LINES[0] as string) as { session_id: string }).session_id;

const HEADER = ["NAME", "STATION", "PHASE", "QUEUE", "EXIT", "COST", "SESSION", "AGE", "REASON"];

describe("kubectl agent run", () => {
  it("--wait prints the generated name, writes the parameters and exits 0 with a Succeeded run", async () => {
    const r = await kubectlAgent(["run", "ok", "-p", "topic=the tests", "-p", "ticket=A-1=b", "--wait"]);
    expect(r.stdout).toMatch(/^ok-[a-z0-9]{5}\n$/);
    const name = r.stdout.trim();
    expect(r.stderr).toBe(`Agent ${name} Succeeded with exit code 0\n`);
    expect(r.code).toBe(0);
    const agent = await mustGet(name);
    expect(agent.metadata.generateName).toBe("ok-");
    expect(agent.spec).toEqual({ stationRef: "ok", parameters: { topic: "the tests", ticket: "A-1=b" } });
    expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
  });

  it("--wait exits with the Agent's exit code when the run fails, and says why on stderr", async () => {
    const r = await kubectlAgent(["run", "three", "--wait"]);
    expect(r.stdout).toMatch(/^three-[a-z0-9]{5}\n$/);
    const name = r.stdout.trim();
    expect(r.code).toBe(3);
    const agent = await mustGet(name);
    expect(agent.status).toMatchObject({ phase: "Failed", exitCode: 3 });
    const reason = agent.status?.failureReason ?? "";
    expect(reason).not.toBe("");
    expect(r.stderr).toBe(`Agent ${name} Failed with exit code 3: ${reason}\n`);
  });

  it("-o name prints kubectl's resource/name; -o json prints the created Agent", async () => {
    const named = await kubectlAgent(["run", "pair", "-o", "name"]);
    expect(named.code).toBe(0);
    expect(named.stderr).toBe("");
    expect(named.stdout).toMatch(/^agent\.agents\.re-cinq\.com\/pair-[a-z0-9]{5}\n$/);
    const name = named.stdout.trim().split("/")[1] as string;
    expect((await mustGet(name)).spec?.stationRef).toBe("pair");

    const json = await kubectlAgent([
      "run",
      "pair",
      "-p",
      "topic=json",
      "--model",
      "claude-sonnet-4-6",
      "-o",
      "json",
    ]);
    expect(json.code).toBe(0);
    const printed = JSON.parse(json.stdout) as Agent;
    expect(printed).toMatchObject({
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: { namespace: env.ns, generateName: "pair-" },
      spec: { stationRef: "pair", parameters: { topic: "json" }, model: "claude-sonnet-4-6" },
    });
    const stored = await mustGet(printed.metadata.name ?? "");
    expect(stored.metadata.uid).toBe(printed.metadata.uid);

    const status = await kubectlAgent(["status", printed.metadata.name ?? "", "-o", "json"]);
    expect(status.code).toBe(0);
    expect((JSON.parse(status.stdout) as Agent).metadata.uid).toBe(printed.metadata.uid);
  });

  it("--follow prints the name, then the run's output rendered once, and the phases on stderr", async () => {
    const r = await kubectlAgent(["run", "ok", "--follow"]);
    expect(r.code).toBe(0);
    const [name, ...rendered] = r.stdout.trimEnd().split("\n");
    expect(name).toMatch(/^ok-[a-z0-9]{5}$/);
    // Lines seen in the pod log while it ran and the rest from status.output, none twice.
    expect(rendered).toEqual(CLAUDE_RENDERED);
    const notes = r.stderr.trimEnd().split("\n");
    expect(notes.slice(-2)).toEqual([`Agent ${name}: Succeeded`, `Agent ${name} Succeeded with exit code 0`]);
    // Before that, each phase change once (a 2 s poll may see Pending, Running, both or neither).
    const before = notes.slice(0, -2);
    for (const note of before)
      expect(note).toMatch(new RegExp(`^Agent ${name}: (Pending|Running)( \\(.+\\))?$`));
    expect(new Set(before).size).toBe(before.length);
  });

  it("refuses an unknown flag and an unknown command with kubectl's usage hint, exit 1", async () => {
    const before = (await agents.list()).length;
    const flag = await kubectlAgent(["run", "ok", "--wiat"]);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toBe("error: Unknown option '--wiat'\nSee 'kubectl agent run --help' for usage.\n");
    const command = await kubectlAgent(["launch", "ok"]);
    expect(command.code).toBe(1);
    expect(command.stderr).toBe(
      `error: unknown command "launch" for "kubectl agent"\nSee 'kubectl agent --help' for usage.\n`,
    );
    // Neither created an Agent.
    expect(await agents.list()).toHaveLength(before);
  });
});

describe("kubectl agent status and logs", () => {
  let succeeded: string;
  let failed: string;

  beforeAll(async () => {
    const first = await kubectlAgent(["run", "pair", "-p", "topic=a", "--wait"]);
    const second = await kubectlAgent(["run", "three", "--wait"]);
    expect([first.code, second.code]).toEqual([0, 3]);
    succeeded = first.stdout.trim();
    failed = second.stdout.trim();
  });

  it("status AGENT: phase, job, times, exit code and the cost the controller recorded", async () => {
    const agent = await mustGet(succeeded);
    const s = agent.status ?? {};
    const r = await kubectlAgent(["status", succeeded]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(
      [
        field("Name", succeeded),
        field("Namespace", env.ns),
        field("Station", "pair"),
        field("Phase", "Succeeded"),
        field("Job", s.jobName ?? "?"),
        field("Started", s.startedAt ?? "?"),
        field("Completed", s.completedAt ?? "?"),
        field("Exit code", 0),
        // status.costUSD and status.usage, which the controller took from the result line's
        // total_cost_usd and usage in CLAUDE_LINES (docs/cost-and-budgets.md).
        field("Cost", "$0.0106 (3 in / 24 out / 20012 cache read / 0 cache write tokens)"),
        // The controller's read-back takes the session id from the init line.
        field("Session", CLAUDE_SESSION),
        "",
      ].join("\n"),
    );

    const bad = await mustGet(failed);
    const f = await kubectlAgent(["status", failed]);
    expect(f.code).toBe(0);
    expect(f.stdout).toContain(`${field("Phase", "Failed")}\n`);
    expect(f.stdout).toContain(`${field("Reason", bad.status?.failureReason ?? "?")}\n`);
    expect(f.stdout).toContain(`${field("Exit code", 3)}\n`);
    expect(f.stdout).not.toContain("Cost:");
  });

  it("status --station S: a table of that Station's runs, oldest first; status: the namespace's", async () => {
    const runs = (await agents.list({ station: "pair" })).map((a) => a.metadata.name);
    const r = await kubectlAgent(["status", "--station", "pair"]);
    expect(r.code).toBe(0);
    const [header, ...rows] = tableRows(r.stdout);
    expect(header).toEqual(HEADER);
    expect(rows.map((row) => row[0])).toEqual(runs);
    expect(rows.every((row) => row[1] === "pair")).toBe(true);
    const row = rows.find((cells) => cells[0] === succeeded);
    expect(row).toEqual([
      succeeded,
      "pair",
      "Succeeded",
      "-",
      "0",
      "$0.0106",
      CLAUDE_SESSION,
      expect.stringMatching(/^\d+[sm]$/),
      "-",
    ]);

    const all = await kubectlAgent(["status"]);
    expect(all.code).toBe(0);
    const allRows = tableRows(all.stdout).slice(1);
    const failedRow = allRows.find((cells) => cells[0] === failed);
    const reason = (await mustGet(failed)).status?.failureReason ?? "?";
    expect(failedRow?.slice(0, 7)).toEqual([failed, "three", "Failed", "-", "3", "-", "-"]);
    expect(failedRow?.[8]).toBe(reason.length > 60 ? expect.stringMatching(/…$/) : reason);
    expect(allRows.map((cells) => cells[1])).toEqual(expect.arrayContaining(["ok", "pair", "three"]));

    const none = await kubectlAgent(["status", "--station", "nobody"]);
    expect(none).toEqual({
      code: 0,
      stdout: "",
      stderr: `No runs of Station nobody found in ${env.ns} namespace.\n`,
    });

    const names = await kubectlAgent(["status", "--station", "pair", "-o", "name"]);
    expect(names.stdout).toBe(runs.map((n) => `agent.agents.re-cinq.com/${n}\n`).join(""));
  });

  it("shell completion through kubectl (kubectl_complete-agent): Agents for status, Stations for run", async () => {
    const names = async (words: string[]) => {
      const r = await kubectl([
        "__complete",
        "agent",
        ...words.slice(0, -1),
        ...clusterFlags(),
        ...words.slice(-1),
      ]);
      expect(r.code).toBe(0);
      return r.stdout.trimEnd().split("\n");
    };
    const agentNames = await names(["status", ""]);
    expect(agentNames.at(-1)).toBe(":4");
    expect(agentNames).toEqual(expect.arrayContaining([succeeded, failed]));
    const threes = (await agents.list()).map((a) => a.metadata.name).filter((n) => n?.startsWith("three-"));
    expect(threes).toContain(failed);
    expect(await names(["logs", "three-"])).toEqual([...threes, ":4"]);
    expect(await names(["run", ""])).toEqual(["ok", "pair", "rt", "three", ":4"]);
  });

  it("logs AGENT renders Claude's stream-json; --raw prints the NDJSON as the pod wrote it", async () => {
    const rendered = await kubectlAgent(["logs", succeeded]);
    expect(rendered).toEqual({ code: 0, stdout: `${CLAUDE_RENDERED.join("\n")}\n`, stderr: "" });
    const raw = await kubectlAgent(["logs", succeeded, "--raw"]);
    expect(raw).toEqual({ code: 0, stdout: `${CLAUDE_LINES.join("\n")}\n`, stderr: "" });
    // A line that is not JSON is printed as it is.
    const plain = await kubectlAgent(["logs", failed]);
    expect(plain).toEqual({ code: 0, stdout: "it broke\n", stderr: "" });
    // -o is refused by a command that prints no objects.
    const refused = await kubectlAgent(["logs", succeeded, "-o", "json"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      "error: logs does not support -o/--output\nSee 'kubectl agent logs --help' for usage.\n",
    );
  });

  it("an Agent that does not exist: kubectl's NotFound line and exit 1, from status, logs and logs -f", async () => {
    const notFound = `Error from server (NotFound): agents.agents.re-cinq.com "no-such-agent" not found in namespace ${env.ns}\n`;
    for (const args of [
      ["status", "no-such-agent"],
      ["logs", "no-such-agent"],
      ["logs", "no-such-agent", "-f"],
    ]) {
      const r = await kubectlAgent(args);
      expect({ args, ...r }).toEqual({ args, code: 1, stdout: "", stderr: notFound });
    }
  });
});

describe("kubectl agent prompt and close", () => {
  it("an Agent that does not exist: the prompt API's 404, exit 1", async () => {
    const r = await kubectlAgent(["prompt", "no-such-agent", "hello", "--api-url", env.apiUrl]);
    expect(r).toEqual({
      code: 1,
      stdout: "",
      stderr: "error: the prompt API answered 404: Agent no-such-agent not found\n",
    });
  });

  it("a wrong --token: the prompt API's 401, exit 1", async () => {
    const r = await kubectlAgent(["close", "anyone", "--api-url", env.apiUrl, "--token", "not-the-token"]);
    expect(r).toEqual({
      code: 1,
      stdout: "",
      stderr: "error: the prompt API answered 401: the bearer token is missing or wrong\n",
    });
  });

  it("without --api-url or AGENT_API_URL: the in-cluster Service address, unreachable from here", async () => {
    const r = await kubectlAgent(["prompt", "anyone", "hello", "--token", "t"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(
      new RegExp(
        `^error: cannot reach the prompt API at http://agent-controller-api\\.${env.ns}\\.svc:8082: .+ \\(outside the cluster, pass --api-url or set AGENT_API_URL\\)\\n$`,
      ),
    );
  });

  it.skipIf(RUN_POD_SKIP !== "")(
    "a realtime run: prompt prints turn/queued/sessionId (token from the agent-realtime Secret), close prints queued",
    async () => {
      const started = await kubectlAgent(["run", "rt", "-p", "topic=[gate plugin-first]"]);
      expect(started.code).toBe(0);
      const name = started.stdout.trim();
      expect(name).toMatch(/^rt-[a-z0-9]{5}$/);
      // The prompt API serves once the run pod is Ready (src/prompt-api/session.ts); turn 1 (the
      // definition's prompt) then waits at its gate, so the prompts below queue behind it.
      const jobName = await eventually(
        `Agent ${name} Running with a Job`,
        async () => {
          const agent = await agents.get(name);
          return agent && phaseOf(agent) === "Running" ? agent.status?.jobName : undefined;
        },
        120_000,
        250,
      );
      await eventually(
        `the run pod of ${name} Ready`,
        async () => {
          const { items } = await env.client.list<V1Pod>(PODS, env.ns, {
            labelSelector: `job-name=${jobName}`,
          });
          return items.some(
            (p) =>
              p.status?.podIP && p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
          );
        },
        120_000,
        250,
      );

      // No --token: the plugin reads api-token from Secret agent-realtime (setup.ts wrote it with a
      // trailing newline); the URL from --api-url.
      const first = await kubectlAgent(["prompt", name, "Add a test.", "--api-url", env.apiUrl]);
      expect(first.stderr).toBe("");
      expect(first.code).toBe(0);
      const match = /^turn=2 queued=1 sessionId=([0-9a-f-]{36})\n$/.exec(first.stdout);
      expect(match, first.stdout).not.toBeNull();
      const sessionId = match?.[1] as string;

      // TEXT `-` reads stdin; the URL from AGENT_API_URL; -o json prints the reply as JSON.
      const second = await kubectlAgent(["prompt", name, "-", "-o", "json"], {
        input: "Now refactor.\n",
        env: { AGENT_API_URL: env.apiUrl },
      });
      expect(second.code).toBe(0);
      expect(JSON.parse(second.stdout)).toEqual({ turn: 3, queued: 2, sessionId });

      const closed = await kubectlAgent(["close", name, "--api-url", env.apiUrl]);
      expect(closed).toEqual({ code: 0, stdout: "queued=2\n", stderr: "" });
      const again = await kubectlAgent(["close", name, "--api-url", env.apiUrl]);
      expect(again).toEqual({
        code: 1,
        stdout: "",
        stderr: "error: the prompt API answered 409: the session is ending\n",
      });

      env.gates.open("plugin-first");
      const done = await agents.waitForTerminal(name, { timeoutMs: 240_000 });
      expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0, sessionId });
      // Turn 1 and the two prompts ran, one CLI process each, with the texts sent (stdin as read).
      const prompts = env.journal
        .entries()
        .filter((e) => e.env.AGENT_NAME === name)
        .map((e) => parseInvocation(e.cli, e.argv, "").prompt);
      expect(prompts).toEqual([
        expect.stringContaining("Start on [gate plugin-first]."),
        "Add a test.",
        "Now refactor.\n",
      ]);

      const status = await kubectlAgent(["status", name]);
      expect(status.stdout).toContain(`${field("Session", sessionId)}\n`);
      expect(status.stdout).toContain(`${field("Phase", "Succeeded")}\n`);
    },
    300_000,
  );
});

describe("kubectl agent validate (offline)", () => {
  it("deploy/examples: valid, exit 0, with the SEA and with the package's bin (the bundle)", async () => {
    const files = (await readdir(EXAMPLES)).filter((f) => /\.(ya?ml|json)$/.test(f));
    for (const dir of [seaDir, bundleDir]) {
      const r = await kubectlAgent(["validate", "-f", EXAMPLES], { dir, cluster: false });
      expect({ dir, ...r }).toEqual({
        dir,
        code: 0,
        stdout: "",
        stderr: expect.stringMatching(new RegExp(`^\\d+ objects in ${files.length} files valid\\n$`)),
      });
    }
  });

  it("a broken manifest: every problem named with file, document and path, exit 1", async () => {
    const file = path.join(work, "broken.yaml");
    await writeFile(
      file,
      `apiVersion: agents.re-cinq.com/v1beta1
kind: Station
metadata: {name: s}
spec:
  agentDefRef: d
  maxConcurrentRuns: -1
  template: {spec: {containers: [{name: agent, image: x}]}}
---
apiVersion: agents.re-cinq.com/v1beta1
kind: Agent
metadata: {generateName: fix-}
spec:
  stationref: s
`,
    );
    const r = await kubectlAgent(["validate", "-f", file, "-f", path.join(EXAMPLES, "agent.yaml")], {
      cluster: false,
    });
    expect(r).toEqual({
      code: 1,
      stdout: [
        `${file}#1 Station/s: spec.maxConcurrentRuns must be at least 0, got -1.`,
        `${file}#2 Agent/fix-: spec.stationRef is required.`,
        `${file}#2 Agent/fix-: spec.stationref is not a known field of Agent.`,
        "",
      ].join("\n"),
      stderr: "3 problems in 3 objects in 2 files\n",
    });
  });
});
