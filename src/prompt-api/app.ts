/**
 * The controller's realtime prompt API (docs/prompt-api.md): authenticates the caller with the
 * agent-realtime api-token, finds the Agent and its run pod, and forwards the prompt or close to
 * the pod's supervisor signed with that run's own token. All cluster access is injected.
 *
 * Checks run cheapest and stateless first: route, bearer token, namespace, body size, body shape;
 * then the Agent, its phase, its run pod; then the supervisor's own verdict.
 */
import { Hono } from "hono";
import { sessionIdProblem } from "../core/readback/agent-strings.js";
import { isPermanent } from "../kube/errors.js";
import { promptFromBody, readLimitedBody } from "./body.js";
import { type Forward, undiciForward } from "./forward.js";
import { jsonLogger, type PromptApiLogger } from "./logger.js";
import { MAX_REQUEST_BYTES, msg, RETRY_AFTER_SECONDS } from "./messages.js";
import { relaySupervisorAnswer, type SupervisorAction } from "./relay.js";
import { bearerMatches, runToken } from "./run-token.js";
import { type PromptApiAgent, type RunPodState, refuseUnlessRunning } from "./session.js";

export interface PromptApiDeps<A extends PromptApiAgent = PromptApiAgent> {
  /** The one namespace this controller serves. */
  namespace: string;
  /** The agent-realtime Secret's api-token: what callers present as their bearer token. */
  apiToken: string;
  /** The agent-realtime Secret's signing-key: derives each run's own token. */
  signingKey: string;
  /** The Agent from the controller's cache, or undefined when there is none. */
  getAgent(namespace: string, name: string): A | undefined | Promise<A | undefined>;
  /**
   * Whether the Agent's run is realtime and where its supervisor serves. Called only for an Agent
   * that is Running with a Job. `runPodStateFrom` builds the answer from the Job and its pods.
   */
  resolveRunPod(agent: A): RunPodState | Promise<RunPodState>;
  /**
   * Records a session id a prompt's reply revealed in the Agent's status.sessionId. Its failure
   * is logged, never returned to the caller: the prompt is already queued.
   */
  patchSessionId(agent: A, sessionId: string): Promise<void>;
  /** HTTP client to the run pod; undici by default. */
  forward?: Forward;
  /** Budget for one exchange with the supervisor (docs/decisions.md D-45: 10 s). */
  forwardTimeoutMs?: number;
  logger?: PromptApiLogger;
}

export const DEFAULT_FORWARD_TIMEOUT_MS = 10_000;

const ROUTE_BASE = "/v1/namespaces/:ns/agents/:name";

type ErrorStatus = 400 | 401 | 404 | 409 | 413 | 429 | 500 | 502 | 503;

