import { describe, expect, it } from "vitest";
import { AGENT_CLIS } from "../core/cli/agent-clis.js";
import { WIDENABLE_FIELDS } from "../core/policy/station-template/fields.js";
import { VERSION } from "../version.js";
import { DEFAULT_AGENT_IMAGE, DEFAULT_TIMINGS, parseConfig } from "./config.js";

const base = { POD_NAME: "agent-controller-0" };
const WIDENING = [...WIDENABLE_FIELDS].join(", ");

describe("parseConfig defaults", () => {
  it("uses the docs/controller.md#configuration defaults", () => {
    const c = parseConfig(base);
    expect(c).toEqual({
      namespace: "ai-agents",
      podName: "agent-controller-0",
      podUid: "",
      podIp: "",
      healthPort: 8081,
      healthHost: "0.0.0.0",
      promptApiPort: 8082,
      admissionEnabled: false,
      admissionPort: 9443,
      admissionCertDir: "/var/run/agent-admission/tls",
      admissionServiceName: "agent-controller-admission",
      maxOutputBytes: 262144,
      agentImage: DEFAULT_AGENT_IMAGE,
      batchEnabled: false,
      batchPollSeconds: 60,
      providerLearning: true,
      providerMaxHoldSeconds: 3600,
      stuckPodSeconds: 300,
      reconcileErrorTries: 5,
      logReadConcurrency: 2,
      realtimeEnabled: false,
      realtimeApiToken: "",
      realtimeSigningKey: "",
      githubApiUrl: "https://api.github.com",
      githubServerUrl: "https://github.com",
      deliveryTargetRepos: [],
      deliveryBranchPrefix: "",
      runPodPolicy: { serviceAccounts: [], volumeKinds: [], secrets: [], fields: [] },
      cliVersions: {
        claude: AGENT_CLIS.claude.version,
        codex: AGENT_CLIS.codex.version,
        gemini: AGENT_CLIS.gemini.version,
        opencode: AGENT_CLIS.opencode.version,
      },
      agentBaseUrls: {},
      timings: DEFAULT_TIMINGS,
    });
  });

  it("defaults AGENT_IMAGE to this release's agent image (Dockerfile --target agent)", () => {
    expect(DEFAULT_AGENT_IMAGE).toBe(`ghcr.io/re-cinq/ai-agent-run-pod:v${VERSION}`);
  });

  it("keeps the seed's timings as defaults", () => {
    expect(DEFAULT_TIMINGS.leaseTickMs).toBe(5000);
    expect(DEFAULT_TIMINGS.leaseDurationMs).toBe(15000);
    expect(DEFAULT_TIMINGS.pollIntervalMs).toBe(15000);
  });

  it("lets the service-account namespace win over NAMESPACE", () => {
    expect(parseConfig({ ...base, NAMESPACE: "x" }, { serviceAccountNamespace: "from-sa\n" }).namespace).toBe(
      "from-sa",
    );
  });

  it("falls back to the given pod name when POD_NAME is unset", () => {
    expect(parseConfig({}, { fallbackPodName: "laptop" }).podName).toBe("laptop");
  });
});

