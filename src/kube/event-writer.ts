/**
 * The events.k8s.io/v1 Event objects the controller's recorder (src/controller/kube-events/) and
 * the gateway write, and the two API calls they need: create, and a merge patch of `series` for a
 * repeat. The controller's Role grants exactly `create` and `patch` on events.k8s.io events; the
 * gateway's `create` only.
 */
import type { KubeEvent } from "../core/actions.js";
import type { AgentRef } from "../core/types.js";
import type { KubeClient } from "./client.js";
import { isStatus } from "./errors.js";
import { type Resource, resourcePath } from "./resources.js";

export const KUBE_EVENTS: Resource = { group: "events.k8s.io", version: "v1", plural: "events" };

/** `reportingController` of every Event the controller writes. */
export const REPORTING_CONTROLLER = "agents.re-cinq.com/agent-controller";
/** `reportingController` of every Event the model gateway writes. */
export const REPORTING_GATEWAY = "agents.re-cinq.com/agent-gateway";

/** API limits (k8s.io/kubernetes pkg/apis/core/validation/events.go). */
export const NOTE_MAX_BYTES = 1024;
const REASON_MAX = 128;
const ACTION_MAX = 128;
const INSTANCE_MAX = 128;

export interface EventSeries {
  count: number;
  lastObservedTime: string;
}

export interface EventsV1Event {
  apiVersion: "events.k8s.io/v1";
  kind: "Event";
  metadata: { name: string; namespace: string };
  eventTime: string;
  reportingController: string;
  reportingInstance: string;
  action: string;
  reason: string;
  type: KubeEvent["type"];
  note: string;
  regarding: { apiVersion: string; kind: string; namespace: string; name: string; uid: string };
  series?: EventSeries;
}

/** metav1.MicroTime: RFC 3339 with six fractional digits, UTC. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** At most `max` UTF-8 bytes, cut at a character boundary, ending in "…" when cut. */
export function truncateBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  const ellipsis = "…";
  let out = "";
  let size = Buffer.byteLength(ellipsis);
  for (const ch of text) {
    const n = Buffer.byteLength(ch);
    if (size + n > max) break;
    out += ch;
    size += n;
  }
  return out + ellipsis;
}

/**
 * The object an Event is about: an Agent unless `kind` says otherwise (the price-override
 * ConfigMap, docs/cost-and-budgets.md#price-overrides).
 */
export type EventRegarding = AgentRef & { apiVersion?: string; kind?: string };

export function eventObject(o: {
  name: string;
  regarding: EventRegarding;
  event: KubeEvent;
  note: string;
  at: number;
  reportingInstance: string;
  series?: EventSeries;
  /** REPORTING_CONTROLLER unless said otherwise. */
  reportingController?: string;
}): EventsV1Event {
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: o.name, namespace: o.regarding.namespace },
    eventTime: microTime(o.at),
    reportingController: o.reportingController ?? REPORTING_CONTROLLER,
    reportingInstance: o.reportingInstance.slice(0, INSTANCE_MAX),
    action: o.event.action.slice(0, ACTION_MAX),
    reason: o.event.reason.slice(0, REASON_MAX),
    type: o.event.type,
    note: truncateBytes(o.note, NOTE_MAX_BYTES),
    regarding: {
      apiVersion: o.regarding.apiVersion ?? "agents.re-cinq.com/v1beta1",
      kind: o.regarding.kind ?? "Agent",
      namespace: o.regarding.namespace,
      name: o.regarding.name,
      uid: o.regarding.uid,
    },
    ...(o.series ? { series: o.series } : {}),
  };
}

/** Where the recorder writes Events: the API server in production, a recording fake in tests. */
export interface EventWriter {
  create(event: EventsV1Event): Promise<void>;
  /** "not_found" when the Event is gone (expired after the API server's event TTL, or deleted). */
  patchSeries(namespace: string, name: string, series: EventSeries): Promise<"ok" | "not_found">;
}

/** The writer to the API server, through the controller's own client. */
export function apiEventWriter(client: Pick<KubeClient, "request" | "mergePatch">): EventWriter {
  return {
    async create(event) {
      // A plain POST: KubeClient.create would GET the existing object on 409, and the Role grants
      // no `get` on events. Names are unique per process, so a 409 is a repeat of our own create.
      try {
        await client.request("POST", resourcePath(KUBE_EVENTS, event.metadata.namespace), { body: event });
      } catch (err) {
        if (!isStatus(err, 409)) throw err;
      }
    },
    async patchSeries(namespace, name, series) {
      try {
        await client.mergePatch(KUBE_EVENTS, namespace, name, { series });
        return "ok";
      } catch (err) {
        if (isStatus(err, 404)) return "not_found";
        throw err;
      }
    },
  };
}
