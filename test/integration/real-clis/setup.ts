/**
 * Shared setup of the end-to-end tests with the REAL agent CLIs (test/harness/agent-clis.ts):
 * the in-process controller of test/integration/run-pod/setup.ts (AGENT_IMAGE = the agent image
 * built from the Dockerfile, its own namespace, `agent-secrets`, a sink listener), started with the
 * installation's base URL settings (AGENT_<API>_BASE_URL, docs/agent-clis.md) pointing at a local
 * model server the test started (on the address run pods reach); Stations on the real node whose
 * `agent` container uses REAL_CLI_STATION_IMAGE (the pinned CLIs on PATH, built from
 * deploy/station-image/Dockerfile as a platform team would);
 * and, on request, a local forge (bare repositories over git's http-backend and the GitHub pulls
 * API fake) for `delivery.pullRequest`.
 *
 * Each test file calls startRealCliEnv once (through realCliSuite, which also gives it the
 * per-Station model servers, the run helper and, for realtime sessions, the prompt API): its own
 * namespace and controller, so files run concurrently. Tests skip (with the reason) while dist/agent is not built or the CLIs could not
 * be installed; in CI both are errors.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1EnvVar } from "@kubernetes/client-node";
import { afterAll, beforeAll } from "vitest";
import { startControllerPromptApi } from "../../../src/controller/prompt-api-wiring.js";
import {
  AGENT_BASE_URL_SETTINGS,
  type CliVendor,
  type ModelApiFamily,
} from "../../../src/core/cli/agent-clis.js";
import type { Agent } from "../../../src/core/types.js";
import { STATIONS } from "../../../src/kube/resources.js";
import type { PromptApiServer } from "../../../src/prompt-api/index.js";
import { createBareRepo, type GitHttpServer, startGitHttpServer } from "../../fakes/git-http.js";
import { type FakeGitHub, startFakeGitHub } from "../../fakes/github.js";
import type { ModelServer } from "../../fakes/models/base.js";
import {
  agentClisProblem,
  podReachableHost,
  REAL_CLI_STATION_IMAGE,
  realNodePodTemplate,
} from "../../harness/context.js";
import {
  createAgent,
  createDefinition,
  finishedAgent,
  RUN_POD_SKIP,
  type RunPodEnv,
  startRunPodEnv,
} from "../run-pod/setup.js";
import {
  type ConversationStore,
  type PromptApiCaller,
  promptApiCaller,
  startConversationStore,
} from "./realtime-helpers.js";

export {
  createAgent,
  createDefinition,
  finishedAgent,
  podLog,
  runPod,
  SINK_HEADERS_KEY,
  SINK_TOKEN,
  watchPhases,
} from "../run-pod/setup.js";

/** The model API each vendor's CLI talks to by default (opencode: whichever provider its model names). */
export const VENDOR_API: Readonly<Record<Exclude<CliVendor, "opencode">, ModelApiFamily>> = {
  claude: "anthropic",
  codex: "openai",
  gemini: "gemini",
};

/** The env name each API's key travels under (in `agent-secrets` and in the agent container). */
export const API_KEY_NAME: Readonly<Record<ModelApiFamily, string>> = {
  anthropic: "ANTHROPIC_API_KEY",
  openai: "OPENAI_API_KEY",
  gemini: "GEMINI_API_KEY",
};

/** A fake key per API, recognisable in journals and logs (it must never show up in them). */
export const FAKE_API_KEY: Readonly<Record<ModelApiFamily, string>> = {
  anthropic: "sk-ant-api03-real-cli-test-key",
  openai: "sk-proj-real-cli-test-key",
  gemini: "AIza-real-cli-test-key",
};

/**
 * Why the real-CLI tests cannot run here, or undefined: use as `describe.skipIf(reason)` and print
 * it. In CI a missing CLI cache is an error instead (nothing would be tested); a machine without the
 * real node skips them with the reason.
 */