describe("parseConfig accepted values", () => {
  it.each([
    [{ BATCH_ENABLED: "true" }, "batchEnabled", true],
    [{ BATCH_ENABLED: "false" }, "batchEnabled", false],
    [{ PROVIDER_LEARNING: "false" }, "providerLearning", false],
    [{ PROVIDER_LEARNING: "true" }, "providerLearning", true],
    [{ BATCH_POLL_SECONDS: "0" }, "batchPollSeconds", 0],
    [{ BATCH_POLL_SECONDS: "300" }, "batchPollSeconds", 300],
    [{ HEALTH_PORT: "9090" }, "healthPort", 9090],
    [{ HEALTH_HOST: "127.0.0.1" }, "healthHost", "127.0.0.1"],
    [{ PROMPT_API_PORT: "9082" }, "promptApiPort", 9082],
    [{ ADMISSION_ENABLED: "true" }, "admissionEnabled", true],
    [{ ADMISSION_PORT: "8443" }, "admissionPort", 8443],
    [{ ADMISSION_CERT_DIR: "/certs" }, "admissionCertDir", "/certs"],
    [{ MAX_OUTPUT_BYTES: "1024" }, "maxOutputBytes", 1024],
    [{}, "stuckPodSeconds", 300],
    [{ STUCK_POD_SECONDS: "20" }, "stuckPodSeconds", 20],
    [{ PROVIDER_MAX_HOLD_SECONDS: "600" }, "providerMaxHoldSeconds", 600],
    [{ RECONCILE_ERROR_TRIES: "3" }, "reconcileErrorTries", 3],
    [{ LOG_READ_CONCURRENCY: "4" }, "logReadConcurrency", 4],
    [{ NAMESPACE: "team-a" }, "namespace", "team-a"],
    [{ AGENT_IMAGE: "reg/x@sha256:abc" }, "agentImage", "reg/x@sha256:abc"],
    [{ GITHUB_API_URL: "https://ghe.example.com/api/v3" }, "githubApiUrl", "https://ghe.example.com/api/v3"],
    [{ GITHUB_API_URL: "http://127.0.0.1:8080/" }, "githubApiUrl", "http://127.0.0.1:8080"],
    [{ GITHUB_SERVER_URL: "https://ghe.example.com" }, "githubServerUrl", "https://ghe.example.com"],
    [{ GITHUB_SERVER_URL: "http://127.0.0.1:9418/git//" }, "githubServerUrl", "http://127.0.0.1:9418/git"],
    [{ DELIVERY_TARGET_REPOS: "acme/app, acme/docs" }, "deliveryTargetRepos", ["acme/app", "acme/docs"]],
    [{ DELIVERY_BRANCH_PREFIX: "team/" }, "deliveryBranchPrefix", "team/"],
    [{ DELIVERY_BRANCH_PREFIX: " " }, "deliveryBranchPrefix", ""],
    [
      { RUN_POD_SERVICE_ACCOUNTS: "runner,ci.bot", RUN_POD_VOLUME_KINDS: "secret, persistentVolumeClaim" },
      "runPodPolicy",
      {
        serviceAccounts: ["runner", "ci.bot"],
        volumeKinds: ["secret", "persistentVolumeClaim"],
        secrets: [],
        fields: [],
      },
    ],
    [
      {
        RUN_POD_SECRETS: "registry-ca, proxy.auth",
        RUN_POD_FIELDS: "tolerations,priorityClassName, hostPort",
      },
      "runPodPolicy",
      {
        serviceAccounts: [],
        volumeKinds: [],
        secrets: ["registry-ca", "proxy.auth"],
        fields: ["tolerations", "priorityClassName", "hostPort"],
      },
    ],
    [
      { REALTIME_ENABLED: "true", REALTIME_API_TOKEN: "t", REALTIME_SIGNING_KEY: "k" },
      "realtimeEnabled",
      true,
    ],
    [
      { CLAUDE_CLI_VERSION: "2.2.0", CODEX_CLI_VERSION: "0.170.0-alpha.3" },
      "cliVersions",
      {
        claude: "2.2.0",
        codex: "0.170.0-alpha.3",
        gemini: AGENT_CLIS.gemini.version,
        opencode: AGENT_CLIS.opencode.version,
      },
    ],
    [
      {
        AGENT_ANTHROPIC_BASE_URL: "https://gw.example.com/anthropic/",
        AGENT_OPENAI_BASE_URL: "http://127.0.0.1:4000/v1",
        AGENT_GEMINI_BASE_URL: "https://gw.example.com/gemini",
      },
      "agentBaseUrls",
      {
        anthropic: "https://gw.example.com/anthropic",
        openai: "http://127.0.0.1:4000/v1",
        gemini: "https://gw.example.com/gemini",
      },
    ],
  ] as const)("%j → %s = %j", (env, key, value) => {
    expect(parseConfig({ ...base, ...env })[key]).toEqual(value);
  });
});

