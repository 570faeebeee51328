/** The plugin's subcommands over an injected CliIo; each returns the process exit code. */
import type { Agent } from "../../generated/crds/agent.js";
import type { AgentsClient } from "../client/agents.js";
import { PromptApiError, PromptUnavailableError } from "../client/errors.js";
import { PromptApiClient } from "../client/prompt-api-client.js";
import { exitCodeOf, phaseOf, reasonOf } from "../client/terminal.js";
import { type ProviderLimitEvent, parseProviderLimitEvent } from "../core/provider-limits/retry-event.js";
import type { Command, GlobalFlags } from "./args.js";
import { agentNotFound, followAgent, LinePrinter } from "./follow.js";
import { formatAgentDetail, formatAgentTable, formatObjects, formatValue } from "./format.js";
import { CliError, type CliIo } from "./io.js";
import { readManifestSources } from "./manifest-files.js";
import { formatProblem, validateManifests } from "./validate-manifests.js";

/** The Secret and key the prompt API's bearer token is read from (docs/prompt-api.md#authentication). */
export const REALTIME_SECRET = "agent-realtime";
export const API_TOKEN_KEY = "api-token";
export const PROMPT_API_SERVICE = "agent-controller-api";
export const PROMPT_API_PORT = 8082;

/** The prompt API's in-cluster address for a namespace: the realtime component's Service. */
export function defaultApiUrl(namespace: string): string {
  return `http://${PROMPT_API_SERVICE}.${namespace}.svc:${PROMPT_API_PORT}`;
}

async function mustGet(agents: AgentsClient, name: string, io: CliIo): Promise<Agent> {
  const agent = await agents.get(name, io.signal);
  if (!agent) throw agentNotFound(name, agents.namespace);
  return agent;
}

function printAgent(agent: Agent, g: GlobalFlags, io: CliIo, plain: string): void {
  io.stdout(g.output ? formatObjects([agent], g.output, false) : plain);
}

function terminalNote(agent: Agent): string {
  const reason = phaseOf(agent) === "Failed" ? reasonOf(agent) : "";
  return `Agent ${agent.metadata.name} ${phaseOf(agent)}${agent.status?.exitCode !== undefined ? ` with exit code ${agent.status.exitCode}` : ""}${reason ? `: ${reason}` : ""}\n`;
}

export async function runCommand(
  cmd: Extract<Command, { name: "run" }>,
  g: GlobalFlags,
  io: CliIo,
): Promise<number> {
  const agents = await io.connect(g);
  try {
    const created = await agents.create(
      {
        metadata: { generateName: `${cmd.station}-` },
        spec: {
          stationRef: cmd.station,
          ...(Object.keys(cmd.parameters).length > 0 ? { parameters: cmd.parameters } : {}),
          ...(cmd.model ? { model: cmd.model } : {}),
        },
      },
      io.signal,
    );
    const name = created.metadata.name ?? "";
    printAgent(created, g, io, `${name}\n`);
    if (!cmd.wait) return 0;
    const done = cmd.follow
      ? await followAgent(agents, name, io, {
          raw: false,
          ...(cmd.timeoutMs !== undefined ? { timeoutMs: cmd.timeoutMs } : {}),
        })
      : await agents.waitForTerminal(name, {
          ...(cmd.timeoutMs !== undefined ? { timeoutMs: cmd.timeoutMs } : {}),
          ...(io.signal ? { signal: io.signal } : {}),
        });
    io.stderr(terminalNote(done));
    return exitCodeOf(done);
  } finally {
    await agents.close();
  }
}

export async function logsCommand(
  cmd: Extract<Command, { name: "logs" }>,
  g: GlobalFlags,
  io: CliIo,
): Promise<number> {
  const agents = await io.connect(g);
  try {
    if (cmd.follow) {
      await followAgent(agents, cmd.agent, io, { raw: cmd.raw });
      return 0;
    }
    const agent = await mustGet(agents, cmd.agent, io);
    const output = agent.status?.output ?? "";
    if (output === "") {
      io.stderr(
        `Agent ${cmd.agent} is ${phaseOf(agent)} and has no output yet (the controller records it when the run ends; -f follows the run pod's log)\n`,
      );
      return 0;
    }
    const lines = output.split("\n");
    if (lines.at(-1) === "") lines.pop();
    const printer = new LinePrinter(io, cmd.raw, agent.spec?.model);
    printer.print(lines);
    printer.end();
    return 0;
  } finally {
    await agents.close();
  }
}

/**
 * A running run's last wait for its provider (docs/provider-limits.md#what-a-user-sees): the
 * supervisor's provider-limit events are in the agent container's log until the run ends, when the
 * controller sums them into status.providerRetries. Undefined when there is none or no log.
 */
async function lastProviderWait(agents: AgentsClient, agent: Agent): Promise<ProviderLimitEvent | undefined> {
  const jobName = agent.status?.jobName;
  if (agent.status?.phase !== "Running" || !jobName) return undefined;
  try {
    const [pod] = await agents.runPods(jobName);
    const log = pod?.metadata?.name ? await agents.podLog(pod.metadata.name, "agent") : undefined;
    let last: ProviderLimitEvent | undefined;
    for (const line of (log ?? "").split("\n")) last = parseProviderLimitEvent(line) ?? last;
    return last;
  } catch {
    // The status stands without it: the pod may be gone, or the log not readable to this user.
    return undefined;
  }
}

