/**
 * `npm run controller`: one replica against the current kubeconfig (in cluster: the service
 * account). Bad settings stop it at startup with the exact message and exit code 1.
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { startAdmissionServer, subjectAccessReviewer } from "../admission/index.js";
import { KubeClient } from "../kube/client.js";
import { apiEventWriter } from "../kube/event-writer.js";
import { SECRETS } from "../kube/resources.js";
import { agentSecretsReader, retryFromEnv, SinkDispatcher } from "../sinks/index.js";
import { admissionCertificateCheck, admissionNetworkCheck } from "./admission-self-checks.js";
import { ConfigError, parseConfig } from "./config.js";
import { EventRecorder } from "./kube-events/recorder.js";
import { ControllerMetrics } from "./metrics.js";
import { ControllerReplica } from "./process.js";
import { startControllerPromptApi } from "./prompt-api-wiring.js";
import { type SelfCheck, startSelfChecks } from "./self-checks.js";

/** Lookups of one admission review; the webhook's timeoutSeconds (5) leaves room for the answer. */
const ADMISSION_LOOKUP_TIMEOUT_MS = 3_000;

/**
 * Between two rounds of a replica's self-checks: a renewed certificate reaches the pod about a
 * minute after its Secret changes; a finding is said once, then hourly while it lasts.
 */
const SELF_CHECK_INTERVAL_MS = 60_000;

const SA_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

function readServiceAccountNamespace(): string | undefined {
  try {
    return readFileSync(SA_NAMESPACE_FILE, "utf8");
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  let config: ReturnType<typeof parseConfig>;
  try {
    config = parseConfig(process.env, {
      serviceAccountNamespace: readServiceAccountNamespace(),
      fallbackPodName: hostname(),
      readFile: (path) => readFileSync(path),
    });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  const client = await KubeClient.fromEnvironment();
  // Batch runs' sink events and a run's egress event (docs/gateway.md#egress); http sink header blocks come from agent-secrets (batch component's grant).
  const metrics = new ControllerMetrics();
  const sinks = new SinkDispatcher({
    readSecretKey: agentSecretsReader((ns, name) => client.get(SECRETS, ns, name)),
    retry: retryFromEnv(process.env),
    onOutcome: (outcome) => metrics.sinkDeliveries.inc({ outcome }),
  });
  const replica = new ControllerReplica({ config, client, sinks, metrics });
  await replica.start();
  // The prompt API serves on every replica (it only forwards), and only with the realtime component.
  const promptApi = config.realtimeEnabled
    ? await startControllerPromptApi({ config, client, port: config.promptApiPort, host: config.healthHost })
    : undefined;
  // The admission webhook serves on every replica too (reads only, answers with warnings only).
  const admission = config.admissionEnabled
    ? await startAdmissionServer({
        namespace: config.namespace,
        modes: {
          batchEnabled: config.batchEnabled,
          realtimeEnabled: config.realtimeEnabled,
          deliveryTargetRepos: config.deliveryTargetRepos,
          deliveryBranchPrefix: config.deliveryBranchPrefix,
          runPodPolicy: config.runPodPolicy,
        },
        reader: client,
        mayRead: subjectAccessReviewer(client, config.namespace),
        lookupTimeoutMs: ADMISSION_LOOKUP_TIMEOUT_MS,
        port: config.admissionPort,
        host: config.healthHost,
        tls: {
          certFile: join(config.admissionCertDir, "tls.crt"),
          keyFile: join(config.admissionCertDir, "tls.key"),
        },
      })
    : undefined;
  // Mistakes in the installation that would otherwise fail silently (src/controller/self-checks.ts).
  const selfChecks: SelfCheck[] = config.admissionEnabled
    ? [
        admissionNetworkCheck(client, {
          namespace: config.namespace,
          podIp: config.podIp,
          podName: config.podName,
          port: config.admissionPort,
        }),
        admissionCertificateCheck({
          certFile: join(config.admissionCertDir, "tls.crt"),
          service: config.admissionServiceName,
          namespace: config.namespace,
        }),
      ]
    : [];
  const selfCheckEvents = new EventRecorder({
    writer: apiEventWriter(client),
    reportingInstance: config.podName,
  });
  const stopSelfChecks = startSelfChecks({
    checks: selfChecks,
    events: selfCheckEvents,
    pod: { namespace: config.namespace, name: config.podName, uid: config.podUid },
    log: (line) => console.error(JSON.stringify(line)),
    intervalMs: SELF_CHECK_INTERVAL_MS,
  });
  console.log(
    JSON.stringify({
      level: "info",
      msg: `agent-controller ${config.podName} serving namespace ${config.namespace}; health on :${replica.health?.port}`,
    }),
  );
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(JSON.stringify({ level: "info", msg: `${signal}: shutting down` }));
    stopSelfChecks();
    await selfCheckEvents.stop(1_000);
    await promptApi?.close();
    await admission?.close();
    await replica.stop({ releaseLease: true });
    await client.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

main().catch((err) => {
  console.error(String(err?.stack ?? err));
  process.exit(1);
});
