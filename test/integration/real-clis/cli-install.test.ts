/**
 * End to end: how a run gets its agent CLI (docs/agent-clis.md "How a run gets its CLI"), with the
 * real claude CLI against the local Anthropic Messages server, through the controller, the real
 * init and supervisor on the real node.
 *
 * - A Station image without the CLI (NO_CLI_STATION_IMAGE: Node and npm only): the supervisor
 *   installs exactly the pinned version with npm, offline from the warm npm cache the global setup
 *   filled (copied into the image at /opt/npm-cache: pods here reach no registry; `npm_config_cache` and `npm_config_offline` come from the
 *   recipe's env, as a platform team would point npm at a mirror), logs the version, and the run
 *   goes on with the CLI it installed.
 * - A Station image with the CLI preinstalled (REAL_CLI_STATION_IMAGE): used as is, version logged,
 *   nothing installed.
 * - A pinned version npm cannot get: the run fails before the CLI starts, npm's own words in the
 *   supervisor's log.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_CLIS } from "../../../src/core/cli/agent-clis.js";
import type { Agent } from "../../../src/core/types.js";
import { AGENTS } from "../../../src/kube/resources.js";
import { startAnthropicMessages } from "../../fakes/models/anthropic-messages.js";
import { CONTAINER_NPM_CACHE, npmCacheMissing } from "../../harness/agent-clis.js";
import { NO_CLI_STATION_IMAGE, podReachableHost } from "../../harness/context.js";
import {
  createAgent,
  createDefinition,
  createRealCliStation,
  keySecret,
  podLog,
  type RealCliEnv,
  realClisSkipReason,
  startRealCliEnv,
  watchPhases,
} from "./setup.js";

const PINNED = AGENT_CLIS.claude;
/** An offline npm install of claude takes 20–40 s on the shared 2 cores, then the run itself. */
const RUN_TIMEOUT_MS = 240_000;

const skip = realClisSkipReason() ?? npmCacheMissing(["claude"]);
if (skip && process.env.CI === "true") throw new Error(skip);
if (skip) console.warn(`[real-clis/cli-install] skipped: ${skip}`);

/** The supervisor's log messages (JSON lines on the agent container's stderr). */
function supervisorMessages(log: string): string[] {
  const out: string[] = [];
  for (const line of log.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const parsed = JSON.parse(line) as { msg?: unknown; component?: unknown };
      if (typeof parsed.msg === "string" && parsed.component !== undefined) out.push(parsed.msg);
    } catch {
      // A CLI line that is not JSON after all.
    }
  }
  return out;
}

async function run(env: RealCliEnv, name: string, station: string): Promise<{ agent: Agent; log: string }> {
  const phases = await watchPhases(env, name, RUN_TIMEOUT_MS);
  await createAgent(env, name, station);
  await phases.terminal;
  const agent = (await env.client.get<Agent>(AGENTS, env.ns, name)) as Agent;
  return { agent, log: await podLog(env, agent, "agent") };
}

describe.skipIf(skip !== undefined)("the run's agent CLI: preinstalled or installed by npm", () => {
  let env: RealCliEnv;

  beforeAll(async () => {
    const model = await startAnthropicMessages(podReachableHost());
    env = await startRealCliEnv({
      prefix: "real-cli-install",
      model,
      baseUrls: { anthropic: model.origin },
      keys: { anthropic: "sk-ant-api03-real-cli-install" },
    });
    const recipe = (npmEnv: { name: string; value: string }[]) => ({
      model: "claude-sonnet-4-6",
      permission_mode: "bypass",
      resources: { secrets: [keySecret("anthropic")], env: npmEnv },
    });
    const offline = [
      { name: "npm_config_cache", value: CONTAINER_NPM_CACHE },
      { name: "npm_config_offline", value: "true" },
    ];
    await createDefinition(env, "offline-npm", recipe(offline));
    await createDefinition(env, "plain", recipe([]));
    await createRealCliStation(env, "no-cli", "offline-npm", { image: NO_CLI_STATION_IMAGE });
    await createRealCliStation(env, "preinstalled", "plain");
  });
  afterAll(async () => {
    await env?.close();
  });

  it("an image without the CLI gets exactly the pinned version from npm (offline cache), version logged", async () => {
    env.model.script([{ text: "Installed and answering." }]);
    const { agent, log } = await run(env, "installs", "no-cli");
    const messages = supervisorMessages(log);
    expect(messages).toContain(
      `claude: claude is not on PATH; installing ${PINNED.package}@${PINNED.version}: npm install --global --prefix /agent/.local --no-audit --no-fund ${PINNED.package}@${PINNED.version}`,
    );
    expect(
      messages.some((m) =>
        m.startsWith(`claude: installed /agent/.local/bin/claude, version ${PINNED.version}, in `),
      ),
    ).toBe(true);
    expect(agent.status?.phase, agent.status?.failureReason).toBe("Succeeded");
    // The installed CLI, not some other one, talked to the model.
    expect(env.model.modelCalls().length).toBeGreaterThan(0);
  });

  it("a CLI already on the image's PATH is used as is, its version logged, nothing installed", async () => {
    const { agent, log } = await run(env, "preinstalled", "preinstalled");
    const messages = supervisorMessages(log);
    expect(messages).toContain(
      `claude: /usr/local/bin/claude is on PATH, version ${PINNED.version}; not installing`,
    );
    expect(messages.filter((m) => m.includes("installing @") || m.startsWith("claude: installed"))).toEqual(
      [],
    );
    expect(agent.status?.phase, agent.status?.failureReason).toBe("Succeeded");
  });
});

describe.skipIf(skip !== undefined)("a pinned version npm cannot get", () => {
  let env: RealCliEnv;

  beforeAll(async () => {
    const model = await startAnthropicMessages(podReachableHost());
    env = await startRealCliEnv({
      prefix: "real-cli-install-missing",
      model,
      baseUrls: { anthropic: model.origin },
      // A version the offline cache does not hold.
      controllerEnv: { CLAUDE_CLI_VERSION: "0.0.1" },
    });
    await createDefinition(env, "offline-npm", {
      model: "claude-sonnet-4-6",
      resources: {
        secrets: [keySecret("anthropic")],
        env: [
          { name: "npm_config_cache", value: CONTAINER_NPM_CACHE },
          { name: "npm_config_offline", value: "true" },
        ],
      },
    });
    await createRealCliStation(env, "no-cli", "offline-npm", { image: NO_CLI_STATION_IMAGE });
  });
  afterAll(async () => {
    await env?.close();
  });

  it("fails the run before the CLI starts, npm's own words in the supervisor's log", async () => {
    const { agent, log } = await run(env, "missing-version", "no-cli");
    expect(agent.status?.phase).toBe("Failed");
    const failure = supervisorMessages(log).find((m) => m.startsWith("claude: installing "));
    expect(failure).toMatch(
      new RegExp(
        `^claude: installing ${PINNED.package.replace("/", "\\/")}@0\\.0\\.1 failed: npm exited with code \\d+: npm error`,
      ),
    );
    const events = log
      .split("\n")
      .filter((l) => l.startsWith('{"kind"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events).toContainEqual(
      expect.objectContaining({ kind: "lifecycle", phase: "agent", status: "failed", reason: "setup" }),
    );
    expect(env.model.modelCalls()).toEqual([]);
  });
});
