/**
 * Which cached Agents belong to which Station, kept exact as Agent changes arrive, so concurrency
 * and pruning read a Station's Agents without listing them. `agents(station)` hands out one frozen
 * array per version of the Station's set: a poll builds it once per Station rather than once per
 * Agent, and the core's pruning computes a Station's history once per version (core/pruning.ts).
 */
import type { Agent } from "../core/types.js";
import type { Change } from "./cache.js";

export class StationIndex {
  private readonly byStation = new Map<string, Set<string>>();
  private readonly views = new Map<string, readonly Agent[]>();

  /** `lookup` reads an Agent from the cache by name (the index holds names only). */
  constructor(private readonly lookup: (name: string) => Agent | undefined) {}

  /** Records one Agent change: its Station membership, and drops the views it makes stale. */
  apply(change: Change<Agent>): void {
    const { name } = change;
    const station = change.object.spec?.stationRef;
    // An Agent's stationRef could in principle change: remove it from every other Station.
    for (const [s, set] of this.byStation) {
      if ((s !== station || change.type === "delete") && set.delete(name)) this.views.delete(s);
    }
    if (station) this.views.delete(station);
    if (change.type === "upsert" && station) {
      let set = this.byStation.get(station);
      if (!set) {
        set = new Set();
        this.byStation.set(station, set);
      }
      set.add(name);
    }
  }

  /** Stations with at least one Agent recorded (ever; a Station whose Agents all left may remain). */
  stations(): IterableIterator<string> {
    return this.byStation.keys();
  }

  /** Names of the Station's Agents. */
  names(station: string): ReadonlySet<string> {
    return this.byStation.get(station) ?? EMPTY;
  }

  /** The Station's cached Agents, frozen; the same array until one of them changes. */
  agents(station: string): readonly Agent[] {
    let view = this.views.get(station);
    if (view) return view;
    const out: Agent[] = [];
    for (const name of this.names(station)) {
      const a = this.lookup(name);
      if (a) out.push(a);
    }
    view = Object.freeze(out);
    this.views.set(station, view);
    return view;
  }
}

const EMPTY: ReadonlySet<string> = new Set();
