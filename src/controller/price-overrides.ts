/**
 * The installation's price overrides (docs/cost-and-budgets.md#price-overrides): the ConfigMap
 * PRICE_OVERRIDES_CONFIGMAP in the controller's namespace, key `prices.yaml`, read again whenever
 * its resourceVersion changes (a GET each poll interval: the controller's Role grants `get` on
 * that one name and nothing else on ConfigMaps). No restart, no new image.
 *
 * A refused entry never stops counting: the rest applies, the model keeps its last good price, and
 * a Warning Event `PriceOverrideRefused` on the ConfigMap names the field (`kubectl describe
 * configmap agent-controller-prices`), counted by controller_price_override_errors_total.
 */
import type { V1ConfigMap } from "@kubernetes/client-node";
import {
  PRICE_OVERRIDES_KEY,
  type PriceOverrideError,
  parsePriceOverrides,
} from "../core/pricing/overrides.js";
import type { PriceTable } from "../core/pricing/prices.js";
import type { KubeClient } from "../kube/client.js";
import type { EventRegarding } from "../kube/event-writer.js";
import type { Resource } from "../kube/resources.js";
import type { KubeEventRecorder } from "./kube-events/recorder.js";

export const CONFIGMAPS: Resource = { group: "", version: "v1", plural: "configmaps" };
/** The ConfigMap's name (deploy/base/price-overrides.yaml). */
export const PRICE_OVERRIDES_CONFIGMAP = "agent-controller-prices";

export interface PriceOverridesDeps {
  client: Pick<KubeClient, "get">;
  namespace: string;
  kubeEvents: KubeEventRecorder;
  /** Counts refused entries (controller_price_override_errors_total). */
  onRefused?: (count: number) => void;
  log: (msg: string) => void;
}

export class PriceOverrides {
  private current: PriceTable = {};
  private version: string | undefined;

  constructor(private readonly d: PriceOverridesDeps) {}

  /** The overrides as last read: what every reconcile prices with. */
  table(): PriceTable {
    return this.current;
  }

  /** Reads the ConfigMap; parses it again only when it changed. A failed read keeps the table. */
  async refresh(signal?: AbortSignal): Promise<void> {
    let cm: V1ConfigMap | undefined;
    try {
      cm = await this.d.client.get<V1ConfigMap>(
        CONFIGMAPS,
        this.d.namespace,
        PRICE_OVERRIDES_CONFIGMAP,
        signal,
      );
    } catch (err) {
      this.d.log(
        `price overrides: reading ConfigMap ${PRICE_OVERRIDES_CONFIGMAP} failed, keeping the last read: ${String(err)}`,
      );
      return;
    }
    const version = cm === undefined ? "" : `${cm.metadata?.uid}/${cm.metadata?.resourceVersion}`;
    if (version === this.version) return;
    this.version = version;
    const parsed = parsePriceOverrides(cm?.data?.[PRICE_OVERRIDES_KEY], this.current);
    this.current = parsed.table;
    if (cm !== undefined && parsed.errors.length > 0) this.refused(cm, parsed.errors);
    this.d.log(
      `price overrides: ${Object.keys(parsed.table).length} model price(s) from ConfigMap ${PRICE_OVERRIDES_CONFIGMAP}, ${parsed.errors.length} refused`,
    );
  }

  private refused(cm: V1ConfigMap, errors: PriceOverrideError[]): void {
    const regarding: EventRegarding = {
      apiVersion: "v1",
      kind: "ConfigMap",
      namespace: cm.metadata?.namespace ?? this.d.namespace,
      name: cm.metadata?.name ?? PRICE_OVERRIDES_CONFIGMAP,
      uid: cm.metadata?.uid ?? "",
    };
    for (const e of errors) {
      this.d.kubeEvents.record(regarding, {
        type: "Warning",
        reason: "PriceOverrideRefused",
        action: "LoadPrices",
        note: `${e.field}: ${e.message}`,
      });
    }
    this.d.onRefused?.(errors.length);
  }
}
