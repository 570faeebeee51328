/**
 * An in-memory stand-in for the API server's ModelUsage objects, for the usage store's unit tests
 * (src/gateway/usage-store.test.ts): resourceVersion preconditions, 409s, and writes a test can
 * hold or fail. The store is driven against a real API server in test/integration/gateway/.
 */
import type { ModelUsage } from "../../src/core/types.js";
import type { UsageObjects } from "../../src/gateway/usage-store.js";

const conflict = (what: string) => Object.assign(new Error(what), { status: 409 });

export class MemoryUsageObjects implements UsageObjects {
  readonly objects = new Map<string, ModelUsage>();
  writes = 0;
  /** The next `n` writes fail with a 500. */
  failNext = 0;
  private version = 0;
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;

  /** Writes wait until `release`. */
  hold(): void {
    this.gate = new Promise((resolve) => {
      this.open = resolve;
    });
  }

  release(): void {
    this.open?.();
    this.gate = undefined;
  }

  only(): ModelUsage {
    const all = [...this.objects.values()];
    if (all.length !== 1) throw new Error(`expected one object, found ${all.length}`);
    return all[0] as ModelUsage;
  }

  async create(_ns: string, object: ModelUsage): Promise<ModelUsage> {
    await this.step();
    const name = object.metadata.name ?? "";
    if (this.objects.has(name)) throw conflict(`${name} already exists`);
    return this.store(object);
  }

  async get(_ns: string, name: string): Promise<ModelUsage | undefined> {
    return this.objects.get(name);
  }

  async replace(_ns: string, object: ModelUsage): Promise<ModelUsage> {
    await this.step();
    const had = this.objects.get(object.metadata.name ?? "");
    if (!had || had.metadata.resourceVersion !== object.metadata.resourceVersion) throw conflict("stale");
    return this.store(object);
  }

  private async step(): Promise<void> {
    if (this.gate) await this.gate;
    this.writes++;
    if (this.failNext > 0) {
      this.failNext--;
      throw Object.assign(new Error("the API server answered 500"), { status: 500 });
    }
  }

  private store(object: ModelUsage): ModelUsage {
    const stored = structuredClone(object);
    stored.metadata.resourceVersion = String(++this.version);
    this.objects.set(stored.metadata.name ?? "", stored);
    return structuredClone(stored);
  }
}
