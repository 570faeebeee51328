/**
 * The gateway's egress listener (docs/gateway.md#egress-listener): an HTTP proxy the run pods'
 * HTTPS_PROXY / HTTP_PROXY name. `CONNECT host:port` opens a tunnel; an absolute-form `http://`
 * request is forwarded; anything else is a 400. Each request goes through the same steps, in an
 * order that tells an unauthorised client nothing about names: the target is validated, the
 * credential presented, the run and the destination authorised (the injected `authorize`), the
 * name resolved, every address checked against the address policy, and a checked address
 * connected to.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { isIP, type Socket } from "node:net";
import type { ClientErrorStatus } from "../../http-server-limits.js";
import { answerClientErrors, timeoutServerOptions } from "../../http-server-limits.js";
import type { JsonLineLogger } from "../../log.js";
import type { GatewayMetrics } from "../metrics.js";
import { AddressPolicy, type Cidr, permittedAddresses, type ResolvedAddress } from "./address-policy.js";
import { type Dialled, dial } from "./dial.js";
import { forwardRequest } from "./forward.js";
import { proxyCredential } from "./proxy-auth.js";
import { type EgressTarget, parseAbsoluteTarget, parseAuthority } from "./target.js";
import { joinTunnel } from "./tunnel.js";

/** The run and the program a credential speaks for. */
export interface EgressWho {
  namespace: string;
  name: string;
  uid: string;
  /** `init`, `agent` or `courier`: the role signed into the credential. */
  role: string;
}

export type EgressDecision =
  | { ok: true; who: EgressWho }
  | { ok: false; status: 407 | 403 | 503; reason: string; who?: EgressWho };

/** Low-cardinality names of why a request was refused, the metrics' `reason` label. */
export type EgressRefusalKind =
  | "bad-request"
  | "no-credential"
  | "bad-credential"
  | "forbidden"
  | "unavailable"
  | "private-address"
  | "unresolved"
  | "connect-failed";

export interface EgressRefusal {
  who?: EgressWho;
  host: string;
  port: number;
  status: number;
  kind: EgressRefusalKind;
  reason: string;
}

export interface EgressTunnel {
  who: EgressWho;
  host: string;
  port: number;
  /** The checked address connected to. */
  address: string;
  mode: "connect" | "forward";
}

export type EgressLookup = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export interface EgressDeps {
  /**
   * Whether the credential may reach `host:port`: its signature, its run still active, the
   * destination among those signed into it. Called with the password of a well-formed Basic
   * Proxy-Authorization; a missing or malformed header is a 407 without asking it.
   */
  authorize(credential: string, host: string, port: number): Promise<EgressDecision>;
  /** Resolves a name to all its addresses; node:dns lookup with `all: true` unless injected. */
  lookup?: EgressLookup;
  /** GATEWAY_EGRESS_PRIVATE_CIDRS: the non-public ranges the installation lets runs reach. */
  privateCidrs: readonly Cidr[];
  /** Each refusal (the listener counts it in the metrics itself), for the usage record and Events. */
  onRefused?(event: EgressRefusal): void;
  /** Each tunnel opened and each request forwarded (counted in the metrics by the listener). */
  onTunnel?(event: EgressTunnel): void;
  metrics?: GatewayMetrics;
  logger: JsonLineLogger;
  /** The longest silence on a tunnel or a forwarded request, never a total duration. */
  idleTimeoutMs: number;
  /** How long one address may take to accept a connection (dial.ts's default unless set). */
  connectTimeoutMs?: number;
}

/** The time a request head may take to arrive. */
export const EGRESS_HEADERS_TIMEOUT_MS = 60_000;
/**
 * The bound on a request head. An egress credential is at most 8192 characters, about 11 KiB as
 * Basic; the rest is room for a client's ordinary headers.
 */
export const EGRESS_MAX_HEADER_BYTES = 32 * 1024;

const defaultLookup: EgressLookup = (hostname) => dnsLookup(hostname, { all: true });

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  407: "Proxy Authentication Required",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
};

const PROXY_AUTHENTICATE = 'Basic realm="agent-gateway"';

interface Answer {
  status: number;
  body: string;
}

/** How an answer reaches the client: raw on a CONNECT socket, or on the request's response. */
interface Answerer {
  refuse(answer: Answer): void;
}

function rawAnswer(socket: Socket): Answerer {
  return {
    refuse: ({ status, body }) => {
      if (socket.destroyed) return;
      const head = [
        `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? "Error"}`,
        "Content-Type: text/plain; charset=utf-8",
        `Content-Length: ${Buffer.byteLength(body)}`,
        ...(status === 407 ? [`Proxy-Authenticate: ${PROXY_AUTHENTICATE}`] : []),
        "Connection: close",
      ];
      socket.end(`${head.join("\r\n")}\r\n\r\n${body}`);
    },
  };
}

