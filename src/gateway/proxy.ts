/**
 * One model call through the gateway (docs/gateway.md): match the raw target, check the run's
 * credential, swap the client's credentials for the vendor's key, forward to the vendor's fixed
 * upstream, and stream the answer back chunk by chunk while a tee meters it.
 *
 * The upstream of each vendor is an undici Pool bound to one origin at start: a request only ever
 * chooses a path on it, never a host. The answer is forwarded as it arrives (each chunk written to
 * the client before it is parsed); nothing is rewritten or dropped. No total duration is imposed;
 * only the idle bounds apply.
 *
 * A client that goes away mid-answer does not stop the upstream read: the gateway keeps reading to
 * the provider's last event, because only that event carries the count the provider bills, and
 * the extra output is bounded by the request's own max tokens (docs/gateway.md#metering).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Writable } from "node:stream";
import type { Dispatcher } from "undici";
import { type RunClaims, verifyRunCredential } from "../core/run-job/gateway-credential.js";
import type { JsonLineLogger } from "../log.js";
import type { Admission, BudgetGate } from "./budget-gate.js";
import { downstreamResponseHeaders, presentedCredentials, upstreamRequestHeaders } from "./headers.js";
import type { GatewayMetrics } from "./metrics.js";
import {
  type KeySource,
  type ProviderKey,
  type RunLookup,
  type RunState,
  RunUnconfirmedError,
  type UsageStore,
} from "./ports.js";
import { readBoundedBody } from "./request-body.js";
import { callCostUsd, requestFacts, worstCaseUsd } from "./request-cost.js";
import { type MatchedTarget, matchTarget } from "./routes.js";
import type { RunWarnings } from "./run-warnings.js";
import { Meter, usageReaderFor } from "./usage/meter.js";
import { type ErrorKind, errorAnswer, type GatewayVendor } from "./vendors.js";

export interface ProxyDeps {
  /** Budgets in flight (cluster mode); without it no request is held to a budget. */
  budget?: Pick<BudgetGate, "admit">;
  /** One undici dispatcher per vendor, each bound to that vendor's configured origin. */
  upstreams: Readonly<Record<GatewayVendor, Dispatcher>>;
  /** The gateway key the run credentials are signed with. */
  credentialKey: Uint8Array;
  keys: KeySource;
  runs: RunLookup;
  usage: UsageStore;
  metrics: GatewayMetrics;
  logger: JsonLineLogger;
  /**
   * Warning Events on the run's Agent (cluster mode, run-warnings.ts) for refusals its author must
   * see besides the CLI's output: a provider key the gateway cannot find or read.
   */
  warnings?: Pick<RunWarnings, "warn">;
  /** The bound on a request body, in bytes. */
  maxRequestBytes: number;
  /** undici's headersTimeout and bodyTimeout upstream: the longest silence, not a total. */
  idleTimeoutMs: number;
}

/** The Warning Events of a run whose provider key the gateway cannot find, or cannot read now. */
export const KEY_MISSING_REASON = "ProviderKeyMissing";
export const KEY_UNREADABLE_REASON = "ProviderKeyUnreadable";

/** The vendor whose error shape a request that matched no route is answered in. */
function guessVendor(req: IncomingMessage): GatewayVendor {
  const url = req.url ?? "";
  if (url.startsWith("/v1beta")) return "gemini";
  if (req.headers["anthropic-version"] !== undefined || url.startsWith("/v1/messages")) return "anthropic";
  return "openai";
}

function answer(
  res: ServerResponse,
  vendor: GatewayVendor,
  kind: ErrorKind,
  message: string,
  close = false,
): number {
  const { status, body } = errorAnswer(vendor, kind, message);
  if (res.headersSent || res.destroyed) return status;
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...(close ? { connection: "close" } : {}),
  });
  res.end(body);
  return status;
}

const who = (c: RunClaims) => `Agent ${c.namespace}/${c.name}`;