function errorResponse(status: ErrorStatus, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ error: message }), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function jsonResponse(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

const retryLater = (message: string) =>
  errorResponse(503, message, { "retry-after": String(RETRY_AFTER_SECONDS) });

export function createPromptApi<A extends PromptApiAgent>(deps: PromptApiDeps<A>): Hono {
  if (!deps.namespace) throw new Error("createPromptApi: namespace is empty");
  if (!deps.apiToken) throw new Error("createPromptApi: apiToken (agent-realtime api-token) is empty");
  if (/\s/.test(deps.apiToken)) {
    // A bearer token cannot carry whitespace, so such a token (often a stray newline in the
    // Secret) would refuse every caller with 401; stop at startup instead.
    throw new Error("createPromptApi: apiToken (agent-realtime api-token) contains whitespace");
  }
  if (!deps.signingKey) throw new Error("createPromptApi: signingKey (agent-realtime signing-key) is empty");
  const forward = deps.forward ?? undiciForward;
  const timeoutMs = deps.forwardTimeoutMs ?? DEFAULT_FORWARD_TIMEOUT_MS;
  const log = deps.logger ?? jsonLogger;

  /**
   * A read from the API server failed. When a retry can succeed (restart, throttling, timeout)
   * that is the seed's 503 with Retry-After; when it cannot (RBAC refuses the controller, a 4xx
   * that will not change), telling the caller to retry would be a lie: 500, logged as an error.
   */
  function lookupFailed(what: string, ns: string, name: string, err: unknown): Response {
    const fields = { namespace: ns, agent: name, error: String(err) };
    if (isPermanent(err)) {
      log.error(`prompt-api: cannot look up ${what}, and retrying will not help`, fields);
      return errorResponse(500, msg.internal);
    }
    log.warn(`prompt-api: cannot look up ${what}`, fields);
    return retryLater(msg.notServing);
  }

  async function handle(req: Request, ns: string, name: string, action: SupervisorAction): Promise<Response> {
    if (!bearerMatches(req.headers.get("authorization"), deps.apiToken)) {
      return errorResponse(401, msg.unauthorized, { "www-authenticate": "Bearer" });
    }
    if (ns !== deps.namespace) return errorResponse(404, msg.wrongNamespace(deps.namespace));

    // A close carries no body, but one sent anyway is still bounded rather than read unlimited.
    const read = await readLimitedBody(req.body, req.headers.get("content-length"), MAX_REQUEST_BYTES);
    if (!read.ok) return errorResponse(413, msg.bodyTooLarge);
    let forwardBody = "";
    if (action === "prompt") {
      const prompt = promptFromBody(read.bytes);
      if (prompt === undefined) return errorResponse(400, msg.badBody);
      // Sent verbatim (docs/decisions.md D-59); re-serialised so only the prompt reaches the pod.
      forwardBody = JSON.stringify({ prompt });
    }

    let agent: A | undefined;
    try {
      agent = await deps.getAgent(ns, name);
    } catch (err) {
      return lookupFailed("the Agent", ns, name, err);
    }
    if (!agent) return errorResponse(404, msg.agentNotFound(name));
    const refusal = refuseUnlessRunning(name, agent);
    if (refusal) return errorResponse(refusal.status, refusal.message);

    let pod: RunPodState;
    try {
      pod = await deps.resolveRunPod(agent);
    } catch (err) {
      return lookupFailed("the run pod", ns, name, err);
    }
    if (pod.kind === "not-realtime") return errorResponse(409, msg.notRealtime(name));
    if (pod.kind === "not-serving") return retryLater(msg.notServing);

    const url = `${pod.baseUrl}/v1/${action}`;
    let answer: { status: number; body: string };
    try {
      answer = await forward({
        url,
        headers: {
          authorization: `Bearer ${runToken(deps.signingKey, agent.metadata.uid ?? "")}`,
          "content-type": "application/json",
        },
        body: forwardBody,
        timeoutMs,
      });
    } catch (err) {
      log.warn("prompt-api: run pod unreachable", { namespace: ns, agent: name, url, error: String(err) });
      return retryLater(msg.unreachable);
    }

    const relayed = relaySupervisorAnswer(action, answer.status, answer.body);
    switch (relayed.kind) {
      case "unexpected":
        log.warn("prompt-api: unexpected supervisor answer", {
          namespace: ns,
          agent: name,
          url,
          status: answer.status,
          detail: relayed.detail,
        });
        return errorResponse(502, relayed.body.error);
      case "not-serving":
        return retryLater(relayed.body.error);
      case "refused":
        return errorResponse(relayed.status, relayed.body.error);
      case "close-accepted":
        return jsonResponse(202, relayed.body);
      case "prompt-accepted": {
        const sessionId = relayed.body.sessionId;
        // The run pod's word, bounded as the read-back bounds it: an id that cannot be resumed
        // (too long, odd characters) is not recorded, never shortened.
        const problem = sessionId === "" ? undefined : sessionIdProblem(sessionId);
        if (problem !== undefined) {
          log.error("prompt-api: status.sessionId not recorded", {
            namespace: ns,
            agent: name,
            error: problem,
          });
        } else if (sessionId !== "" && sessionId !== (agent.status?.sessionId ?? "")) {
          try {
            // Awaited so a caller that reads the Agent after the 202 already sees the id.
            await deps.patchSessionId(agent, sessionId);
          } catch (err) {
            log.error("prompt-api: cannot record status.sessionId", {
              namespace: ns,
              agent: name,
              sessionId,
              error: String(err),
            });
          }
        }
        return jsonResponse(202, relayed.body);
      }
    }
  }

  const app = new Hono();
  app.post(`${ROUTE_BASE}/prompt`, (c) =>
    handle(c.req.raw, c.req.param("ns"), c.req.param("name"), "prompt"),
  );
  app.post(`${ROUTE_BASE}/close`, (c) => handle(c.req.raw, c.req.param("ns"), c.req.param("name"), "close"));
  app.notFound(() => errorResponse(404, msg.notFound));
  app.onError((err) => {
    log.error("prompt-api: request failed", {
      error: String(err),
      stack: err instanceof Error ? err.stack : undefined,
    });
    return errorResponse(500, msg.internal);
  });
  return app;
}
