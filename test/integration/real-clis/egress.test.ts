/**
 * The REAL claude with egress behind the model gateway (docs/gateway.md#egress), on the real node:
 * the controller with AGENT_GATEWAY_URL and AGENT_GATEWAY_EGRESS_URL gives every container of the
 * run pod its own proxy credential. The init downloads the Agent's spec.files and clones the forge's
 * repository through the gateway's egress listener, the courier pushes and opens the pull request
 * through it, and claude calls its model straight at the gateway (NO_PROXY). Told by its model to,
 * claude then probes the network through the proxy as a prompt-injected agent would: it reaches the
 * host its Station lists, and neither another host nor the forge (which would let it push the
 * workspace elsewhere). The refusals end in the Agent's status.egress.
 *
 * Everything listens on the node's one address the pods reach, so the gateway is named by a host
 * alias (agent-gateway.test): NO_PROXY holds that name, so the other services on the same address
 * are reached through the proxy and not around it. The integration plane's node enforces no
 * NetworkPolicy: that a run pod reaches no host directly is test/own-node/network-policy.test.ts's.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClusterPorts, clusterPorts } from "../../../src/gateway/cluster-ports.js";
import { STATIONS } from "../../../src/kube/resources.js";
import {
  type AnthropicMessagesServer,
  startAnthropicMessages,
} from "../../fakes/models/anthropic-messages.js";
import { podReachableHost, REAL_CLI_STATION_IMAGE, realNodePodTemplate } from "../../harness/context.js";
import { PROBE_DONE, probeOutputSeen, probeThen } from "../../support/egress-probe.js";
import { startTestTarget, type TestTarget } from "../../support/http-proxy.js";
import { startTestGateway, type TestGateway } from "../gateway/gateway-cluster.js";
import {
  API_KEY_NAME,
  createAgent,
  createDefinition,
  finishedAgent,
  forgeRecipe,
  keySecret,
  type RealCliEnv,
  realClisSkipReason,
  startRealCliEnv,
} from "./setup.js";

const skip = realClisSkipReason();
const quiet = { info() {}, warn() {}, error() {} };
const GATEWAY_NAME = "agent-gateway.test";
const RUN_TIMEOUT_MS = 420_000;
const NOTES = "notes the init fetched through the proxy";

let env: RealCliEnv;
let model: AnthropicMessagesServer;
let gateway: TestGateway;
let ports: ClusterPorts | undefined;
/** spec.files' host (the init's), what the Station lists (the agent's), and nobody's. */
let files: TestTarget;
let docs: TestTarget;
let elsewhere: TestTarget;
const host = podReachableHost();
const dir = mkdtempSync(join(tmpdir(), "gw-egress-clis-"));