describe("parseConfig rejects with exact messages", () => {
  it.each([
    [{ BATCH_ENABLED: "yes" }, 'BATCH_ENABLED must be "true" or "false", got: "yes"'],
    [{ PROVIDER_LEARNING: "off" }, 'PROVIDER_LEARNING must be "true" or "false", got: "off"'],
    [
      { RUN_POD_VOLUME_KINDS: "secret,hostPath" },
      'RUN_POD_VOLUME_KINDS must be comma-separated volume kinds as a pod spec spells them (e.g. secret,persistentVolumeClaim; never hostPath or gitRepo), got: "hostPath"',
    ],
    [
      { RUN_POD_VOLUME_KINDS: "gitRepo" },
      'RUN_POD_VOLUME_KINDS must be comma-separated volume kinds as a pod spec spells them (e.g. secret,persistentVolumeClaim; never hostPath or gitRepo), got: "gitRepo"',
    ],
    [
      { RUN_POD_SECRETS: "Agent_Realtime" },
      'RUN_POD_SECRETS must be comma-separated Secret names, got: "Agent_Realtime"',
    ],
    [
      { RUN_POD_FIELDS: "tolerations,hostNetwork" },
      `RUN_POD_FIELDS must be comma-separated fields of the Station template allowlist's widening (${WIDENING}), got: "hostNetwork"`,
    ],
    [
      { RUN_POD_FIELDS: "nodename" },
      `RUN_POD_FIELDS must be comma-separated fields of the Station template allowlist's widening (${WIDENING}), got: "nodename"`,
    ],
    [
      { RUN_POD_SERVICE_ACCOUNTS: "Runner" },
      'RUN_POD_SERVICE_ACCOUNTS must be comma-separated ServiceAccount names, got: "Runner"',
    ],
    [
      { DELIVERY_TARGET_REPOS: "acme/app,https://github.com/acme/x" },
      'DELIVERY_TARGET_REPOS must be comma-separated owner/name repositories, got: "https://github.com/acme/x"',
    ],
    [
      { DELIVERY_BRANCH_PREFIX: "team..x/" },
      'DELIVERY_BRANCH_PREFIX must start valid git branch names, got: "team..x/" (it contains ..)',
    ],
    [{ BATCH_ENABLED: "TRUE" }, 'BATCH_ENABLED must be "true" or "false", got: "TRUE"'],
    [{ BATCH_ENABLED: "" }, 'BATCH_ENABLED must be "true" or "false", got: ""'],
    [{ BATCH_ENABLED: " true" }, 'BATCH_ENABLED must be "true" or "false", got: " true"'],
    [{ BATCH_POLL_SECONDS: "-1" }, 'BATCH_POLL_SECONDS must be a non-negative integer, got: "-1"'],
    [{ BATCH_POLL_SECONDS: "1.5" }, 'BATCH_POLL_SECONDS must be a non-negative integer, got: "1.5"'],
    [{ BATCH_POLL_SECONDS: "60s" }, 'BATCH_POLL_SECONDS must be a non-negative integer, got: "60s"'],
    [{ BATCH_POLL_SECONDS: "" }, 'BATCH_POLL_SECONDS must be a non-negative integer, got: ""'],
    [{ BATCH_POLL_SECONDS: "1e3" }, 'BATCH_POLL_SECONDS must be a non-negative integer, got: "1e3"'],
    [{ REALTIME_ENABLED: "1" }, 'REALTIME_ENABLED must be "true" or "false", got: "1"'],
    [{ ADMISSION_ENABLED: "on" }, 'ADMISSION_ENABLED must be "true" or "false", got: "on"'],
    [{ ADMISSION_PORT: "0" }, 'ADMISSION_PORT must be a port number between 1 and 65535, got: "0"'],
    [{ ADMISSION_CERT_DIR: "" }, "ADMISSION_CERT_DIR must not be empty"],
    [
      { REALTIME_ENABLED: "true", REALTIME_SIGNING_KEY: "k" },
      "REALTIME_API_TOKEN must be set when REALTIME_ENABLED is true",
    ],
    [
      { REALTIME_ENABLED: "true", REALTIME_API_TOKEN: "t" },
      "REALTIME_SIGNING_KEY must be set when REALTIME_ENABLED is true",
    ],
    [{ HEALTH_PORT: "0" }, 'HEALTH_PORT must be a port number between 1 and 65535, got: "0"'],
    [{ PROMPT_API_PORT: "x" }, 'PROMPT_API_PORT must be a port number between 1 and 65535, got: "x"'],
    [{ HEALTH_PORT: "http" }, 'HEALTH_PORT must be a port number between 1 and 65535, got: "http"'],
    [{ HEALTH_PORT: "70000" }, 'HEALTH_PORT must be a port number between 1 and 65535, got: "70000"'],
    [{ MAX_OUTPUT_BYTES: "0" }, 'MAX_OUTPUT_BYTES must be a positive integer, got: "0"'],
    [{ STUCK_POD_SECONDS: "5m" }, 'STUCK_POD_SECONDS must be a positive integer, got: "5m"'],
    [{ RECONCILE_ERROR_TRIES: "0" }, 'RECONCILE_ERROR_TRIES must be a positive integer, got: "0"'],
    [{ PROVIDER_MAX_HOLD_SECONDS: "0" }, 'PROVIDER_MAX_HOLD_SECONDS must be a positive integer, got: "0"'],
    [
      { PROVIDER_MAX_HOLD_SECONDS: "3000000" },
      'PROVIDER_MAX_HOLD_SECONDS must be at most 86400 (a day), got: "3000000"',
    ],
    [{ MAX_OUTPUT_BYTES: "256Ki" }, 'MAX_OUTPUT_BYTES must be a positive integer, got: "256Ki"'],
    [{ NAMESPACE: "Bad_NS" }, 'NAMESPACE must be a valid namespace name, got: "Bad_NS"'],
    [{ NAMESPACE: "" }, "NAMESPACE must not be empty"],
    [{ AGENT_IMAGE: " " }, "AGENT_IMAGE must not be empty"],
    [{ POD_NAME: "" }, "POD_NAME must be set (the Lease holder identity)"],
    [
      { GITHUB_API_URL: "api.github.com" },
      'GITHUB_API_URL must be an http or https URL without credentials, query or fragment, got: "api.github.com"',
    ],
    [
      { GITHUB_API_URL: "" },
      'GITHUB_API_URL must be an http or https URL without credentials, query or fragment, got: ""',
    ],
    [
      { GITHUB_API_URL: "ftp://ghe.example.com" },
      'GITHUB_API_URL must be an http or https URL without credentials, query or fragment, got: "ftp://ghe.example.com"',
    ],
    [
      { GITHUB_SERVER_URL: "https://x-access-token:t@ghe.example.com" },
      'GITHUB_SERVER_URL must be an http or https URL without credentials, query or fragment, got: "https://x-access-token:t@ghe.example.com"',
    ],
    [
      { GITHUB_SERVER_URL: "https://ghe.example.com?x=1" },
      'GITHUB_SERVER_URL must be an http or https URL without credentials, query or fragment, got: "https://ghe.example.com?x=1"',
    ],
    [
      { GITHUB_SERVER_URL: " https://ghe.example.com" },
      'GITHUB_SERVER_URL must be an http or https URL without credentials, query or fragment, got: " https://ghe.example.com"',
    ],
    [
      { CLAUDE_CLI_VERSION: "latest" },
      'CLAUDE_CLI_VERSION must be an exact npm version such as 1.2.3, got: "latest"',
    ],
    [
      { CODEX_CLI_VERSION: "^0.169.0" },
      'CODEX_CLI_VERSION must be an exact npm version such as 1.2.3, got: "^0.169.0"',
    ],
    [
      { GEMINI_CLI_VERSION: "v0.61.0" },
      'GEMINI_CLI_VERSION must be an exact npm version such as 1.2.3, got: "v0.61.0"',
    ],
    [
      { OPENCODE_CLI_VERSION: "" },
      'OPENCODE_CLI_VERSION must be an exact npm version such as 1.2.3, got: ""',
    ],
    [
      { OPENCODE_CLI_VERSION: "1.18" },
      'OPENCODE_CLI_VERSION must be an exact npm version such as 1.2.3, got: "1.18"',
    ],
    [
      { AGENT_ANTHROPIC_BASE_URL: "https://user:pw@gw.example.com" },
      'AGENT_ANTHROPIC_BASE_URL must be an http or https URL without credentials, query or fragment, got: "https://user:pw@gw.example.com"',
    ],
    [
      { AGENT_OPENAI_BASE_URL: "" },
      'AGENT_OPENAI_BASE_URL must be an http or https URL without credentials, query or fragment, got: ""',
    ],
    [
      { AGENT_GEMINI_BASE_URL: "gw.example.com" },
      'AGENT_GEMINI_BASE_URL must be an http or https URL without credentials, query or fragment, got: "gw.example.com"',
    ],
  ] as const)("%j", (env, message) => {
    expect(() => parseConfig({ ...base, ...env })).toThrow(message);
    try {
      parseConfig({ ...base, ...env });
    } catch (e) {
      expect((e as Error).message).toBe(message);
    }
  });
});