function responseAnswer(res: ServerResponse): Answerer {
  return {
    refuse: ({ status, body }) => {
      if (res.headersSent || res.destroyed) {
        res.destroy();
        return;
      }
      res.writeHead(status, {
        "content-type": "text/plain; charset=utf-8",
        "content-length": Buffer.byteLength(body),
        ...(status === 407 ? { "proxy-authenticate": PROXY_AUTHENTICATE } : {}),
        connection: "close",
      });
      res.end(body);
    },
  };
}

/** `gateway egress: <host>:<port> refused[ for the <role> of Agent <ns>/<name>]: <reason>` */
export function refusalText(host: string, port: number, reason: string, who?: EgressWho): string {
  const whose = who === undefined ? "" : ` for the ${who.role} of Agent ${who.namespace}/${who.name}`;
  return `gateway egress: ${host}:${port} refused${whose}: ${reason}`;
}

const decisionKind: Record<407 | 403 | 503, EgressRefusalKind> = {
  407: "bad-credential",
  403: "forbidden",
  503: "unavailable",
};

type Admission =
  | { ok: true; who: EgressWho; addresses: readonly ResolvedAddress[] }
  | { ok: false; refusal: EgressRefusal; body: string };

export class EgressProxy {
  private readonly policy: AddressPolicy;
  private readonly lookup: EgressLookup;
  /** The client side of each open tunnel: the HTTP server no longer tracks a socket once it is a tunnel. */
  private readonly tunnels = new Set<Socket>();

  constructor(private readonly deps: EgressDeps) {
    this.policy = new AddressPolicy(deps.privateCidrs);
    this.lookup = deps.lookup ?? defaultLookup;
  }

