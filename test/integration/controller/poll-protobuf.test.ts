/**
 * The poll's metadata-only LIST in protobuf (docs/controller.md#watch-poll-and-cache, Poll): a
 * real kube-apiserver answers it for the Agent custom resource, page by page, and the poll's
 * resync over it leaves the cache, and reports the changes, that the JSON path does. An expired
 * continue token still fails the LIST with 410 Expired.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Change } from "../../../src/controller/cache.js";
import { abortableSleep, Informer } from "../../../src/controller/informer.js";
import { cachedAgent } from "../../../src/controller/transform.js";
import type { Agent } from "../../../src/core/types.js";
import type { KubeClient, KubeClientOptions } from "../../../src/kube/client.js";
import type { ListedMetadata } from "../../../src/kube/metadata-protobuf.js";
import { AGENTS } from "../../../src/kube/resources.js";
import { compactEtcd, createTestNamespace, kubeConfig } from "../../harness/context.js";
import { decodedPart } from "../../support/metadata-protobuf-pages.js";
import { clientFor, createAgent, createDefinition, createStation } from "./helpers.js";

/** Pages of 3: the 8 Agents below span 3 pages, so every LIST follows continue tokens. */
const PAGE = 3;
let ns: string;
let protobuf: KubeClient;
let json: KubeClient;
/** Runs before the next request of either client, once, when set. */
let beforeNextRequest: (() => Promise<void>) | undefined;

/** A client whose requests first run `beforeNextRequest` (how a test acts between two LIST pages). */
async function hookedClient(encoding: "protobuf" | "json"): Promise<KubeClient> {
  const c = await clientFor(kubeConfig());
  c.metadataEncoding = encoding;
  // The auth-header callback runs before every request: the one seam between two pages of a LIST.
  const opts = (c as unknown as { opts: KubeClientOptions }).opts;
  const headers = opts.headers;
  opts.headers = async () => {
    const hook = beforeNextRequest;
    beforeNextRequest = undefined;
    await hook?.();
    return headers();
  };
  return c;
}

function informer(
  client: Pick<KubeClient, "list" | "watch" | "get">,
  changes: Change<Agent>[],
): Informer<Agent> {
  return new Informer<Agent>({
    client,
    resource: AGENTS,
    namespace: ns,
    pageSize: PAGE,
    watchTimeoutSeconds: 5,
    backoffBaseMs: 100,
    backoffMaxMs: 1000,
    random: Math.random,
    now: Date.now,
    sleep: abortableSleep,
    transform: cachedAgent,
    onChanges: (ch) => changes.push(...ch),
  });
}

const byName = <T extends { metadata?: { name?: string } }>(xs: T[]) =>
  [...xs].sort((a, b) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""));

beforeAll(async () => {
  protobuf = await hookedClient("protobuf");
  json = await hookedClient("json");
  ns = await createTestNamespace("ctrl-poll-protobuf");
  await createDefinition(json, ns, "def");
  await createStation(json, ns, "st", "def");
  for (let i = 0; i < 7; i++) await createAgent(json, ns, `a-${i}`, "st");
  // One being deleted, held by a finalizer: a deletionTimestamp and a finalizer to decode.
  await json.create(AGENTS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: { name: "held", finalizers: ["agents.re-cinq.com/batch-cleanup"], labels: { team: "t" } },
    spec: { stationRef: "st", parameters: { topic: "tests" } },
  });
  await json.delete(AGENTS, ns, "held");
});

afterAll(async () => {
  await json?.jsonPatch(AGENTS, ns, "held", [{ op: "remove", path: "/metadata/finalizers" }]);
  await protobuf?.close();
  await json?.close();
});

describe("the poll's metadata LIST in protobuf", () => {
  it("lists, page by page, the metadata the JSON path lists, without managedFields", async () => {
    const pagesBefore = protobuf.protobufPages;
    const fromProtobuf = await protobuf.list<{ metadata: ListedMetadata }>(AGENTS, ns, {
      limit: PAGE,
      metadataOnly: true,
    });
    const fromJson = await json.list<{ metadata: Record<string, unknown> }>(AGENTS, ns, {
      limit: PAGE,
      metadataOnly: true,
    });

    expect(protobuf.protobufPages - pagesBefore).toBe(3);
    expect(json.protobufPages).toBe(0);
    expect(fromJson.items.every((it) => Array.isArray(it.metadata.managedFields))).toBe(true);
    const cut = fromJson.items.map((it) => ({
      metadata: decodedPart(it.metadata),
    }));
    expect(fromProtobuf.items.map((it) => ({ metadata: it.metadata }))).toEqual(cut);
    expect(fromProtobuf.items).toHaveLength(8);
    const held = fromProtobuf.items.find((it) => it.metadata.name === "held")?.metadata;
    expect(held?.deletionTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(held?.finalizers).toEqual(["agents.re-cinq.com/batch-cleanup"]);
  });

  it("brings the poll's cache to what the JSON path brings it to, with the same changes", async () => {
    const changes = { protobuf: [] as Change<Agent>[], json: [] as Change<Agent>[] };
    const overProtobuf = informer(protobuf, changes.protobuf);
    const overJson = informer(json, changes.json);
    await overProtobuf.list();
    await overJson.list();
    changes.protobuf.length = 0;
    changes.json.length = 0;

    // A changed, a deleted and a new Agent since the caches were filled.
    await json.mergePatch(AGENTS, ns, "a-1", { metadata: { labels: { touched: "yes" } } });
    await json.delete(AGENTS, ns, "a-2");
    await createAgent(json, ns, "a-new", "st");
    const pagesBefore = protobuf.protobufPages;
    await overProtobuf.resync();
    await overJson.resync();

    expect(protobuf.protobufPages - pagesBefore).toBe(3);
    const summary = (ch: Change<Agent>[]) => ch.map((c) => `${c.type} ${c.name}`).sort();
    expect(summary(changes.protobuf)).toEqual(["delete a-2", "upsert a-1", "upsert a-new"]);
    expect(summary(changes.protobuf)).toEqual(summary(changes.json));
    expect(byName([...overProtobuf.cache.values()])).toEqual(byName([...overJson.cache.values()]));
    expect(overProtobuf.cache.get("a-1")?.metadata.resourceVersion).toBe(
      overJson.cache.get("a-1")?.metadata.resourceVersion,
    );
  });

  it("fails on an expired continue token with 410 Expired, as the JSON path does", async () => {
    const outcome = async (client: KubeClient) => {
      let armed = false;
      // After the first page has arrived: a write, then an etcd compaction past that page's
      // resourceVersion, so the second page's continue token has expired.
      const compactingClient: Pick<KubeClient, "list" | "watch" | "get"> = {
        list: (r, namespace, o) =>
          client.list(r, namespace, {
            ...o,
            map: (item) => {
              if (!armed) {
                armed = true;
                beforeNextRequest = async () => {
                  await createAgent(json, ns, `late-${client.metadataEncoding}`, "st");
                  await compactEtcd();
                };
              }
              return o?.map ? o.map(item) : item;
            },
          }),
        watch: (...args) => client.watch(...args),
        get: (...args) => client.get(...args),
      };
      return informer(compactingClient, [])
        .resync()
        .then(
          () => "no error",
          (e: unknown) => e,
        );
    };
    const overProtobuf = await outcome(protobuf);
    const overJson = await outcome(json);
    expect(overJson).toMatchObject({ status: 410, reason: "Expired" });
    expect(overProtobuf).toMatchObject({ status: 410, reason: "Expired" });
  });
});
