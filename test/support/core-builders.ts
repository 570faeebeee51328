/**
 * Builders for tests (Kueue style): a sensible default object plus chainable overrides, so each
 * test row states only what it is about.
 */
import type { ReconcileInput } from "../../src/core/input.js";
import type {
  Agent,
  AgentDefinition,
  AgentDefinitionSpec,
  AgentSpec,
  AgentStatus,
  Station,
  StationSpec,
} from "../../src/core/types.js";

export const NS = "ai-agents";
export const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
export const iso = (ms: number) => new Date(ms).toISOString().replace(".000Z", "Z");

export class AgentBuilder {
  private readonly a: Agent;
  constructor(name = "run-1") {
    this.a = {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: {
        name,
        namespace: NS,
        uid: `uid-${name}`,
        resourceVersion: "100",
        creationTimestamp: iso(T0),
      },
      spec: { stationRef: "st" },
    };
  }
  spec(s: Partial<AgentSpec>): this {
    Object.assign(this.a.spec, s);
    return this;
  }
  status(s: AgentStatus): this {
    this.a.status = { ...this.a.status, ...s };
    return this;
  }
  phase(p: AgentStatus["phase"]): this {
    return this.status({ phase: p });
  }
  created(ms: number): this {
    this.a.metadata.creationTimestamp = iso(ms);
    return this;
  }
  rv(rv: string): this {
    this.a.metadata.resourceVersion = rv;
    return this;
  }
  finalizers(...f: string[]): this {
    this.a.metadata.finalizers = f;
    return this;
  }
  deleting(ms = T0): this {
    this.a.metadata.deletionTimestamp = iso(ms);
    return this;
  }
  running(startedMs: number, s: AgentStatus = {}): this {
    return this.status({
      phase: "Running",
      startedAt: iso(startedMs),
      jobName: `agent-job-${this.a.metadata.name}`,
      ...s,
    });
  }
  completed(phase: "Succeeded" | "Failed", ms: number): this {
    return this.status({ phase, completedAt: iso(ms), exitCode: phase === "Succeeded" ? 0 : 1 });
  }
  build(): Agent {
    return structuredClone(this.a);
  }
}

export class StationBuilder {
  private readonly s: Station;
  constructor(name = "st") {
    this.s = {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Station",
      metadata: { name, namespace: NS },
      spec: {
        agentDefRef: "def",
        template: { spec: { containers: [{ name: "agent", image: "node:22-bookworm-slim" }] } },
      },
    };
  }
  spec(s: Partial<StationSpec>): this {
    Object.assign(this.s.spec, s);
    return this;
  }
  build(): Station {
    return structuredClone(this.s);
  }
}

export class DefinitionBuilder {
  private readonly d: AgentDefinition;
  constructor(name = "def") {
    this.d = {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "AgentDefinition",
      metadata: { name, namespace: NS },
      spec: { prompt: "Fix {ticket}." },
    };
  }
  spec(s: Partial<AgentDefinitionSpec>): this {
    Object.assign(this.d.spec, s);
    return this;
  }
  batch(extra: Partial<AgentDefinitionSpec> = {}): this {
    return this.spec({
      execution: "batch",
      model: "claude-sonnet-4-6",
      resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }] },
      output: { sinks: [{ type: "http", url: "https://sink.example/hook" }] },
      ...extra,
    });
  }
  build(): AgentDefinition {
    return structuredClone(this.d);
  }
}

export const agent = (name?: string) => new AgentBuilder(name);
export const station = (name?: string) => new StationBuilder(name);
export const definition = (name?: string) => new DefinitionBuilder(name);

/** A reconcile input with defaults: the Station and definition exist, nothing else is running. */
export function input(over: Partial<ReconcileInput> = {}): ReconcileInput {
  return {
    agent: agent().build(),
    station: station().build(),
    definition: definition().build(),
    stationAgents: [],
    pendingCreations: [],
    batch: {},
    settings: {
      namespace: NS,
      agentImage: "ghcr.io/re-cinq/ai-agent-init:test",
      maxOutputBytes: 262144,
      batchEnabled: true,
      realtimeEnabled: true,
      batchPollSeconds: 60,
      realtimeSigningKey: "signing-key",
    },
    now: T0 + 60_000,
    ...over,
  };
}