  /** A node:http server speaking the proxy protocol; listening is the caller's. */
  createServer(): Server {
    const server = createServer({
      ...timeoutServerOptions({
        headersMs: EGRESS_HEADERS_TIMEOUT_MS,
        // No total on a forwarded request's body: the idle bound below is the only one.
        requestMs: 0,
        keepAliveMs: 5_000,
      }),
      maxHeaderSize: EGRESS_MAX_HEADER_BYTES,
    });
    server.setTimeout(this.deps.idleTimeoutMs);
    server.on("connect", (req: IncomingMessage, socket: Socket, head: Buffer) => {
      this.handleConnect(req, socket, head).catch((err) =>
        this.fault(err, () =>
          rawAnswer(socket).refuse({ status: 500, body: "gateway egress: internal error" }),
        ),
      );
    });
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      this.handleRequest(req, res).catch((err) =>
        this.fault(err, () =>
          responseAnswer(res).refuse({ status: 500, body: "gateway egress: internal error" }),
        ),
      );
    });
    answerClientErrors(server, (status: ClientErrorStatus) => {
      this.deps.metrics?.egressRefusals.inc({ reason: "bad-request" });
      return { contentType: "text/plain; charset=utf-8", body: `gateway egress: ${STATUS_TEXT[status]}` };
    });
    return server;
  }

  /** Ends every open tunnel (each takes its upstream with it): a shutdown's last step after its grace. */
  closeTunnels(): void {
    for (const socket of this.tunnels) socket.destroy();
  }

  private fault(err: unknown, close: () => void): void {
    // A fault of the listener itself: never leave a client waiting on it.
    this.deps.logger.error("egress request failed", { error: String((err as Error)?.stack ?? err) });
    close();
  }

  /**
   * The steps both kinds of request share: the target's syntax, the admission (credential, run,
   * destination, address policy) and the connection, each answering its own refusal. Undefined
   * when the request was answered here.
   */
  private async admitAndDial(
    req: IncomingMessage,
    answer: Answerer,
    parsed: { ok: true; target: EgressTarget } | { ok: false; message: string },
  ): Promise<{ who: EgressWho; host: string; port: number; dialled: Dialled } | undefined> {
    if (!parsed.ok) {
      this.badRequest(answer, parsed.message);
      return undefined;
    }
    const admission = await this.admit(req, parsed.target);
    if (!admission.ok) {
      this.refuse(answer, admission);
      return undefined;
    }
    const { who } = admission;
    const { host, port } = parsed.target;
    try {
      return { who, host, port, dialled: await dial(admission.addresses, port, this.deps.connectTimeoutMs) };
    } catch (err) {
      this.refuse(answer, this.connectFailure(parsed.target, who, err as Error));
      return undefined;
    }
  }

  private async handleConnect(req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    // Until the tunnel is joined, a client error only ends this socket (what the client sends
    // meanwhile stays buffered in it: Node hands the socket over paused).
    const onEarlyError = () => socket.destroy();
    socket.on("error", onEarlyError);
    const connected = await this.admitAndDial(req, rawAnswer(socket), parseAuthority(req.url ?? ""));
    if (!connected) return;
    const { who, host, port, dialled } = connected;
    if (socket.destroyed) {
      dialled.socket.destroy();
      return;
    }
    socket.off("error", onEarlyError);
    socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    joinTunnel(socket, dialled.socket, head, this.deps.idleTimeoutMs);
    this.tunnels.add(socket);
    socket.once("close", () => this.tunnels.delete(socket));
    this.opened({ who, host, port, address: dialled.address, mode: "connect" });
  }

  private async handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const answer = responseAnswer(res);
    const parsed = parseAbsoluteTarget(req.url ?? "");
    const connected = await this.admitAndDial(req, answer, parsed);
    if (!connected || !parsed.ok) return;
    const { who, host, port, dialled } = connected;
    this.opened({ who, host, port, address: dialled.address, mode: "forward" });
    await forwardRequest(
      req,
      res,
      { socket: dialled.socket, path: parsed.path, hostHeader: parsed.hostHeader },
      this.deps.idleTimeoutMs,
      (err) => this.refuse(answer, this.connectFailure(parsed.target, who, err)),
    );
  }

  /** Credential, authorisation, resolution and the address policy, in that order. */
  private async admit(req: IncomingMessage, target: EgressTarget): Promise<Admission> {
    const { host, port, hostname } = target;
    const refused = (
      status: number,
      kind: EgressRefusalKind,
      reason: string,
      who?: EgressWho,
      body = refusalText(host, port, reason, who),
    ): Admission => ({
      ok: false,
      refusal: { ...(who ? { who } : {}), host, port, status, kind, reason },
      body,
    });
    const presented = proxyCredential(req.rawHeaders);
    if (!presented.ok) return refused(407, "no-credential", presented.reason);
    let decision: EgressDecision;
    try {
      decision = await this.deps.authorize(presented.credential, host, port);
    } catch (err) {
      // It could not tell (the API server did not answer): refused, never let through.
      return refused(503, "unavailable", `the run could not be confirmed: ${(err as Error).message}`);
    }
    if (!decision.ok)
      return refused(decision.status, decisionKind[decision.status], decision.reason, decision.who);
    const { who } = decision;
    let answers: readonly ResolvedAddress[];
    const literal = isIP(hostname);
    try {
      // An IP literal is its own answer; a name is resolved once, here, and never again.
      answers = literal !== 0 ? [{ address: hostname, family: literal }] : await this.lookup(hostname);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      const reason = `cannot resolve ${hostname}: ${code}`;
      return refused(502, "unresolved", reason, who, `gateway egress: ${reason}`);
    }
    const choice = permittedAddresses(this.policy, answers);
    if (!choice.ok) {
      const reason =
        choice.address === hostname
          ? `${hostname} is ${choice.why} (GATEWAY_EGRESS_PRIVATE_CIDRS does not include it)`
          : `${hostname} resolves to ${choice.address}, ${choice.why} (GATEWAY_EGRESS_PRIVATE_CIDRS does not include it)`;
      return refused(403, "private-address", reason, who);
    }
    return { ok: true, who, addresses: choice.addresses };
  }

  private connectFailure(target: EgressTarget, who: EgressWho, err: Error): Admission & { ok: false } {
    const reason = `cannot connect to ${target.host}:${target.port}: ${err.message}`;
    return {
      ok: false,
      refusal: { who, host: target.host, port: target.port, status: 502, kind: "connect-failed", reason },
      body: `gateway egress: ${reason}`,
    };
  }

  private badRequest(answer: Answerer, body: string): void {
    this.deps.metrics?.egressRefusals.inc({ reason: "bad-request" });
    this.deps.logger.info("egress refused", { status: 400, reason: body });
    answer.refuse({ status: 400, body });
  }

  private refuse(answer: Answerer, admission: Admission & { ok: false }): void {
    const { refusal, body } = admission;
    this.deps.metrics?.egressRefusals.inc({ reason: refusal.kind });
    this.deps.logger.info("egress refused", {
      status: refusal.status,
      kind: refusal.kind,
      host: refusal.host,
      port: refusal.port,
      reason: refusal.reason,
      ...(refusal.who ? { run: `${refusal.who.namespace}/${refusal.who.name}`, role: refusal.who.role } : {}),
    });
    answer.refuse({ status: refusal.status, body });
    this.deps.onRefused?.(refusal);
  }

  private opened(event: EgressTunnel): void {
    this.deps.metrics?.egressTunnels.inc({ mode: event.mode });
    this.deps.onTunnel?.(event);
  }
}