export function realClisSkipReason(): string | undefined {
  const problems = [
    ...(RUN_POD_SKIP === "" ? [] : [`run pods cannot run here: ${RUN_POD_SKIP}`]),
    ...(agentClisProblem() !== "" ? [`the real agent CLIs are not available: ${agentClisProblem()}`] : []),
  ];
  if (problems.length === 0) return undefined;
  if (process.env.CI === "true" && RUN_POD_SKIP === "") throw new Error(problems.join("; "));
  return problems.join("; ");
}

export interface Forge {
  git: GitHttpServer;
  github: FakeGitHub;
  /** Where the bare repositories live (`<root>/<owner>/<name>.git`). */
  root: string;
  /** The read token the clone uses (`GIT_TOKEN` in agent-secrets). */
  cloneToken: string;
  /** The delivery token (`github-token` in agent-secrets). */
  deliveryToken: string;
}

export interface RealCliEnv extends RunPodEnv {
  model: ModelServer;
  /** Present when started with `forge`. */
  forge?: Forge;
}

export const CLONE_TOKEN_KEY = "GIT_TOKEN";
export const DELIVERY_TOKEN_KEY = "github-token";

export interface RealCliEnvOptions {
  /** Namespace prefix (one per test file). */
  prefix: string;
  /** The local model server the test started (test/fakes/models/*), closed with the env. */
  model: ModelServer;
  /**
   * The installation's base URL per API, as the controller gets them (AGENT_<API>_BASE_URL). Each
   * model fake's file says what its CLI needs appended to `model.origin` (e.g. `/v1`).
   */
  baseUrls: Partial<Record<ModelApiFamily, string>>;
  /** Keys written into agent-secrets; default: every API's fake key under its env name. */
  keys?: Partial<Record<ModelApiFamily, string>>;
  /** More agent-secrets entries. */
  secrets?: Record<string, string>;
  /** More controller settings (e.g. REALTIME_ENABLED and its token and key). */
  controllerEnv?: Record<string, string>;
  /** Bare repositories to serve (`owner/name` → files of the first commit): starts the local forge. */
  forge?: Record<string, Record<string, string>>;
}

export async function startRealCliEnv(options: RealCliEnvOptions): Promise<RealCliEnv> {
  const keys = options.keys ?? FAKE_API_KEY;
  const secrets: Record<string, string> = { ...options.secrets };
  for (const [api, key] of Object.entries(keys)) secrets[API_KEY_NAME[api as ModelApiFamily]] = key;
  const controllerEnv: Record<string, string> = { ...options.controllerEnv };
  for (const [api, url] of Object.entries(options.baseUrls)) {
    controllerEnv[AGENT_BASE_URL_SETTINGS[api as ModelApiFamily].setting] = url;
  }
  let forge: Forge | undefined;
  if (options.forge) {
    const root = mkdtempSync(join(tmpdir(), `${options.prefix}-forge-`));
    for (const [repo, files] of Object.entries(options.forge)) createBareRepo(root, repo, files);
    const cloneToken = `ghp_clone${randomBytes(10).toString("hex")}`;
    const deliveryToken = `ghs_deliver${randomBytes(10).toString("hex")}`;
    const git = await startGitHttpServer({
      root,
      token: cloneToken,
      moreTokens: { delivery: deliveryToken },
      host: podReachableHost(),
    });
    const github = await startFakeGitHub({
      token: deliveryToken,
      gitRoot: root,
      htmlUrl: "https://github.test",
      host: podReachableHost(),
    });
    forge = { git, github, root, cloneToken, deliveryToken };
    secrets[CLONE_TOKEN_KEY] = cloneToken;
    secrets[DELIVERY_TOKEN_KEY] = deliveryToken;
    controllerEnv.GITHUB_API_URL = github.url;
    controllerEnv.GITHUB_SERVER_URL = git.url;
  }
  const base = await startRunPodEnv(options.prefix, secrets, controllerEnv);
  return {
    ...base,
    model: options.model,
    ...(forge ? { forge } : {}),
    close: async () => {
      await base.close();
      await options.model.close();
      if (forge) {
        await forge.git.close();
        await forge.github.close();
        rmSync(forge.root, { recursive: true, force: true });
      }
    },
  };
}

