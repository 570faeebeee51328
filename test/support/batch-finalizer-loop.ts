/**
 * One deleted batch Agent driven the way the controller drives it (src/controller/controller.ts
 * reconcileAgent): the core's reconcile over the Agent and the executor's batch memory, the
 * executor's actions against a real batch provider client (pointed at a fake provider), and an
 * in-memory API server that applies the status patches and the finalizer's removal. Virtual time
 * only: the caller moves the fake's clock between ticks. For the finalizer's cleanup sequences
 * (docs/batch-runs.md#timeouts-delete-limits).
 */
import type { BatchProvider } from "../../src/batch/provider.js";
import { Executor } from "../../src/controller/executor.js";
import { RunMemory } from "../../src/controller/memory.js";
import { ControllerMetrics } from "../../src/controller/metrics.js";
import { reconcile } from "../../src/core/state-machine/reconcile.js";
import type { Agent, AgentDefinition } from "../../src/core/types.js";
import type { FakeClock } from "../fakes/providers/base.js";
import { input, station } from "./core-builders.js";

export interface FinalizerLoopOptions {
  agent: Agent;
  definition: AgentDefinition;
  provider: BatchProvider;
  clock: FakeClock;
  /** The agent-secrets entries (key name → value), as the Secret holds them. */
  secret: Record<string, string>;
}

export class FinalizerLoop {
  agent: Agent;
  /** The executor's in-memory state; a leader change starts a new one (leaderChange). */
  memory = new RunMemory();
  readonly metrics = new ControllerMetrics();
  /** Reads of agent-secrets still to fail with a 503 from the API server (a transient outage). */
  secretReadFailures = 0;
  /** Virtual time at which the finalizer was removed. */
  releasedAt: number | undefined;
  private executor: Executor;

  constructor(private readonly o: FinalizerLoopOptions) {
    this.agent = structuredClone(o.agent);
    this.executor = this.newExecutor();
  }

  get released(): boolean {
    return this.releasedAt !== undefined;
  }

  /** A new leader: same API server and provider, nothing of the old process's memory. */
  leaderChange(): void {
    this.memory = new RunMemory();
    this.executor = this.newExecutor();
  }

  /** One reconcile, then the follow-ups the executor asks for (reconcileAgain), as the work queue runs them. */
  async tick(): Promise<void> {
    for (let i = 0; i < 5 && !this.released; i++) {
      const uid = this.agent.metadata.uid ?? "";
      const batch = { ...(this.memory.peekBatch(uid) ?? {}) };
      const actions = reconcile(
        input({
          agent: structuredClone(this.agent),
          station: station("st").build(),
          definition: this.o.definition,
          batch,
          now: this.o.clock.nowMs,
        }),
      );
      // A cleanup outcome is one-shot: this reconcile consumed it.
      if (batch.cleanupResult) delete this.memory.batchFor(uid).cleanupResult;
      if (actions.length === 0) return;
      const report = await this.executor.execute(this.agent, actions);
      if (!report.reconcileAgain) return;
    }
  }

  /** controller_batch_cleanup_failures_total as /metrics reports it. */
  async cleanupFailures(): Promise<number> {
    const text = await this.metrics.registry.metrics();
    const line = text.split("\n").find((l) => l.startsWith("controller_batch_cleanup_failures_total "));
    return Number(line?.split(" ")[1]);
  }

  private newExecutor(): Executor {
    const encoded = Object.fromEntries(
      Object.entries(this.o.secret).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
    );
    const client = {
      get: async () => {
        if (this.secretReadFailures > 0) {
          this.secretReadFailures--;
          throw new Error("503 Service Unavailable");
        }
        return { data: encoded };
      },
      patchStatus: async (
        _r: unknown,
        _ns: string,
        _name: string,
        _rv: string,
        s: Record<string, unknown>,
      ) => {
        this.agent.status = { ...this.agent.status, ...s };
        this.bump();
        return "ok";
      },
      jsonPatch: async (_r: unknown, _ns: string, _name: string, ops: { op: string; path: string }[]) => {
        for (const op of ops.filter((o) => o.op === "remove")) {
          const index = Number(op.path.split("/").pop());
          this.agent.metadata.finalizers?.splice(index, 1);
        }
        this.bump();
        if (this.agent.metadata.finalizers?.length === 0) this.releasedAt = this.o.clock.nowMs;
        return "ok";
      },
    };
    return new Executor({
      client: client as never,
      namespace: this.agent.metadata.namespace ?? "",
      memory: this.memory,
      metrics: this.metrics,
      provider: () => this.o.provider,
      now: () => this.o.clock.nowMs,
      log: () => {},
    });
  }

  private bump(): void {
    this.agent.metadata.resourceVersion = String(Number(this.agent.metadata.resourceVersion ?? "0") + 1);
  }
}