/** Handles one request on the proxy port; resolves once the answer (and its metering) is done. */
export async function proxyRequest(
  req: IncomingMessage,
  res: ServerResponse,
  deps: ProxyDeps,
): Promise<void> {
  const startedAt = new Date();
  const started = performance.now();
  const method = req.method ?? "GET";
  const rawTarget = req.url ?? "";
  const q = rawTarget.indexOf("?");
  const rawQuery = q < 0 ? "" : rawTarget.slice(q + 1);
  let routeName = "none";
  const refuse = (vendor: GatewayVendor, kind: ErrorKind, reason: string, message: string, close = false) => {
    const status = answer(res, vendor, kind, message, close);
    deps.metrics.refusals.inc({ reason });
    deps.metrics.requests.inc({
      station: "",
      vendor,
      model: "unknown",
      route: routeName,
      code: String(status),
    });
    deps.logger.info("refused", {
      reason,
      status,
      method,
      path: (q < 0 ? rawTarget : rawTarget.slice(0, q)).slice(0, 200),
    });
  };

  const match = matchTarget(method, rawTarget, req.headers.upgrade !== undefined);
  if (!match.ok) {
    refuse(guessVendor(req), match.kind, match.kind, match.message);
    return;
  }
  const { target } = match;
  routeName = target.route.name;
  const routeVendor = target.route.vendors[0] as GatewayVendor;

  const presented = presentedCredentials(req.rawHeaders, rawQuery);
  if (presented.length === 0) {
    refuse(
      routeVendor,
      "unauthenticated",
      "no-credential",
      "gateway: no run credential (send the run's credential as x-api-key, Authorization: Bearer, x-goog-api-key or ?key=)",
    );
    return;
  }
  if (presented.length > 1) {
    refuse(
      routeVendor,
      "unauthenticated",
      "several-credentials",
      "gateway: the request carries more than one credential; send only the run's own",
    );
    return;
  }
  const check = verifyRunCredential(deps.credentialKey, presented[0] as string);
  if (!check.ok) {
    refuse(
      routeVendor,
      "unauthenticated",
      "invalid-credential",
      "gateway: the credential is not a run credential of this gateway (forged, damaged or signed with another key)",
    );
    return;
  }
  const claims = check.claims;
  if (!target.route.vendors.includes(claims.vendor)) {
    refuse(
      routeVendor,
      "forbidden",
      "other-vendor",
      `gateway: ${who(claims)} may call the ${claims.vendor} API only, not ${routeVendor}`,
    );
    return;
  }
  const vendor = claims.vendor;
  let runState: RunState;
  try {
    runState = await deps.runs.runState(claims);
  } catch (err) {
    // Fail closed: a run the gateway cannot confirm is not served (docs/gateway.md#refusals).
    const cause = err instanceof RunUnconfirmedError ? err.message : "the run lookup failed";
    deps.logger.error("run lookup failed", { agent: who(claims), error: (err as Error).message });
    refuse(
      vendor,
      "unavailable",
      "run-unconfirmed",
      `gateway: cannot confirm that ${who(claims)} is still running (${cause}); try again later`,
    );
    return;
  }
  if (runState.state === "terminal") {
    refuse(
      vendor,
      "forbidden",
      "run-ended",
      `gateway: ${who(claims)} has ended (phase ${runState.phase}); its credential no longer works`,
    );
    return;
  }
  if (runState.state === "deleted") {
    refuse(
      vendor,
      "forbidden",
      "run-deleted",
      `gateway: ${who(claims)} (uid ${claims.uid}) no longer exists; its credential no longer works`,
    );
    return;
  }
  if (runState.state === "foreign") {
    refuse(
      vendor,
      "forbidden",
      "other-namespace",
      `gateway: ${who(claims)} is not in namespace ${runState.served}, the only one this gateway serves`,
    );
    return;
  }
  let found: ProviderKey;
  try {
    found = await deps.keys.keyFor(claims, vendor);
  } catch (err) {
    deps.logger.error("key lookup failed", { agent: who(claims), error: (err as Error).message });
    const message = `gateway: cannot read the ${vendor} API key for ${who(claims)} now (${(err as Error).message}); try again later`;
    refuse(vendor, "unavailable", "key-unconfirmed", message);
    void deps.warnings?.warn(
      claims,
      KEY_UNREADABLE_REASON,
      "ReadProviderKey",
      message,
      KEY_UNREADABLE_REASON,
    );
    return;
  }
  if (!("key" in found) || found.key === "") {
    const why = "missing" in found ? found.missing : "the key is empty";
    const message = `gateway: no ${vendor} API key for ${who(claims)}: ${why}`;
    refuse(vendor, "forbidden", "no-key", message);
    void deps.warnings?.warn(claims, KEY_MISSING_REASON, "ReadProviderKey", message);
    return;
  }
  const key = found.key;

  let body: Buffer | undefined;
  if (method !== "GET" && method !== "HEAD") {
    const read = await readBoundedBody(req, deps.maxRequestBytes);
    if (!read.ok) {
      if (read.reason === "too-large") {
        refuse(
          vendor,
          "too-large",
          "too-large",
          `gateway: the request body is larger than the gateway's limit of ${deps.maxRequestBytes} bytes (GATEWAY_MAX_REQUEST_BYTES)`,
          true,
        );
      }
      return;
    }
    body = read.bytes;
  }

  const facts = requestFacts(vendor, body);
  const model = target.route.model ?? facts.model;
  const modelLabel = deps.metrics.modelLabel(vendor, model);
  // Cached by the lookup that just confirmed the run; "" outside a cluster (no budget, no label).
  const station = (await deps.runs.stationOf(claims).catch(() => undefined)) ?? "";
  let reservedUsd = 0;
  if (target.route.metered && deps.budget && station !== "") {
    const worst = worstCaseUsd(
      vendor,
      model ?? "unknown",
      body?.byteLength ?? 0,
      facts.maxOutputTokens,
      Date.now(),
    );
    let admission: Admission;
    try {
      admission = await deps.budget.admit(claims, vendor, station, worst);
    } catch (err) {
      deps.logger.error("budget check failed", { agent: who(claims), error: (err as Error).message });
      refuse(
        vendor,
        "unavailable",
        "budget-unconfirmed",
        `gateway: cannot read the budget of Station ${claims.namespace}/${station} now (${(err as Error).message}); try again later`,
      );
      return;
    }
    if (!admission.ok) {
      refuse(vendor, "forbidden", "budget", admission.message);
      return;
    }
    reservedUsd = admission.reservedUsd;
  }
  await forward({
    req,
    res,
    deps,
    target,
    claims,
    vendor,
    key,
    body,
    model,
    modelLabel,
    station,
    reservedUsd,
    startedAt,
    started,
  });
}

