/**
 * The admission webhook end to end: the controller process (`npm run controller` with
 * ADMISSION_ENABLED) serves it over TLS on 127.0.0.1, the shipped ValidatingWebhookConfiguration
 * (deploy/components/admission/webhook.yaml) is registered against it by URL with the caBundle,
 * and `kubectl create` prints the warnings while the objects are still created, to a user who may
 * read what they describe (a launcher that may only create Agents is told nothing). Reviews sent
 * straight to the port by anyone (the request that used to exhaust the heap among them) leave the
 * controller reconciling. With the controller gone, failurePolicy Ignore lets writes through.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { copyFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { KubeClient } from "../../../src/kube/client.js";
import { AGENT_DEFINITIONS, AGENTS, STATIONS } from "../../../src/kube/resources.js";
import { generateServingCert } from "../../harness/certs.js";
import {
  controlPlaneState,
  createTestNamespace,
  eventually,
  kubeConfig,
  kubeconfigPath,
  podScriptAnnotations,
} from "../../harness/context.js";
import { freePort } from "../../harness/ports.js";
import {
  clientFor,
  createAgent,
  createDefinition,
  createStation,
  waitForPhase,
} from "../controller/helpers.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, "../../..");
const MAIN = join(REPO, "src/controller/main.ts");
const WEBHOOKS = {
  group: "admissionregistration.k8s.io",
  version: "v1",
  plural: "validatingwebhookconfigurations",
};

interface Kubectl {
  code: number | null;
  stdout: string;
  stderr: string;
}

function kubectl(args: string[], input?: string): Promise<Kubectl> {
  return new Promise((resolve, reject) => {
    const p = spawn("kubectl", ["--kubeconfig", kubeconfigPath(), ...args], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => {
      stdout += d;
    });
    p.stderr.on("data", (d) => {
      stderr += d;
    });
    p.on("error", reject);
    p.on("close", (code) => resolve({ code, stdout, stderr }));
    p.stdin.end(input ?? "");
  });
}

const warningsOf = (r: Kubectl): string[] =>
  r.stderr
    .split("\n")
    .filter((l) => l.startsWith("Warning: "))
    .map((l) => l.slice("Warning: ".length));

const GV = "agents.re-cinq.com/v1beta1";
const agentYaml = (name: string, station: string, extra = "") =>
  `apiVersion: ${GV}\nkind: Agent\nmetadata:\n  name: ${name}\nspec:\n  stationRef: ${station}\n${extra}`;
const stationYaml = (name: string, def: string) =>
  `apiVersion: ${GV}\nkind: Station\nmetadata:\n  name: ${name}\nspec:\n  agentDefRef: ${def}\n  template:\n    spec:\n      containers:\n        - name: agent\n          image: example.test/agent:1\n`;
const definitionYaml = (name: string, extra = "") =>
  `apiVersion: ${GV}\nkind: AgentDefinition\nmetadata:\n  name: ${name}\nspec:\n  prompt: Summarise {topic}.\n${extra}`;

let ns = "";
let webhookName = "";
let client: KubeClient;
let certDir = "";
let child: ChildProcess | undefined;
let exited: Promise<number | null> | undefined;
let admissionPort = 0;

/** POSTs a body to the webhook as any pod could: no client certificate, the server's unverified. */
function postReview(body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: admissionPort,
        method: "POST",
        path: "/validate",
        headers: { "content-type": "application/json" },
        rejectUnauthorized: false,
        agent: false,
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function registerWebhook(port: number, caBundle: string): Promise<void> {
  const shipped = parse(await readFile(join(REPO, "deploy/components/admission/webhook.yaml"), "utf8"));
  const config = structuredClone(shipped);
  config.metadata = { name: webhookName, labels: shipped.metadata.labels };
  for (const w of config.webhooks) {
    w.clientConfig = { url: `https://127.0.0.1:${port}/validate`, caBundle };
    w.namespaceSelector = { matchLabels: { "kubernetes.io/metadata.name": ns } };
  }
  await client.request("POST", `/apis/${WEBHOOKS.group}/${WEBHOOKS.version}/${WEBHOOKS.plural}`, {
    body: config,
  });
}

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  ns = await createTestNamespace("admission");
  webhookName = `agent-admission-${ns}`;
  certDir = await mkdtemp(join(tmpdir(), "admission-certs-"));
  const planeDir = controlPlaneState().dir;
  await copyFile(join(planeDir, "ca.crt"), join(certDir, "ca.crt"));
  await copyFile(join(planeDir, "ca.key"), join(certDir, "ca.key"));
  const serving = await generateServingCert(certDir, "admission");
  await copyFile(serving.cert, join(certDir, "tls.crt"));
  await copyFile(serving.key, join(certDir, "tls.key"));

  const healthPort = await freePort();
  admissionPort = await freePort();
  // The Deployment's memory limit is 512 MiB; the heap limit here makes exhausting it as fatal.
  child = spawn(process.execPath, ["--max-old-space-size=512", "--import", "tsx", MAIN], {
    env: {
      ...process.env,
      KUBECONFIG: kubeconfigPath(),
      NAMESPACE: ns,
      POD_NAME: "admission-smoke",
      HEALTH_PORT: String(healthPort),
      HEALTH_HOST: "127.0.0.1",
      ADMISSION_ENABLED: "true",
      ADMISSION_PORT: String(admissionPort),
      ADMISSION_CERT_DIR: certDir,
      BATCH_ENABLED: "false",
      REALTIME_ENABLED: "false",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  exited = new Promise((resolve) => child?.on("exit", (code) => resolve(code)));
  await eventually(
    "controller /readyz",
    async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`)).ok,
  );

  const caBundle = (await readFile(join(certDir, "ca.crt"))).toString("base64");
  await registerWebhook(admissionPort, caBundle);
  // The API server picks up a new webhook configuration asynchronously: probe with server-side
  // dry runs (the webhook has no side effects) until its warning comes back.
  await eventually(
    "the webhook's first warning",
    async () =>
      warningsOf(
        await kubectl(["-n", ns, "create", "--dry-run=server", "-f", "-"], agentYaml("probe", "nowhere")),
      ).length > 0,
    60_000,
    500,
  );
}, 180_000);

afterAll(async () => {
  child?.kill("SIGKILL");
  if (webhookName) {
    await client
      ?.request("DELETE", `/apis/${WEBHOOKS.group}/${WEBHOOKS.version}/${WEBHOOKS.plural}/${webhookName}`)
      .catch(() => undefined);
  }
  await client?.close();
  if (certDir) await rm(certDir, { recursive: true, force: true });
});

describe("kubectl create through the admission webhook", () => {
  it("warns that the Station does not exist, and still creates the Agent", async () => {
    const r = await kubectl(["-n", ns, "create", "-f", "-"], agentYaml("orphan", "no-such-station"));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("agent.agents.re-cinq.com/orphan created");
    expect(warningsOf(r)).toEqual([
      `Station no-such-station does not exist in namespace ${ns}: the controller will fail this Agent with "Station no-such-station not found"`,
    ]);
    expect(await client.get(AGENTS, ns, "orphan")).toBeDefined();
  });

  it("warns that a Station's AgentDefinition does not exist, and still creates the Station", async () => {
    const r = await kubectl(["-n", ns, "create", "-f", "-"], stationYaml("lonely", "no-such-def"));
    expect(r.code).toBe(0);
    expect(warningsOf(r)).toEqual([
      `AgentDefinition no-such-def does not exist in namespace ${ns}: Agents of this Station will fail with "AgentDefinition no-such-def not found" until it is created`,
    ]);
    expect(await client.get(STATIONS, ns, "lonely")).toBeDefined();
  });

  it("warns that batch execution is disabled on this controller, and still creates the AgentDefinition", async () => {
    const r = await kubectl(
      ["-n", ns, "create", "-f", "-"],
      definitionYaml("batchy", "  execution: batch\n"),
    );
    expect(r.code).toBe(0);
    expect(warningsOf(r)).toEqual([
      'spec.execution: Agents using this AgentDefinition will fail with "batch execution is disabled on this controller"',
    ]);
    expect(await client.get(AGENT_DEFINITIONS, ns, "batchy")).toBeDefined();
  });

  it("names each headers_secret / token_secret key missing from agent-secrets", async () => {
    const secret = await kubectl([
      "-n",
      ns,
      "create",
      "secret",
      "generic",
      "agent-secrets",
      "--from-literal=gh-token=x",
    ]);
    expect(secret.code).toBe(0);
    const def = definitionYaml(
      "keyed",
      [
        "  resources:",
        "    repos:",
        "      - name: site",
        "        url: re-cinq/site",
        "        token_secret: gh-token",
        "    conversation:",
        "      source: https://conv.example.com",
        "      headers_secret: conv-auth",
        "",
      ].join("\n"),
    );
    const r = await kubectl(["-n", ns, "create", "-f", "-"], def);
    expect(r.code).toBe(0);
    expect(warningsOf(r)).toEqual([
      `spec.resources.conversation.headers_secret: key "conv-auth" is not in Secret agent-secrets in namespace ${ns}`,
    ]);

    expect((await kubectl(["-n", ns, "create", "-f", "-"], stationYaml("keyed-st", "keyed"))).code).toBe(0);
    const agent = await kubectl(
      ["-n", ns, "create", "-f", "-"],
      agentYaml(
        "files-run",
        "keyed-st",
        "  files:\n    - path: brief.md\n      url: https://files.example.com/brief.md\n      headers_secret: files-auth\n",
      ),
    );
    expect(agent.code).toBe(0);
    expect(warningsOf(agent)).toEqual([
      `spec.files[0].headers_secret: key "files-auth" is not in Secret agent-secrets in namespace ${ns}`,
      `AgentDefinition keyed spec.resources.conversation.headers_secret: key "conv-auth" is not in Secret agent-secrets in namespace ${ns}`,
    ]);
  });

  it("says nothing about a consistent set", async () => {
    const def = await kubectl(["-n", ns, "create", "-f", "-"], definitionYaml("fine"));
    const st = await kubectl(["-n", ns, "create", "-f", "-"], stationYaml("fine-st", "fine"));
    const agent = await kubectl(["-n", ns, "create", "-f", "-"], agentYaml("fine-run", "fine-st"));
    for (const r of [def, st, agent]) {
      expect(r.code).toBe(0);
      expect(warningsOf(r)).toEqual([]);
    }
  });

  it("warns that an Agent on a Station whose budget is spent will stay Pending", async () => {
    expect((await kubectl(["-n", ns, "create", "-f", "-"], definitionYaml("frugal"))).code).toBe(0);
    const station = `${stationYaml("frugal-st", "frugal")}  budget:\n    limitUSD: 0\n    window: 24h\n`;
    expect((await kubectl(["-n", ns, "create", "-f", "-"], station)).code).toBe(0);
    const r = await kubectl(["-n", ns, "create", "-f", "-"], agentYaml("frugal-run", "frugal-st"));
    expect(r.code).toBe(0);
    expect(warningsOf(r)).toEqual([
      "this Agent will stay Pending: budget of Station frugal-st reached: $0 spent of $0 in the last 24h; a limit of 0 holds every new run until the budget is raised",
    ]);
  });

  it("tells a user who may only create Agents nothing about Stations or agent-secrets", async () => {
    const rbac = [
      "apiVersion: rbac.authorization.k8s.io/v1",
      "kind: Role",
      "metadata:\n  name: launcher-only",
      "rules:\n  - apiGroups: [agents.re-cinq.com]\n    resources: [agents]\n    verbs: [create, get]",
      "---",
      "apiVersion: rbac.authorization.k8s.io/v1",
      "kind: RoleBinding",
      "metadata:\n  name: launcher-only",
      "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: launcher-only",
      "subjects:\n  - apiGroup: rbac.authorization.k8s.io\n    kind: User\n    name: launcher-only",
    ].join("\n");
    expect((await kubectl(["-n", ns, "apply", "-f", "-"], rbac)).code).toBe(0);
    const agent = agentYaml(
      "launched",
      "no-such-station",
      "  files:\n    - path: a.md\n      url: https://files.example.com/a.md\n      headers_secret: files-auth\n",
    );
    // The same object from an operator is warned about both (previous tests show the wording).
    const r = await kubectl(["-n", ns, "--as", "launcher-only", "create", "-f", "-"], agent);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("agent.agents.re-cinq.com/launched created");
    expect(warningsOf(r)).toEqual([]);
    const operator = await kubectl(
      ["-n", ns, "create", "--dry-run=server", "-f", "-"],
      agent.replace("launched", "operator-run"),
    );
    expect(warningsOf(operator)).toEqual([
      `Station no-such-station does not exist in namespace ${ns}: the controller will fail this Agent with "Station no-such-station not found"`,
      `spec.files[0].headers_secret: key "files-auth" is not in Secret agent-secrets in namespace ${ns}`,
    ]);
  });

  it("survives the reviews that used to exhaust its heap, sent by anyone, and keeps reconciling", async () => {
    const reviewOf = (spec: unknown) =>
      JSON.stringify({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: {
          uid: "attack",
          kind: { group: "agents.re-cinq.com", version: "v1beta1", kind: "Agent" },
          operation: "CREATE",
          namespace: ns,
          object: { apiVersion: GV, kind: "Agent", metadata: { name: "attack" }, spec },
        },
      });
    const invalidFiles = (n: number) =>
      reviewOf({ stationRef: "s", files: Array.from({ length: n }, () => ({})) });
    // 1.2 MB with 400,000 invalid entries killed the controller (heap out of memory); the
    // 45,000-entry one fits the value bound and reaches the schema check.
    const crash = invalidFiles(400_000);
    const statuses = await Promise.all([
      postReview(crash),
      postReview(crash),
      postReview(invalidFiles(45_000)),
      postReview(`{"a":${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}}`),
    ]);
    expect(statuses).toEqual([413, 413, 200, 413]);
    expect(child?.exitCode).toBeNull();

    await createDefinition(client, ns, "after-attack");
    await createStation(client, ns, "after-attack", "after-attack", {
      annotations: podScriptAnnotations({ exitCode: 0 }),
    });
    await createAgent(client, ns, "after-attack", "after-attack");
    const done = await waitForPhase(client, ns, "after-attack", ["Succeeded", "Failed"]);
    expect(done.status?.phase).toBe("Succeeded");
    expect(child?.exitCode).toBeNull();
  });

  it("never blocks a write when the controller is down (failurePolicy Ignore)", async () => {
    child?.kill("SIGTERM");
    expect(await exited).toBe(0);
    child = undefined;
    const r = await kubectl(["-n", ns, "create", "-f", "-"], agentYaml("while-down", "no-such-station"));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("agent.agents.re-cinq.com/while-down created");
    expect(warningsOf(r)).toEqual([]);
  });
});
