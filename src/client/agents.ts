/**
 * Typed access to Agents (and read access to Stations, AgentDefinitions, the pods of a run and the
 * agent-realtime Secret) in one namespace. Built on the controller's own undici KubeClient over the
 * kubeconfig (docs/client.md says why). Every Agent is checked with the ajv validators before it is
 * sent, so a mistake is reported with its field path instead of the API server's first complaint.
 */
import type { V1Pod, V1Secret } from "@kubernetes/client-node";
import type { Agent, AgentSpec } from "../../generated/crds/agent.js";
import type { AgentDefinition } from "../../generated/crds/agentdefinition.js";
import type { ObjectMeta } from "../../generated/crds/meta.js";
import type { Station } from "../../generated/crds/station.js";
import { jobPodSelector } from "../core/run-job/names.js";
import { KubeClient, type WatchEvent } from "../kube/client.js";
import { KubeApiError } from "../kube/errors.js";
import { AGENT_DEFINITIONS, AGENTS, PODS, resourcePath, SECRETS, STATIONS } from "../kube/resources.js";
import { validateAgent } from "../validation/index.js";
import { AgentValidationError, WaitTimeoutError } from "./errors.js";
import { defaultNamespace, type KubeConfigChoice, loadKubeConfig } from "./kubeconfig.js";
import { isTerminal, phaseOf } from "./terminal.js";

export const API_VERSION = "agents.re-cinq.com/v1beta1";

/** What a caller writes: the spec and the metadata it may choose; the rest is filled in. */
export interface AgentInput {
  metadata?: Pick<ObjectMeta, "name" | "generateName" | "labels" | "annotations">;
  spec: AgentSpec;
}

export type AgentWatchEvent = { type: "ADDED" | "MODIFIED" | "DELETED"; object: Agent };

export interface AgentsClientOptions extends KubeConfigChoice {
  /** Default: the namespace of the kubeconfig's context, else "default". */
  namespace?: string;
  /** Per-request timeout (watches excepted); default 30 s. */
  requestTimeoutMs?: number;
}

export interface WaitOptions {
  /** Give up after this long with WaitTimeoutError; no limit when absent. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Called with every version of the Agent seen while waiting (the first GET included). */
  onUpdate?: (agent: Agent) => void;
}

/** Server-side length of one watch request; the client reconnects after it. */
const WATCH_SECONDS = 60;

export class AgentsClient {
  constructor(
    readonly kube: KubeClient,
    readonly namespace: string,
  ) {}

  /** From a kubeconfig (kubectl's rules, see kubeconfig.ts). */
  static async connect(o: AgentsClientOptions = {}): Promise<AgentsClient> {
    const kc = loadKubeConfig(o);
    const kube = await KubeClient.fromKubeConfig(kc, o.requestTimeoutMs);
    return new AgentsClient(kube, o.namespace || defaultNamespace(kc));
  }

  async close(): Promise<void> {
    await this.kube.close();
  }

  /** The complete object `create` sends: apiVersion, kind and namespace filled in. */
  agentObject(input: AgentInput): Agent {
    return {
      apiVersion: API_VERSION,
      kind: "Agent",
      metadata: { ...input.metadata, namespace: this.namespace },
      spec: input.spec,
    };
  }

  /**
   * Validates, then creates. Throws AgentValidationError (nothing sent) when the object breaks
   * the schema or has neither a name nor a generateName; KubeApiError when the server refuses it.
   */
  async create(input: AgentInput, signal?: AbortSignal): Promise<Agent> {
    const agent = this.agentObject(input);
    const result = validateAgent(agent);
    const issues = result.ok ? [] : [...result.issues];
    if (!agent.metadata.name && !agent.metadata.generateName) {
      issues.push({
        path: "metadata.name",
        pointer: "/metadata/name",
        keyword: "required",
        message: "metadata.name or metadata.generateName is required.",
      });
    }
    if (issues.length > 0) throw new AgentValidationError("Agent", issues);
    return this.kube.request<Agent>("POST", resourcePath(AGENTS, this.namespace), { body: agent, signal });
  }

  /** The Agent, or undefined when it does not exist. */
  get(name: string, signal?: AbortSignal): Promise<Agent | undefined> {
    return this.kube.get<Agent>(AGENTS, this.namespace, name, signal);
  }

  /** Every Agent of the namespace, or of one Station (by spec.stationRef), oldest first. */
  async list(o: { station?: string; signal?: AbortSignal } = {}): Promise<Agent[]> {
    const { items } = await this.kube.list<Agent>(AGENTS, this.namespace, { signal: o.signal });
    const mine = o.station === undefined ? items : items.filter((a) => a.spec?.stationRef === o.station);
    return mine.sort((a, b) =>
      (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? ""),
    );
  }

  getStation(name: string, signal?: AbortSignal): Promise<Station | undefined> {
    return this.kube.get<Station>(STATIONS, this.namespace, name, signal);
  }

  getDefinition(name: string, signal?: AbortSignal): Promise<AgentDefinition | undefined> {
    return this.kube.get<AgentDefinition>(AGENT_DEFINITIONS, this.namespace, name, signal);
  }

  /** One key of a Secret in this namespace, decoded; undefined when the Secret or key is absent. */
  async secretValue(secret: string, key: string, signal?: AbortSignal): Promise<string | undefined> {
    const s = await this.kube.get<V1Secret>(SECRETS, this.namespace, secret, signal);
    const encoded = s?.data?.[key];
    return encoded === undefined ? undefined : Buffer.from(encoded, "base64").toString("utf8");
  }