describe.skipIf(skip)("the real claude with egress behind the gateway", () => {
  beforeAll(async () => {
    model = await startAnthropicMessages(host);
    [files, docs, elsewhere] = await Promise.all([
      startTestTarget(NOTES, host),
      startTestTarget("docs", host),
      startTestTarget("elsewhere", host),
    ]);
    const secretsDir = join(dir, "agent-secrets");
    const keyFile = join(dir, "credential-key");
    const credentialKey = Buffer.from(randomBytes(32).toString("hex"));
    writeFileSync(keyFile, `${credentialKey}\n`);
    mkdirSync(secretsDir);
    writeFileSync(join(secretsDir, API_KEY_NAME.anthropic), "sk-ant-gateway-only-key\n");
    gateway = await startTestGateway({
      ports: () => {
        if (!ports) throw new Error("the gateway's cluster ports are not wired yet");
        return ports;
      },
      upstreams: { anthropic: model.origin, openai: "http://127.0.0.1:9", gemini: "http://127.0.0.1:9" },
      credentialKey,
      host,
      // The node's address is private: the installation lists it, as one with an in-cluster forge would.
      egress: { privateCidrs: [`${host}/32`] },
    });
    env = await startRealCliEnv({
      prefix: "real-egress",
      model,
      baseUrls: {},
      keys: {},
      forge: { "acme/app": { "README.md": "# App\n" } },
      controllerEnv: {
        AGENT_GATEWAY_URL: `http://${GATEWAY_NAME}:${gateway.port}`,
        AGENT_GATEWAY_EGRESS_URL: `http://${GATEWAY_NAME}:${gateway.egressPort}`,
        AGENT_GATEWAY_CREDENTIAL_KEY_FILE: keyFile,
        // The Station names the gateway by a host alias, a field the installation must allow.
        RUN_POD_FIELDS: "hostAliases",
      },
    });
    ports = clusterPorts({
      kube: env.client,
      namespace: env.ns,
      agentSecretsDir: secretsDir,
      replica: "agent-gateway-test",
      logger: quiet,
    });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await ports?.close();
    await env?.close();
    await Promise.all([files, docs, elsewhere].map((t) => t?.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    "the init and the courier reach the forge and the file through the proxy; claude reaches its Station's host only, not another host nor the forge",
    async () => {
      const name = "egress-claude";
      const recipe = forgeRecipe(env, "acme/app");
      await createDefinition(env, name, {
        model: "claude-sonnet-4-6",
        prompt: "Probe the network.",
        permission_mode: "bypass",
        resources: { ...recipe.resources, secrets: [keySecret("anthropic")] },
        delivery: recipe.delivery,
      });
      await env.client.create(STATIONS, env.ns, {
        apiVersion: "agents.re-cinq.com/v1beta1",
        kind: "Station",
        metadata: { name },
        spec: {
          agentDefRef: name,
          deadlineMinutes: 5,
          egress: { allowHosts: [`${host}:${docs.port}`] },
          template: {
            spec: {
              ...realNodePodTemplate(),
              hostAliases: [{ ip: host, hostnames: [GATEWAY_NAME] }],
              containers: [{ name: "agent", image: REAL_CLI_STATION_IMAGE }],
            },
          },
        },
      });
      const forge = new URL(env.forge?.git.url ?? "");
      const forgeTarget = `${forge.hostname}:${forge.port}`;
      const targets = [`${host}:${docs.port}`, `${host}:${elsewhere.port}`, forgeTarget];
      model.script([
        {
          text: "Probing.",
          toolCall: {
            name: "Bash",
            input: {
              command: probeThen(
                targets,
                "cat /workspace/notes.txt",
                "printf 'egress\\n' > /workspace/app/EGRESS.md",
              ),
              description: "probe",
            },
          },
          usage: { input: 100, output: 10 },
        },
        { text: "Done.", usage: { input: 100, output: 10 } },
      ]);
      await createAgent(env, name, name, {
        files: [{ path: "notes.txt", url: `http://${host}:${files.port}/notes.txt` }],
      });
      const agent = await finishedAgent(env, name, RUN_TIMEOUT_MS);
      expect(agent.status?.failureReason ?? "").toBe("");
      expect(agent.status?.phase).toBe("Succeeded");

      // What claude saw went back to the model in its next request.
      const seen = probeOutputSeen(model.journal());
      expect(seen, "the probe ran and its output reached the model").toContain(PROBE_DONE);
      expect(seen).toContain(`PROBE ${host}:${docs.port} => HTTP/1.1 200 Connection Established`);
      expect(seen).toContain(`PROBE ${host}:${elsewhere.port} => HTTP/1.1 403 Forbidden`);
      expect(seen).toContain(`PROBE ${forgeTarget} => HTTP/1.1 403 Forbidden`);
      // The init fetched the file through the proxy (the node's address is not in NO_PROXY).
      expect(seen).toContain(NOTES);
      expect(files.seen.map((s) => s.path)).toEqual(["/notes.txt"]);
      expect(elsewhere.seen).toEqual([]);

      // The courier pushed and opened the pull request through the proxy.
      const pulls = env.forge?.github.pulls.filter((p) => p.head === `agent/${name}`) ?? [];
      expect(pulls).toHaveLength(1);
      expect(agent.status?.prUrl).toBe(pulls[0]?.htmlUrl);

      // The refusals, as the Agent's status has them.
      expect(agent.status?.egress?.destinations).toEqual(
        expect.arrayContaining([`agent ${host}:${elsewhere.port}`, `agent ${forgeTarget}`]),
      );
      expect(agent.status?.egress?.destinations).not.toContain(`agent ${host}:${docs.port}`);
      expect(agent.status?.egress?.refused).toBeGreaterThanOrEqual(2);
    },
    RUN_TIMEOUT_MS + 60_000,
  );
});