describe("the model gateway settings (docs/gateway.md#run-credentials)", () => {
  const KEY = "k".repeat(32);
  const files: Record<string, string> = {
    "/keys/gateway": `${KEY}\n`,
    "/keys/short": "too-short\n",
  };
  const readFile = (path: string): Uint8Array => {
    const text = files[path];
    if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
    return Buffer.from(text);
  };
  const parse = (env: Record<string, string>) => parseConfig({ ...base, ...env }, { readFile });

  it("is off without either variable: no gateway setting at all", () => {
    expect(parse({})).not.toHaveProperty("gateway");
  });

  it.each([
    ["http://agent-gateway.ai-agents.svc:8080", "http://agent-gateway.ai-agents.svc:8080"],
    ["https://gw.example.com/", "https://gw.example.com"],
    ["HTTP://Agent-Gateway:8080", "http://agent-gateway:8080"],
  ])("is on with the origin %s and the key file's key, its trailing newline dropped", (raw, url) => {
    expect(
      parse({ AGENT_GATEWAY_URL: raw, AGENT_GATEWAY_CREDENTIAL_KEY_FILE: "/keys/gateway" }).gateway,
    ).toEqual({ url, credentialKey: Buffer.from(KEY) });
  });

  const BOTH =
    "AGENT_GATEWAY_URL and AGENT_GATEWAY_CREDENTIAL_KEY_FILE must be set together (the model gateway's address and the key its run credentials are signed with);";
  const ORIGIN =
    "AGENT_GATEWAY_URL must be the gateway's http or https origin (scheme, host, optional port) without a path, credentials, query or fragment, got:";
  it.each([
    [{ AGENT_GATEWAY_URL: "http://gw:8080" }, `${BOTH} AGENT_GATEWAY_CREDENTIAL_KEY_FILE is not set`],
    [{ AGENT_GATEWAY_CREDENTIAL_KEY_FILE: "/keys/gateway" }, `${BOTH} AGENT_GATEWAY_URL is not set`],
    [{ AGENT_GATEWAY_URL: "", AGENT_GATEWAY_CREDENTIAL_KEY_FILE: "/keys/gateway" }, `${ORIGIN} ""`],
    [
      { AGENT_GATEWAY_URL: "gw:8080", AGENT_GATEWAY_CREDENTIAL_KEY_FILE: "/keys/gateway" },
      `${ORIGIN} "gw:8080"`,
    ],
    [
      { AGENT_GATEWAY_URL: "http://gw:8080/v1", AGENT_GATEWAY_CREDENTIAL_KEY_FILE: "/keys/gateway" },
      `${ORIGIN} "http://gw:8080/v1"`,
    ],
    [
      { AGENT_GATEWAY_URL: "http://u:p@gw:8080", AGENT_GATEWAY_CREDENTIAL_KEY_FILE: "/keys/gateway" },
      `${ORIGIN} "http://u:p@gw:8080"`,
    ],
    [
      { AGENT_GATEWAY_URL: "http://gw:8080?", AGENT_GATEWAY_CREDENTIAL_KEY_FILE: "/keys/gateway" },
      `${ORIGIN} "http://gw:8080?"`,
    ],
    [
      { AGENT_GATEWAY_URL: "ftp://gw", AGENT_GATEWAY_CREDENTIAL_KEY_FILE: "/keys/gateway" },
      `${ORIGIN} "ftp://gw"`,
    ],
    [
      { AGENT_GATEWAY_URL: "http://gw:8080", AGENT_GATEWAY_CREDENTIAL_KEY_FILE: " " },
      "AGENT_GATEWAY_CREDENTIAL_KEY_FILE must not be empty",
    ],
    [
      { AGENT_GATEWAY_URL: "http://gw:8080", AGENT_GATEWAY_CREDENTIAL_KEY_FILE: "/keys/missing" },
      "AGENT_GATEWAY_CREDENTIAL_KEY_FILE=/keys/missing: cannot read the gateway key (ENOENT: no such file or directory, open '/keys/missing')",
    ],
    [
      { AGENT_GATEWAY_URL: "http://gw:8080", AGENT_GATEWAY_CREDENTIAL_KEY_FILE: "/keys/short" },
      "AGENT_GATEWAY_CREDENTIAL_KEY_FILE=/keys/short: the gateway key has 9 bytes, at least 32 are needed",
    ],
  ] as const)("%j is refused", (env, message) => {
    expect(() => parse(env)).toThrow(message);
    try {
      parse(env);
    } catch (e) {
      expect((e as Error).message).toBe(message);
    }
  });
});