interface Forward {
  req: IncomingMessage;
  res: ServerResponse;
  deps: ProxyDeps;
  target: MatchedTarget;
  claims: RunClaims;
  vendor: GatewayVendor;
  key: string;
  body: Buffer | undefined;
  model: string | undefined;
  modelLabel: string;
  /** The run's Station, for the metrics ("" when unknown). */
  station: string;
  /** The worst case reserved against the Station's budget, released by the call's record. */
  reservedUsd: number;
  startedAt: Date;
  started: number;
}

async function forward(f: Forward): Promise<void> {
  const { req, res, deps, target, vendor } = f;
  let clientAborted = false;
  res.once("close", () => {
    if (res.writableFinished) return;
    clientAborted = true;
    deps.metrics.clientAborts.inc({ vendor });
  });
  let status = 0;
  let meter: Meter | undefined;
  let firstByte = false;
  const onFirstByte = () => {
    if (firstByte) return;
    firstByte = true;
    deps.metrics.timeToFirstByte.observe(
      { station: f.station, vendor, model: f.modelLabel },
      (performance.now() - f.started) / 1000,
    );
  };
  let upstreamError: string | undefined;
  const run = { namespace: f.claims.namespace, name: f.claims.name, uid: f.claims.uid };
  if (target.route.metered) deps.usage.started(run, vendor);
  let recorded = false;
  // The call's record, once: before the answer ends for the client when it ends cleanly (so a CLI
  // that read it to its end cannot be priced without it), else after the upstream broke off.
  const recordCall = async () => {
    if (recorded || !target.route.metered) return;
    recorded = true;
    const reading = meter?.finish() ?? { complete: false };
    const costUsd = reading.usage
      ? callCostUsd(vendor, reading.model ?? f.model ?? "unknown", reading.usage, Date.now())
      : 0;
    if (reading.usage) deps.metrics.countUsage(f.station, vendor, f.modelLabel, reading.usage, costUsd);
    await durable(
      deps.usage.record({
        run,
        vendor,
        route: target.route.name,
        ...(f.model !== undefined ? { requestedModel: f.model } : {}),
        ...(reading.model !== undefined ? { model: reading.model } : {}),
        status,
        ...(reading.usage ? { usage: reading.usage } : {}),
        ...(reading.unreadable ? { unreadable: reading.unreadable } : {}),
        complete: reading.complete,
        clientAborted,
        ...(upstreamError !== undefined ? { upstreamError } : {}),
        ...(costUsd > 0 ? { costUsd } : {}),
        ...(f.reservedUsd > 0 ? { reservedUsd: f.reservedUsd } : {}),
        startedAt: f.startedAt,
        endedAt: new Date(),
      }),
      (err) =>
        deps.logger.error("usage not recorded", {
          agent: `${f.claims.namespace}/${f.claims.name}`,
          error: (err as Error).message,
          usage: reading.usage,
        }),
    );
  };
  try {
    await deps.upstreams[vendor].stream(
      {
        path: `${target.path}${target.query}`,
        method: req.method as Dispatcher.HttpMethod,
        headers: upstreamRequestHeaders(req.rawHeaders, vendor, f.key),
        body: f.body,
        headersTimeout: deps.idleTimeoutMs,
        bodyTimeout: deps.idleTimeoutMs,
      },
      ({ statusCode, headers }) => {
        status = statusCode;
        const responseHeaders = downstreamResponseHeaders(headers as Record<string, string | string[]>);
        const contentType = responseHeaders["content-type"];
        if (target.route.metered) {
          const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
          meter = new Meter(usageReaderFor(vendor), {
            contentType: first(contentType),
            contentEncoding: first(responseHeaders["content-encoding"]),
          });
        }
        if (!res.destroyed) {
          res.writeHead(statusCode, responseHeaders);
          res.flushHeaders();
        }
        return new Tee(res, meter, onFirstByte, recordCall);
      },
    );
  } catch (err) {
    const e = err as Error & { code?: string };
    upstreamError = e.code ?? e.message;
    if (status === 0) {
      // Nothing reached the client yet: answer in the vendor's own error shape.
      const timeout = e.code === "UND_ERR_HEADERS_TIMEOUT" || e.code === "UND_ERR_CONNECT_TIMEOUT";
      status = answer(
        res,
        vendor,
        timeout ? "gateway-timeout" : "bad-gateway",
        `gateway: the ${vendor} upstream did not answer (${upstreamError})`,
      );
    } else if (!res.destroyed) {
      // The answer broke off upstream: the client sees it break off too, never a clean end.
      res.destroy();
    }
    deps.logger.warn("upstream failed", {
      vendor,
      agent: `${f.claims.namespace}/${f.claims.name}`,
      error: upstreamError,
    });
  }
  deps.metrics.requests.inc({
    station: f.station,
    vendor,
    model: f.modelLabel,
    route: target.route.name,
    code: String(status),
  });
  await recordCall();
}

