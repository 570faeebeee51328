/**
 * `tsx src/gateway/main.ts`: the model gateway as a process of its own (docs/gateway.md). Bad
 * settings stop it at start with a message naming the variable and exit code 1.
 */
import type { Agent, AgentDefinition, Station } from "../core/types.js";
import { KubeClient } from "../kube/client.js";
import { AGENT_DEFINITIONS, AGENTS, STATIONS } from "../kube/resources.js";
import { type JsonLineLogger, jsonLineLogger } from "../log.js";
import { directoryKeySource, loggingUsageStore, readCredentialKey, unwiredRunLookup } from "./adapters.js";
import { type GatewayConfig, parseGatewayConfig, type RunSource } from "./config.js";
import { definitionKeySource } from "./definition-keys.js";
import { GatewayMetrics } from "./metrics.js";
import type { KeySource, RunLookup } from "./ports.js";
import { ClusterRunLookup } from "./run-lookup.js";
import { startGatewayServers } from "./server.js";
import { upstreamPools } from "./upstreams.js";

/** A GET the gateway waits for before it answers a request 503 (or from its cache): well inside a CLI's patience. */
const KUBE_REQUEST_TIMEOUT_MS = 5_000;
/** At most one "answering from the cache" warning this often, however many requests an outage meets. */
const STALE_WARNING_MS = 10_000;

interface RunPorts {
  runs: RunLookup;
  keys: KeySource;
  close(): Promise<void>;
}

async function runPorts(source: RunSource, logger: JsonLineLogger): Promise<RunPorts> {
  if (source.mode === "standalone") {
    logger.warn(
      "GATEWAY_MODE=standalone: no Agent is looked up, so a run credential works until the gateway key changes",
    );
    return {
      runs: unwiredRunLookup,
      keys: directoryKeySource(source.providerKeysDir),
      close: async () => {},
    };
  }
  // The ServiceAccount's token (in a pod) or the kubeconfig: get on agents, stations, agentdefinitions.
  const kube = await KubeClient.fromEnvironment(KUBE_REQUEST_TIMEOUT_MS);
  let warnedAt = Number.NEGATIVE_INFINITY;
  const runs = new ClusterRunLookup({
    namespace: source.namespace,
    getAgent: (ns, name) => kube.get<Agent>(AGENTS, ns, name),
    onStale: (run, err) => {
      if (Date.now() - warnedAt < STALE_WARNING_MS) return;
      warnedAt = Date.now();
      logger.warn("the API server cannot be asked; answering from a recent Agent read", {
        agent: `${run.namespace}/${run.name}`,
        error: (err as Error)?.message ?? String(err),
      });
    },
  });
  const keys = definitionKeySource({
    namespace: source.namespace,
    secretsDir: source.agentSecretsDir,
    stationOf: (run) => runs.stationOf(run),
    getStation: (ns, name) => kube.get<Station>(STATIONS, ns, name),
    getDefinition: (ns, name) => kube.get<AgentDefinition>(AGENT_DEFINITIONS, ns, name),
  });
  return { runs, keys, close: () => kube.close() };
}

async function main(): Promise<void> {
  const logger = jsonLineLogger("gateway");
  let config: GatewayConfig;
  let credentialKey: Buffer;
  try {
    config = parseGatewayConfig(process.env);
    credentialKey = await readCredentialKey(config.credentialKeyFile);
  } catch (err) {
    // A config error and an unreadable or short key both name the variable: say it and stop.
    console.error((err as Error).message);
    process.exit(1);
  }
  const ports = await runPorts(config.runs, logger);
  const upstreams = upstreamPools(config);
  const servers = await startGatewayServers(
    {
      upstreams,
      credentialKey,
      keys: ports.keys,
      runs: ports.runs,
      usage: loggingUsageStore(logger),
      metrics: new GatewayMetrics(),
      logger,
      maxRequestBytes: config.maxRequestBytes,
      idleTimeoutMs: config.idleTimeoutMs,
    },
    { host: config.host, port: config.port, metricsPort: config.metricsPort },
  );
  logger.info("serving", {
    port: servers.port,
    metricsPort: servers.metricsPort,
    upstreams: config.upstreams,
    mode: config.runs.mode,
    ...(config.runs.mode === "cluster" ? { namespace: config.runs.namespace } : {}),
  });
  const stop = async () => {
    await servers.close(30_000);
    await Promise.all([...Object.values(upstreams).map((p) => p.close()), ports.close()]);
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop());
  process.once("SIGINT", () => void stop());
}

main().catch((err) => {
  console.error(String(err?.stack ?? err));
  process.exit(1);
});