export async function statusCommand(
  cmd: Extract<Command, { name: "status" }>,
  g: GlobalFlags,
  io: CliIo,
): Promise<number> {
  const agents = await io.connect(g);
  try {
    if (cmd.agent !== undefined) {
      const agent = await mustGet(agents, cmd.agent, io);
      printAgent(agent, g, io, formatAgentDetail(agent, await lastProviderWait(agents, agent)));
      return 0;
    }
    const list = await agents.list({
      ...(cmd.station !== undefined ? { station: cmd.station } : {}),
      ...(io.signal ? { signal: io.signal } : {}),
    });
    if (g.output) {
      io.stdout(formatObjects(list, g.output, true));
      return 0;
    }
    if (list.length === 0) {
      io.stderr(
        cmd.station === undefined
          ? `No resources found in ${agents.namespace} namespace.\n`
          : `No runs of Station ${cmd.station} found in ${agents.namespace} namespace.\n`,
      );
      return 0;
    }
    io.stdout(formatAgentTable(list, io.now()));
    return 0;
  } finally {
    await agents.close();
  }
}

/** Namespace, API URL and token for the prompt API; the cluster is asked only for what flags and env lack. */
async function promptApiTarget(
  cmd: Extract<Command, { name: "prompt" | "close" }>,
  g: GlobalFlags,
  io: CliIo,
): Promise<{ namespace: string; client: PromptApiClient; url: string }> {
  const fromEnv = io.env.AGENT_API_TOKEN || undefined;
  let token = cmd.token ?? fromEnv;
  let namespace = g.namespace;
  if (token === undefined || namespace === undefined) {
    const agents = await io.connect(g);
    try {
      namespace = agents.namespace;
      if (token === undefined) {
        token = await agents.secretValue(REALTIME_SECRET, API_TOKEN_KEY, io.signal).catch((err: unknown) => {
          throw new CliError(
            `cannot read the ${API_TOKEN_KEY} of Secret ${REALTIME_SECRET} in namespace ${namespace}: ${(err as Error).message}; pass --token or set AGENT_API_TOKEN`,
          );
        });
        if (token === undefined || token === "") {
          throw new CliError(
            `no api token: Secret ${REALTIME_SECRET} in namespace ${namespace} has no ${API_TOKEN_KEY} (is the realtime component installed?); pass --token or set AGENT_API_TOKEN`,
          );
        }
        token = token.trim();
      }
    } finally {
      await agents.close();
    }
  }
  const url = cmd.apiUrl ?? (io.env.AGENT_API_URL || undefined) ?? defaultApiUrl(namespace);
  return {
    namespace,
    url,
    client: new PromptApiClient({
      baseUrl: url,
      token,
      ...(io.fetch ? { fetch: io.fetch } : {}),
      sleep: io.sleep,
    }),
  };
}

function promptApiFailure(err: unknown, url: string): never {
  if (err instanceof PromptUnavailableError) {
    throw new CliError(
      `the prompt API answered ${err.status} ${err.serverMessage} ${err.attempts} times; check the Agent's phase (kubectl agent status)`,
    );
  }
  if (err instanceof PromptApiError)
    throw new CliError(`the prompt API answered ${err.status}: ${err.serverMessage}`);
  if (err instanceof CliError) throw err;
  const cause = (err as { cause?: { message?: string } }).cause?.message;
  throw new CliError(
    `cannot reach the prompt API at ${url}: ${cause ?? (err as Error).message} (outside the cluster, pass --api-url or set AGENT_API_URL)`,
  );
}

export async function promptCommand(
  cmd: Extract<Command, { name: "prompt" }>,
  g: GlobalFlags,
  io: CliIo,
): Promise<number> {
  const text = cmd.text === "-" ? await io.readStdin() : cmd.text;
  if (text === "") throw new CliError("the prompt read from stdin is empty");
  const target = await promptApiTarget(cmd, g, io);
  try {
    const reply = await target.client.prompt(target.namespace, cmd.agent, text, io.signal);
    io.stdout(
      g.output === "json" || g.output === "yaml"
        ? formatValue(reply, g.output)
        : `turn=${reply.turn} queued=${reply.queued} sessionId=${reply.sessionId}\n`,
    );
    return 0;
  } catch (err) {
    promptApiFailure(err, target.url);
  }
}

export async function closeCommand(
  cmd: Extract<Command, { name: "close" }>,
  g: GlobalFlags,
  io: CliIo,
): Promise<number> {
  const target = await promptApiTarget(cmd, g, io);
  try {
    const reply = await target.client.close(target.namespace, cmd.agent, io.signal);
    io.stdout(
      g.output === "json" || g.output === "yaml" ? formatValue(reply, g.output) : `queued=${reply.queued}\n`,
    );
    return 0;
  } catch (err) {
    promptApiFailure(err, target.url);
  }
}

export async function validateCommand(
  cmd: Extract<Command, { name: "validate" }>,
  io: CliIo,
): Promise<number> {
  const { sources, problems: unreadable } = await readManifestSources(cmd.files, cmd.recursive, io.readStdin);
  const report = validateManifests(sources, { schemaOnly: cmd.schemaOnly });
  const problems = [...unreadable, ...report.problems];
  for (const p of problems) io.stdout(`${formatProblem(p)}\n`);
  const files = `${sources.length} file${sources.length === 1 ? "" : "s"}`;
  const docs = `${report.checked} object${report.checked === 1 ? "" : "s"}`;
  const skipped = report.skipped > 0 ? `, ${report.skipped} of other kinds skipped` : "";
  io.stderr(
    problems.length === 0
      ? `${docs} in ${files} valid${skipped}\n`
      : `${problems.length} problem${problems.length === 1 ? "" : "s"} in ${docs} in ${files}${skipped}\n`,
  );
  return problems.length === 0 ? 0 : 1;
}
