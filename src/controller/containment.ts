/**
 * Counting the reconciles of an Agent whose rules threw, and containing it after
 * RECONCILE_ERROR_TRIES in a row (docs/controller.md#watch-poll-and-cache; the decision itself is
 * the core's containedReconcile). In between, the error is rethrown and the work queue retries
 * with back-off.
 */
import type { Action } from "../core/actions.js";
import type { ReconcileInput } from "../core/input.js";
import { containedReconcile, reconcile } from "../core/state-machine/reconcile.js";

export class ReconcileContainment {
  /** Reconciles of an Agent (by uid) whose rules threw, in a row. */
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly maxTries: number,
    private readonly log: (msg: string) => void,
    private readonly rules: (input: ReconcileInput) => Action[] = reconcile,
  ) {}

  /** The rules' actions; their error until the Agent is contained, then the containment's actions. */
  decide(input: ReconcileInput): Action[] {
    const uid = input.agent.metadata.uid ?? "";
    try {
      const actions = this.rules(input);
      this.failures.delete(uid);
      return actions;
    } catch (err) {
      const tries = (this.failures.get(uid) ?? 0) + 1;
      this.failures.set(uid, tries);
      if (tries < this.maxTries) throw err;
      const contained = containedReconcile(input, { tries, error: String(err) });
      if (contained === undefined) throw err;
      this.log(
        `${input.agent.metadata.name}: reconcile failed ${tries} times in a row, contained: ${String(err)}`,
      );
      this.failures.delete(uid);
      return contained;
    }
  }

  /** The Agent is gone. */
  forget(uid: string): void {
    this.failures.delete(uid);
  }
}
