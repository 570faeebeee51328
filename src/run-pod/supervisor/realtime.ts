/**
 * A realtime session (docs/supervisor.md#realtime-sessions, docs/prompt-api.md, docs/decisions.md D-40 to D-46, D-55): the supervisor serves
 * prompts on AGENT_REALTIME_LISTEN (default 0.0.0.0:8090) and runs one CLI process per turn, in
 * order, through the same child-run unit and vendor adapter as an interactive run.
 *
 * What a listener sees: `agent/started`; per turn `turn/started`, the CLI's lines, then
 * `turn/succeeded` or `turn/failed` (with `turn` and `exitCode`); at the end the file events and
 * exactly one terminal agent event. How it ends (docs/decisions.md D-43): close, then the queued turns, then exit 0;
 * the deadline while idle behaves like close (0); the deadline during a turn stops it (124); SIGTERM
 * stops the running turn and ends the session; a failed turn does not end it.
 */
import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import { quotedId, sessionIdProblem } from "../../core/cli/session-ids.js";
import { announcedSessionId, terminalVerdict } from "../../core/cli/vendors.js";
import { lifecycleEvent } from "../../sinks/lifecycle.js";
import { RunEmitter } from "../common/emitter.js";
import { runPodLogger } from "../common/log.js";
import type { Env } from "../common/run-env.js";
import { agentEnded, agentSetupFailed, agentStarted } from "./agent-events.js";
import {
  type ChildOutcome,
  DEADLINE_EXIT_CODE,
  EOF_WAIT_MS,
  type RunningChild,
  runChild,
} from "./child-run.js";
import { prepareCli } from "./cli-setup/index.js";
import { findExecutable } from "./command-path.js";
import { SAVE_TIMEOUT_MS, saveConversation } from "./conversation-save.js";
import { logDeadline, reportWithinTail, runDeadline, tailShare } from "./deadline.js";
import { drainThenWriteExitCode } from "./exit-code-file.js";
import { FORWARDED_SIGNALS, type SupervisorIo } from "./io.js";
import { longTimer } from "./long-timer.js";
import { announceGiveUp, announceWait } from "./provider-retry/announce.js";
import { AttemptWatcher, runWithProviderRetries } from "./provider-retry/attempts.js";
import { systemRetryClock } from "./provider-retry/clock.js";
import { RESUME_PROMPT } from "./provider-retry/resume-argv.js";
import { listen, type Reply } from "./session/http.js";
import { PromptQueue, type QueuedTurn } from "./session/queue.js";
import { promptProblem, recipeFromEnv, type SessionArgs, turnArgv } from "./session/turn-argv.js";
import { supervisorSettings } from "./settings.js";
import { watchedFileEvents } from "./watch-files.js";

export const DEFAULT_REALTIME_LISTEN = "0.0.0.0:8090";