/**
 * How long an answer's end waits for its record to be durable. The store keeps retrying past it
 * (the record is never dropped); the client only stops waiting for it.
 */
export const RECORD_WAIT_MS = 5_000;

async function durable(write: Promise<void>, onError: (err: unknown) => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      write,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, RECORD_WAIT_MS);
      }),
    ]);
  } catch (err) {
    onError(err);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Writes each upstream chunk to the client first, then hands it to the meter. While the client
 * is there its backpressure holds the upstream read; once it is gone, chunks go to the meter only.
 */
class Tee extends Writable {
  constructor(
    private readonly res: ServerResponse,
    private readonly meter: Meter | undefined,
    private readonly onFirstByte: () => void,
    private readonly beforeEnd: () => Promise<void>,
  ) {
    super();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const res = this.res;
    let wait = false;
    if (!res.destroyed && res.writable) {
      this.onFirstByte();
      wait = !res.write(chunk);
    }
    this.meter?.push(chunk);
    if (!wait) {
      callback();
      return;
    }
    const go = () => {
      res.off("drain", go);
      res.off("close", go);
      callback();
    };
    res.on("drain", go);
    res.on("close", go);
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.res.destroyed && this.res.writable) this.onFirstByte();
    // The last bytes are out; the end waits for the call's record (RECORD_WAIT_MS at most).
    void this.beforeEnd().then(() => {
      if (!this.res.destroyed) this.res.end();
      callback();
    });
  }
}