/** The recipe's `resources.secrets` entry that hands an API's key to the run (from agent-secrets). */
export function keySecret(api: ModelApiFamily): { name: string; ref: string } {
  return { name: API_KEY_NAME[api], ref: API_KEY_NAME[api] };
}

/**
 * The recipe fields that clone `repo` from the local forge and deliver the edit as a pull request
 * (merge into the definition's spec; the CLI then runs in /workspace with the clone at
 * /workspace/<name>).
 */
export function forgeRecipe(
  env: RealCliEnv,
  repo: string,
  name = "app",
): { resources: { repos: Record<string, string>[] }; delivery: Record<string, unknown> } {
  if (!env.forge) throw new Error("forgeRecipe: start the env with `forge`");
  return {
    resources: { repos: [{ name, url: env.forge.git.repoUrl(repo), token_secret: CLONE_TOKEN_KEY }] },
    delivery: { pullRequest: { tokenSecret: DELIVERY_TOKEN_KEY, title: "Edit by {topic}" } },
  };
}

/**
 * A Station whose pods run on the real node with the REAL pinned CLIs on the agent container's PATH
 * (REAL_CLI_STATION_IMAGE; `image` overrides, e.g. NO_CLI_STATION_IMAGE); `env` is the agent container's own env (it wins
 * over the installation's base URLs).
 */
export async function createRealCliStation(
  env: RealCliEnv,
  name: string,
  definition: string,
  options: {
    spec?: Record<string, unknown>;
    env?: V1EnvVar[];
    image?: string;
    /** More pod spec fields of the template (e.g. hostAliases, when the installation allows them). */
    podSpec?: Record<string, unknown>;
  } = {},
): Promise<void> {
  await env.client.create(STATIONS, env.ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name },
    spec: {
      agentDefRef: definition,
      deadlineMinutes: 5,
      ...options.spec,
      template: {
        spec: {
          ...realNodePodTemplate(),
          ...options.podSpec,
          containers: [
            {
              name: "agent",
              image: options.image ?? REAL_CLI_STATION_IMAGE,
              ...(options.env ? { env: options.env } : {}),
            },
          ],
        },
      },
    },
  });
}

export interface StationOptions {
  deadlineMinutes?: number;
  env?: V1EnvVar[];
}

/**
 * The supervisor's first backoff after a provider limit at 1 s instead of 5 s (the Station's env
 * reaches the supervisor; docs/provider-limits.md#riding-out-a-limit), so runs that wait for their
 * provider fit a test's time.
 */
export const FAST_PROVIDER_RETRIES: V1EnvVar[] = [{ name: "AGENT_PROVIDER_RETRY_BASE_MS", value: "1000" }];

/** What a vendor's end-to-end file varies: its CLI, the model API and server, the run's bounds. */
export interface RealCliSuiteOptions<M extends ModelServer> {
  vendor: CliVendor;
  /** The API the runs talk to: its key goes in as a recipe secret, its base URL as the Station's env. */
  api: ModelApiFamily;
  /** The definitions' model. */
  model: string;
  /**
   * Starts a local model server (test/fakes/models/*) listening on `host` (where run pods reach this
   * machine): one for the installation, one per Station.
   */
  startModel: (host: string) => Promise<M>;
  /** The base URL the CLI takes for `server` (the installation's and the Station's). */
  baseUrl: (server: M) => string;
  /** How long a run may take to finish (and a realtime session to accept a prompt). */
  runTimeoutMs: number;
  /** The Stations' deadline; default 8. */
  deadlineMinutes?: number;
  /** The runs' `topic` parameter; default "notes". */
  topic?: string;
  /** Also start the controller's prompt API (realtime sessions) and a conversation store. */
  realtime?: boolean;
}

export interface RealCliSuiteStarted {
  env: RealCliEnv;
  /** Present when started with `realtime`. */
  store?: ConversationStore;
}