describe("the gateway's egress proxy setting (docs/gateway.md#egress)", () => {
  const KEY = "k".repeat(32);
  const readFile = (): Uint8Array => Buffer.from(KEY);
  const gateway = { AGENT_GATEWAY_URL: "http://gw:8080", AGENT_GATEWAY_CREDENTIAL_KEY_FILE: "/keys/gateway" };
  const parse = (env: Record<string, string>) => parseConfig({ ...base, ...env }, { readFile });

  it("is unset unless named: no proxy variables for the run pods", () => {
    expect(parse(gateway).gateway).not.toHaveProperty("egressProxyUrl");
  });

  it.each([
    ["http://agent-gateway.ai-agents.svc:3128", "http://agent-gateway.ai-agents.svc:3128"],
    ["HTTP://GW:3128/", "http://gw:3128"],
    ["http://[fd00::1]:3128", "http://[fd00::1]:3128"],
  ])("%s is the proxy %s", (raw, url) => {
    expect(parse({ ...gateway, AGENT_GATEWAY_EGRESS_URL: raw }).gateway?.egressProxyUrl).toBe(url);
  });

  const SHAPE =
    "AGENT_GATEWAY_EGRESS_URL must be the gateway's egress proxy as http://host:port (plain http, the port named, no path, credentials, query or fragment), got:";
  it.each([
    [{ ...gateway, AGENT_GATEWAY_EGRESS_URL: "" }, `${SHAPE} ""`],
    [{ ...gateway, AGENT_GATEWAY_EGRESS_URL: "gw:3128" }, `${SHAPE} "gw:3128"`],
    [{ ...gateway, AGENT_GATEWAY_EGRESS_URL: "http://gw" }, `${SHAPE} "http://gw"`],
    [{ ...gateway, AGENT_GATEWAY_EGRESS_URL: "https://gw:3128" }, `${SHAPE} "https://gw:3128"`],
    [{ ...gateway, AGENT_GATEWAY_EGRESS_URL: "http://gw:3128/proxy" }, `${SHAPE} "http://gw:3128/proxy"`],
    [{ ...gateway, AGENT_GATEWAY_EGRESS_URL: "http://u:p@gw:3128" }, `${SHAPE} "http://u:p@gw:3128"`],
    [
      { AGENT_GATEWAY_EGRESS_URL: "http://gw:3128" },
      "AGENT_GATEWAY_EGRESS_URL needs the model gateway on (AGENT_GATEWAY_URL and AGENT_GATEWAY_CREDENTIAL_KEY_FILE): its proxy credentials are signed with the gateway's key",
    ],
  ] as const)("%j is refused", (env, message) => {
    expect(() => parse(env)).toThrow(message);
  });
});