  /** The pods of a run's Job (label job-name), newest first. */
  async runPods(jobName: string, signal?: AbortSignal): Promise<V1Pod[]> {
    const { items } = await this.kube.list<V1Pod>(PODS, this.namespace, {
      labelSelector: jobPodSelector(jobName),
      signal,
    });
    return items.sort((a, b) =>
      String(b.metadata?.creationTimestamp ?? "").localeCompare(String(a.metadata?.creationTimestamp ?? "")),
    );
  }

  /** A container's log; undefined when the pod or container has none (yet). */
  podLog(pod: string, container: string): Promise<string | undefined> {
    return this.kube.readLog(this.namespace, pod, container);
  }

  /**
   * Changes to the namespace's Agents (or to one, by name) from now, or from `resourceVersion`.
   * Reconnects when the server ends a watch; after a 410 (the cursor was compacted) it resumes
   * from a fresh list, so changes in between are not replayed. Ends when `signal` aborts. A caller
   * that stops iterating (break, return, throw) ends the open watch request with it, so `close()`
   * does not wait for the server to end it.
   */
  async *watch(
    o: { name?: string; resourceVersion?: string; signal?: AbortSignal } = {},
  ): AsyncGenerator<AgentWatchEvent> {
    const own = new AbortController();
    const onAbort = () => own.abort();
    if (o.signal?.aborted) own.abort();
    o.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      yield* this.watchUntil(own.signal, o.name, o.resourceVersion);
    } finally {
      own.abort();
      o.signal?.removeEventListener("abort", onAbort);
    }
  }

  private async *watchUntil(
    signal: AbortSignal,
    name: string | undefined,
    resourceVersion: string | undefined,
  ): AsyncGenerator<AgentWatchEvent> {
    const o = { signal, name };
    let rv = resourceVersion ?? (await this.currentResourceVersion(o.signal));
    while (!o.signal?.aborted) {
      const queue: WatchEvent<Agent>[] = [];
      let wake: (() => void) | undefined;
      let ended = false;
      let failure: unknown;
      const stream = this.kube
        .watch<Agent>(
          AGENTS,
          this.namespace,
          { resourceVersion: rv, timeoutSeconds: WATCH_SECONDS, signal: o.signal },
          (event) => {
            queue.push(event);
            wake?.();
          },
        )
        .catch((err: unknown) => {
          failure = err;
        })
        .finally(() => {
          ended = true;
          wake?.();
        });
      while (true) {
        const event = queue.shift();
        if (event === undefined) {
          if (ended) break;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
          continue;
        }
        if (event.type === "ERROR") {
          const status = (event.object as unknown as { code?: number }).code;
          failure = new KubeApiError(status ?? 500, "", `watch of Agents failed with ${status}`);
          break;
        }
        const version = event.object?.metadata?.resourceVersion;
        if (version) rv = version;
        if (event.type === "BOOKMARK") continue;
        if (o.name !== undefined && event.object.metadata.name !== o.name) continue;
        yield { type: event.type, object: event.object };
      }
      await stream;
      if (o.signal?.aborted) return;
      if (failure instanceof KubeApiError && failure.status === 410) {
        rv = await this.currentResourceVersion(o.signal);
      } else if (failure !== undefined) {
        throw failure;
      }
    }
  }

  /**
   * Resolves with the Agent once it is Succeeded or Failed. Throws WaitTimeoutError after
   * `timeoutMs` or when `signal` aborts, and an Error when the Agent does not exist or is deleted.
   */
  async waitForTerminal(name: string, o: WaitOptions = {}): Promise<Agent> {
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    if (o.signal?.aborted) stop.abort();
    o.signal?.addEventListener("abort", onAbort, { once: true });
    const timer = o.timeoutMs === undefined ? undefined : setTimeout(onAbort, o.timeoutMs);
    let lastPhase = "Pending";
    try {
      const first = await this.get(name, stop.signal);
      if (!first) throw new Error(`Agent ${name} not found in namespace ${this.namespace}`);
      lastPhase = phaseOf(first);
      o.onUpdate?.(first);
      if (isTerminal(first)) return first;
      for await (const event of this.watch({
        name,
        resourceVersion: first.metadata.resourceVersion,
        signal: stop.signal,
      })) {
        if (event.type === "DELETED") {
          throw new Error(`Agent ${name} was deleted while it was ${lastPhase}`);
        }
        lastPhase = phaseOf(event.object);
        o.onUpdate?.(event.object);
        if (isTerminal(event.object)) return event.object;
      }
      throw new WaitTimeoutError(name, lastPhase, o.timeoutMs);
    } catch (err) {
      if (stop.signal.aborted) throw new WaitTimeoutError(name, lastPhase, o.timeoutMs);
      throw err;
    } finally {
      if (timer) clearTimeout(timer);
      o.signal?.removeEventListener("abort", onAbort);
    }
  }

  private async currentResourceVersion(signal?: AbortSignal): Promise<string> {
    const page = await this.kube.request<{ metadata?: { resourceVersion?: string } }>(
      "GET",
      resourcePath(AGENTS, this.namespace),
      { query: { limit: 1 }, signal },
    );
    return page.metadata?.resourceVersion ?? "";
  }
}
