/**
 * `tsx src/gateway/main.ts`: the model gateway as a process of its own (docs/gateway.md). Bad
 * settings stop it at start with a message naming the variable and exit code 1.
 */
import { hostname } from "node:os";
import { KubeClient } from "../kube/client.js";
import { type JsonLineLogger, jsonLineLogger } from "../log.js";
import { directoryKeySource, loggingUsageStore, readCredentialKey, unwiredRunLookup } from "./adapters.js";
import type { BudgetGate } from "./budget-gate.js";
import { clusterPorts } from "./cluster-ports.js";
import { type GatewayConfig, parseGatewayConfig, type RunSource } from "./config.js";
import type { EgressRefusal } from "./egress/proxy-server.js";
import { egressAuthorizer } from "./egress-authorize.js";
import { egressRefusalRecorder } from "./egress-refusals.js";
import { GatewayMetrics } from "./metrics.js";
import type { KeySource, RunLookup, UsageStore } from "./ports.js";
import type { RunWarnings } from "./run-warnings.js";
import { startGatewayServers } from "./server.js";
import { upstreamPools } from "./upstreams.js";

/** A GET the gateway waits for before it answers a request 503 (or from its cache): well inside a CLI's patience. */
const KUBE_REQUEST_TIMEOUT_MS = 5_000;

interface RunPorts {
  runs: RunLookup;
  keys: KeySource;
  usage: UsageStore;
  budget?: Pick<BudgetGate, "admit">;
  /** Warning Events on Agents (cluster mode). */
  warnings?: Pick<RunWarnings, "warn">;
  /** Where an egress refusal goes besides the 403 (cluster mode: the usage record and an Event). */
  egressRefused?: (refusal: EgressRefusal) => void;
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
      usage: loggingUsageStore(logger),
      close: async () => {},
    };
  }
  // The ServiceAccount's token (in a pod) or the kubeconfig.
  const kube = await KubeClient.fromEnvironment(KUBE_REQUEST_TIMEOUT_MS);
  // A pod's hostname is its name.
  const ports = clusterPorts({
    kube,
    namespace: source.namespace,
    agentSecretsDir: source.agentSecretsDir,
    replica: hostname(),
    logger,
  });
  return {
    ...ports,
    egressRefused: egressRefusalRecorder(ports.egressRefusals),
    close: async () => {
      await ports.close();
      await kube.close();
    },
  };
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
  const metrics = new GatewayMetrics();
  const egress =
    config.egressPort === undefined
      ? undefined
      : {
          port: config.egressPort,
          deps: {
            authorize: egressAuthorizer({ credentialKey, runs: ports.runs }),
            ...(ports.egressRefused ? { onRefused: ports.egressRefused } : {}),
            privateCidrs: config.egressPrivateCidrs,
            metrics,
            logger,
            idleTimeoutMs: config.idleTimeoutMs,
          },
        };
  const servers = await startGatewayServers(
    {
      upstreams,
      credentialKey,
      keys: ports.keys,
      runs: ports.runs,
      usage: ports.usage,
      ...(ports.budget ? { budget: ports.budget } : {}),
      ...(ports.warnings ? { warnings: ports.warnings } : {}),
      metrics,
      logger,
      maxRequestBytes: config.maxRequestBytes,
      idleTimeoutMs: config.idleTimeoutMs,
    },
    {
      host: config.host,
      port: config.port,
      metricsPort: config.metricsPort,
      ...(egress ? { egress } : {}),
    },
  );
  logger.info("serving", {
    port: servers.port,
    metricsPort: servers.metricsPort,
    egressPort: servers.egressPort ?? "off",
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