/** `initialPrompt` is what follows `--`: the rendered prompt, or nothing for a resumed session (docs/decisions.md D-41). */
export async function runRealtime(
  initialPrompt: readonly string[],
  env: Env,
  io: SupervisorIo,
  startedAt: number,
): Promise<number> {
  const settings = supervisorSettings(env);
  const { vendor } = settings;
  const log = runPodLogger("supervisor", io.stderr);
  const tokenSha256 = env.AGENT_REALTIME_TOKEN_SHA256?.trim() ?? "";
  if (tokenSha256 === "") {
    io.stderr("ai-agent-supervisor: AGENT_REALTIME_TOKEN_SHA256 is not set: no caller could be accepted");
    return 2;
  }
  const emitter = new RunEmitter({ env, vendor, stdout: io.stdout, log: runPodLogger("sinks", io.stderr) });
  const recipe = recipeFromEnv(env);
  // The CLI never sees the token's hash (docs/decisions.md D-40).
  let cliEnv: Env = { ...env, AGENT_REALTIME_TOKEN_SHA256: undefined };
  const deadline = runDeadline(settings, startedAt, EOF_WAIT_MS);
  const deadlineAt = deadline.agentAt;
  logDeadline(deadline, settings, log);

  const resumed = env.AGENT_RESUME_SESSION?.trim() ?? "";
  // The controller refuses such an id at Pending; the id would land in an option position.
  const resumeProblem = resumed === "" ? undefined : sessionIdProblem(vendor, resumed);
  if (resumeProblem) {
    io.stderr(`ai-agent-supervisor: AGENT_RESUME_SESSION ${quotedId(resumed)} ${resumeProblem}`);
    return 2;
  }
  // A fresh Claude session's id is chosen here and pinned on its first turn, so it is known at once.
  let sessionId = resumed || (vendor === "claude" ? randomUUID() : "");
  let sessionExists = resumed !== "";
  const queue = new PromptQueue();
  const prompt = initialPrompt.join(" ");
  if (resumed === "" && prompt !== "") queue.initial(prompt);

  let wake: () => void = () => {};
  let running: RunningChild | undefined;
  /**
   * Why the session stopped taking turns before its queue ran dry. From that moment prompts and
   * closes get 409 and the readiness probe fails, so nothing is acknowledged that will not run;
   * turns already queued are reported as failed, never silently dropped.
   */
  let ended: "signal" | "deadline" | undefined;
  const unrun: QueuedTurn[] = [];
  /** Provider retries across the session's turns; ended when the session stops taking turns. */
  let providerRetries = 0;
  const stopRetries = new AbortController();
  const endIntake = (why: "signal" | "deadline") => {
    if (ended === undefined) {
      ended = why;
      unrun.push(...queue.end());
    }
    stopRetries.abort();
    wake();
  };
  const onSignal = (signal: NodeJS.Signals) => () => {
    log.info(`received ${signal}; stopping the running turn and ending the session`);
    reportWithinTail(deadline, Date.now(), settings.tailMs);
    endIntake("signal");
    running?.signal(signal);
  };
  const listeners = FORWARDED_SIGNALS.map((s) => [s, onSignal(s)] as const);
  for (const [s, l] of listeners) io.signals.on(s, l);
  const deadlineTimer = deadlineAt === undefined ? undefined : longTimer(deadlineAt - Date.now());
  void deadlineTimer?.promise.then(() => {
    log.info(
      running
        ? "deadline reached during a turn; stopping it"
        : "deadline reached while idle; the session ends",
    );
    endIntake("deadline");
  });

  const handlers = {
    prompt(text: string): Reply {
      const problem = promptProblem(vendor, text);
      if (problem) return { status: 400, body: { error: problem } };
      const admitted = queue.offer(text);
      if (!admitted.ok) return { status: admitted.status, body: { error: admitted.error } };
      wake();
      return { status: 202, body: { turn: admitted.turn, queued: admitted.queued, sessionId } };
    },
    close(): Reply {
      const closed = queue.close();
      if (!closed.ok) return { status: closed.status, body: { error: closed.error } };
      wake();
      return { status: 202, body: { queued: closed.queued } };
    },
    serving: () => ended === undefined,
    // Ready once the CLI is set up and turn 1 has left the queue (a CLI install can take a while).
    ready: () => takingTurns,
  };

  let takingTurns = false;
  let server: Server | undefined;
  let exitCode = 0;
  let endedByDeadline = false;
  let setupFailed = false;
  try {
    const listenOn = env.AGENT_REALTIME_LISTEN?.trim() || DEFAULT_REALTIME_LISTEN;
    try {
      const listening = await listen(listenOn, tokenSha256, handlers);
      server = listening.server;
      log.info(`serving prompts on ${listening.address}`);
    } catch (err) {
      io.stderr(`ai-agent-supervisor: cannot serve prompts on ${listenOn}: ${(err as Error).message}`);
      return 1;
    }
    const prepared = await prepareCli(
      vendor,
      { env: cliEnv, home: settings.home, workspace: settings.workspaceDir },
      (m) => log.info(m),
    );
    if ("error" in prepared) {
      log.error(prepared.error);
      setupFailed = true;
      exitCode = 1;
    } else {
      cliEnv = prepared.env;
      emitter.event(agentStarted());
    }

    while (!setupFailed) {
      const next = ended === undefined ? queue.take() : undefined;
      takingTurns = true;
      if (next) {
        const code = await runTurn(next);
        if (code === DEADLINE_EXIT_CODE && endedByDeadline) {
          exitCode = DEADLINE_EXIT_CODE;
          break;
        }
        if (ended === "signal") exitCode = code;
        continue;
      }
      if (ended !== undefined || queue.closing) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = () => {};
    }
  } finally {
    deadlineTimer?.cancel();
    for (const [s, l] of listeners) io.signals.off(s, l);
    if (server) {
      server.closeAllConnections();
      server.close();
    }
  }

  // A turn queued before the deadline that cannot run now means the deadline cut work short.
  if (ended === "deadline" && unrun.length > 0) exitCode = DEADLINE_EXIT_CODE;
  for (const { turn } of unrun) {
    log.warn(`turn ${turn} was queued but the session ended before it ran`, { reason: ended });
    emitter.event(lifecycleEvent("turn", "failed", { turn, reason: unrunReason(ended) }));
  }
  if (setupFailed) emitter.event(agentSetupFailed());
  else {
    // docs/decisions.md D-55: watched files once, at session end, before the terminal event.
    for (const event of await watchedFileEvents(settings.watch, settings.workspaceDir, log))
      emitter.event(event);
    // The final save may take half of what is left to report; the sink drain gets the rest.
    await save(tailShare(deadline, Date.now(), SAVE_TIMEOUT_MS, 0.5));
    emitter.event(
      endedByDeadline || (ended === "deadline" && exitCode === DEADLINE_EXIT_CODE)
        ? agentEnded({ kind: "deadline", exitCode: DEADLINE_EXIT_CODE })
        : agentEnded({ kind: "exited", exitCode }),
    );
  }
  return await drainThenWriteExitCode({ emitter, deadline, home: settings.home, exitCode, log });

  /** One turn; returns its exit code. A failed turn is reported and the session goes on. */
  async function runTurn({ turn, prompt: text }: QueuedTurn): Promise<number> {
    emitter.event(lifecycleEvent("turn", "started", { turn }));
    const session: SessionArgs =
      vendor === "claude"
        ? sessionExists
          ? { resume: sessionId }
          : { pin: sessionId }
        : sessionId !== ""
          ? { resume: sessionId }
          : {};
    let argv: string[];
    try {
      argv = turnArgv(recipe, text, session);
    } catch (err) {
      log.error(`turn ${turn}: ${(err as Error).message}`);
      emitter.event(lifecycleEvent("turn", "failed", { turn, exitCode: 1 }));
      return 1;
    }
    const file = await findExecutable(argv[0] ?? "", env.PATH);
    if (file === undefined) {
      log.error(`turn ${turn}: agent command not found on PATH: ${argv[0]}`, { PATH: env.PATH ?? "" });
      emitter.event(lifecycleEvent("turn", "failed", { turn, reason: "not-found", exitCode: 1 }));
      return 1;
    }
    let watcher = new AttemptWatcher(vendor, recipe.model);
    // The model answered in one of this turn's processes: the session holds the turn's prompt.
    let answered = false;
    const continues = () => sessionExists && answered;
    const retried = await runWithProviderRetries({
      argv,
      ...(deadlineAt !== undefined ? { deadlineAt } : {}),
      stopping: () => ended !== undefined,
      clock: systemRetryClock(stopRetries.signal),
      baseMs: settings.providerRetryBaseMs,
      retriesBefore: providerRetries,
      attempt: (attemptArgv) => {
        watcher = new AttemptWatcher(vendor, recipe.model);
        return runAttempt(file, attemptArgv, turn, (line) => watcher.line(line)).then((outcome) => {
          answered ||= watcher.answered;
          return { outcome, answer: watcher.answer(outcome) };
        });
      },
      // The session is continued once the model answered in it this turn; before that the turn runs
      // again as it was, so its prompt is never lost (AttemptWatcher.answered).
      continuation: () => (continues() ? turnArgv(recipe, RESUME_PROMPT, { resume: sessionId }) : argv),
      onWait: (wait) => {
        providerRetries += 1;
        announceWait(emitter, log, wait, {
          turn,
          resumed: continues() ? `continuing session ${sessionId}` : "running the turn again",
        });
      },
      onGiveUp: (why, answer) => announceGiveUp(log, why, answer, turn),
    });
    const outcome: ChildOutcome = retried.deadlineLeftNoRoom
      ? { kind: "deadline", exitCode: DEADLINE_EXIT_CODE }
      : retried.outcome;
    running = undefined;
    if (outcome.kind === "spawn-failed") {
      log.error(`turn ${turn}: agent command could not be started: ${file}: ${outcome.error}`);
      emitter.event(lifecycleEvent("turn", "failed", { turn, reason: "spawn", exitCode: 1 }));
      return 1;
    }
    if (outcome.kind === "deadline") {
      endedByDeadline = true;
      emitter.event(
        lifecycleEvent("turn", "failed", { turn, reason: "deadline", exitCode: outcome.exitCode }),
      );
      return outcome.exitCode;
    }
    emitter.event(
      outcome.exitCode === 0
        ? lifecycleEvent("turn", "succeeded", { turn, exitCode: 0 })
        : lifecycleEvent("turn", "failed", { turn, exitCode: outcome.exitCode }),
    );
    // docs/decisions.md D-44: saved after every turn, best-effort, under the session's id; a save never runs past
    // the deadline (the session's final save comes in the time left to report).
    await save(
      deadlineAt === undefined ? SAVE_TIMEOUT_MS : Math.min(SAVE_TIMEOUT_MS, deadlineAt - Date.now()),
    );
    return outcome.exitCode;
  }

  /** One CLI process of turn `turn`; `onLine` also sees each of its stdout lines. */
  function runAttempt(
    file: string,
    argv: readonly string[],
    turn: number,
    onLine: (line: string) => void,
  ): Promise<ChildOutcome> {
    return runChild({
      file,
      argv,
      env: cliEnv,
      isTerminal: (line) => terminalVerdict(vendor, line),
      graceMs: settings.graceMs,
      ...(deadlineAt !== undefined ? { deadlineAt } : {}),
      deadlineGraceMs: deadline.stopGraceMs,
      eofWaitMs: deadline.eofWaitMs,
      onSpawned: (child) => {
        running = child;
        if (ended === "signal") child.signal("SIGTERM");
      },
      onStdoutLine: (line) => {
        emitter.line(line);
        onLine(line);
        const id = announcedSessionId(vendor, line);
        const idProblem = id ? sessionIdProblem(vendor, id) : undefined;
        if (id && idProblem) {
          // Never resumed: it would reach the next turn's argv where an option is read.
          log.warn(
            `turn ${turn}: the CLI announced the session id ${quotedId(id)}, which ${idProblem}; not kept`,
          );
        } else if (id) {
          sessionId = id;
          // Only a session the CLI announced exists to be resumed: a Claude turn that died before
          // its init line pins the same id again next turn instead of resuming nothing forever.
          sessionExists = true;
        }
      },
      onStderrLine: (line) => io.stderr(`[agent] ${line}`),
      log,
    });
  }

  function save(timeoutMs: number): Promise<unknown> {
    if (sessionId === "") return Promise.resolve();
    return saveConversation({
      env: { ...env, AGENT_CONVERSATION_PIN: sessionId },
      vendor,
      home: settings.home,
      log,
      timeoutMs,
    });
  }
}

/** The `reason` of a queued turn that never ran: cut off by the deadline or by a signal. */
function unrunReason(ended: "signal" | "deadline" | undefined): string {
  return ended === "deadline" ? "deadline" : "stopped";
}