export interface RealCliSuite<M> extends PromptApiCaller {
  /** realClisSkipReason(), printed: use as `describe.skipIf(skip)`. */
  skip: string | undefined;
  /**
   * A definition and Station of their own whose runs talk to a model server of their own; `station`
   * overrides the Station's deadline and adds env to its agent container.
   */
  stationWithModel(name: string, spec: Record<string, unknown>, station?: StationOptions): Promise<M>;
  /** Creates the Agent `name` on `station` and waits until it finished. */
  run(name: string, station: string, spec?: Record<string, unknown>): Promise<Agent>;
  /** The CLI's own lines among an Agent's sink events (lifecycle events have no `type`). */
  cliEvents(agent: string): Record<string, unknown>[];
}

/**
 * Registers an end-to-end file's beforeAll (the model server, startRealCliEnv with the `acme/app`
 * forge and, with `realtime`, the controller's prompt API and a conversation store; `onStart` gets
 * what the tests use) and afterAll (closes all of it and every Station's model server).
 */
export function realCliSuite<M extends ModelServer>(
  options: RealCliSuiteOptions<M> & { onStart: (started: RealCliSuiteStarted) => void },
): RealCliSuite<M> {
  const { vendor, api: modelApi } = options;
  const skip = realClisSkipReason();
  if (skip) console.warn(`${vendor} e2e skipped: ${skip}`);
  const apiToken = `${vendor}-rt-caller-token`;
  const signingKey = `${vendor}-rt-signing-key`;
  const quiet = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };
  let env: RealCliEnv;
  let promptApi: PromptApiServer;
  let store: ConversationStore | undefined;
  const servers: M[] = [];

  beforeAll(async () => {
    if (skip) return;
    const model = await options.startModel(podReachableHost());
    env = await startRealCliEnv({
      prefix: `real-${vendor}`,
      model,
      baseUrls: { [modelApi]: options.baseUrl(model) },
      forge: { "acme/app": { "README.md": "helo world\n" } },
      ...(options.realtime
        ? {
            controllerEnv: {
              REALTIME_ENABLED: "true",
              REALTIME_API_TOKEN: apiToken,
              REALTIME_SIGNING_KEY: signingKey,
            },
          }
        : {}),
    });
    if (options.realtime) {
      promptApi = await startControllerPromptApi({
        config: { namespace: env.ns, realtimeApiToken: apiToken, realtimeSigningKey: signingKey },
        client: env.client,
        port: 0,
        host: "127.0.0.1",
        logger: quiet,
      });
      store = await startConversationStore(podReachableHost());
    }
    options.onStart({ env, ...(store ? { store } : {}) });
  });
  afterAll(async () => {
    await promptApi?.close(1000);
    await store?.close();
    await env?.close();
    await Promise.all(servers.map((s) => s.close()));
  });

  const caller = promptApiCaller(
    () => ({ port: promptApi.port, ns: env.ns }),
    apiToken,
    options.runTimeoutMs,
  );

  const stationWithModel = async (
    name: string,
    spec: Record<string, unknown>,
    station: StationOptions = {},
  ): Promise<M> => {
    const model = await options.startModel(podReachableHost());
    servers.push(model);
    await createDefinition(env, name, {
      model: options.model,
      resources: { secrets: [keySecret(modelApi)] },
      ...spec,
    });
    await createRealCliStation(env, name, name, {
      env: [
        { name: AGENT_BASE_URL_SETTINGS[modelApi].variable, value: options.baseUrl(model) },
        ...(station.env ?? []),
      ],
      spec: { deadlineMinutes: station.deadlineMinutes ?? options.deadlineMinutes ?? 8 },
    });
    return model;
  };

  const run = async (name: string, station: string, spec: Record<string, unknown> = {}): Promise<Agent> => {
    await createAgent(env, name, station, { parameters: { topic: options.topic ?? "notes" }, ...spec });
    return finishedAgent(env, name, options.runTimeoutMs);
  };

  const cliEvents = (agent: string) =>
    env.listener.eventsFor(agent).filter((e) => typeof e.type === "string");

  return { skip, stationWithModel, run, cliEvents, ...caller };
}
