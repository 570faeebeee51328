/**
 * An interactive run (and a batch fallback Job): one agent CLI process from start to exit code
 * (docs/supervisor.md). Order of what a listener sees: `agent/started`, the agent's lines, the file
 * events, then exactly one terminal agent event; the conversation is saved before that event and
 * `$HOME/run/exit-code` is written last of all.
 */
import { terminalVerdict } from "../../core/cli/vendors.js";
import type { JsonLineLogger } from "../../log.js";
import { RunEmitter } from "../common/emitter.js";
import { runPodLogger } from "../common/log.js";
import type { Env } from "../common/run-env.js";
import {
  agentEnded,
  agentNotFound,
  agentSetupFailed,
  agentSpawnFailed,
  agentStarted,
} from "./agent-events.js";
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
import { FORWARDED_SIGNALS, type SignalSource, type SupervisorIo } from "./io.js";
import { announceGiveUp, announceWait } from "./provider-retry/announce.js";
import { AttemptWatcher, runWithProviderRetries } from "./provider-retry/attempts.js";
import { systemRetryClock } from "./provider-retry/clock.js";
import { resumeArgv } from "./provider-retry/resume-argv.js";
import { supervisorSettings } from "./settings.js";
import { watchedFileEvents } from "./watch-files.js";

/** `command` is the agent's argv (non-empty); `startedAt` is when the supervisor started (deadline base). */
export async function runInteractive(
  command: readonly string[],
  env: Env,
  io: SupervisorIo,
  startedAt: number,
): Promise<number> {
  const settings = supervisorSettings(env);
  const log = runPodLogger("supervisor", io.stderr);
  const emitter = new RunEmitter({
    env,
    vendor: settings.vendor,
    stdout: io.stdout,
    log: runPodLogger("sinks", io.stderr),
  });
  if (settings.malformedWatch > 0) {
    log.warn("AGENT_WATCH entries without a string event and path are ignored", {
      ignored: settings.malformedWatch,
    });
  }

  const deadline = runDeadline(settings, startedAt, EOF_WAIT_MS);
  logDeadline(deadline, settings, log);

  // Listening until the very end: a SIGTERM after the agent exited must not kill the supervisor
  // before the terminal event, the sink drain and the exit-code file.
  const forwarder = forwardSignals(io.signals, log, () =>
    reportWithinTail(deadline, Date.now(), settings.tailMs),
  );
  try {
    const exitCode = await superviseAgent();
    return await drainThenWriteExitCode({ emitter, deadline, home: settings.home, exitCode, log });
  } finally {
    forwarder.dispose();
  }

  async function superviseAgent(): Promise<number> {
    const prepared = await prepareCli(
      settings.vendor,
      { env, home: settings.home, workspace: settings.workspaceDir },
      (m) => log.info(m),
    );
    if ("error" in prepared) {
      log.error(prepared.error);
      emitter.event(agentSetupFailed());
      return 1;
    }
    const name = command[0] ?? "";
    const file = await findExecutable(name, env.PATH);
    if (file === undefined) {
      log.error(`agent command not found on PATH: ${name}`, { PATH: env.PATH ?? "" });
      emitter.event(agentNotFound());
      return 1;
    }
    const outcome = await runAttempts(file, prepared.env);
    if (outcome.kind === "spawn-failed") {
      log.error(`agent command could not be started: ${file}: ${outcome.error}`);
      emitter.event(agentSpawnFailed());
      return 1;
    }
    for (const event of await watchedFileEvents(settings.watch, settings.workspaceDir, log)) {
      emitter.event(event);
    }
    // The save may take half of what is left to report; the sink drain gets the rest.
    await saveConversation({
      env,
      vendor: settings.vendor,
      home: settings.home,
      log,
      timeoutMs: tailShare(deadline, Date.now(), SAVE_TIMEOUT_MS, 0.5),
    });
    emitter.event(agentEnded(outcome));
    return outcome.exitCode;
  }

  /**
   * The CLI, and after a retryable provider answer the same session continued, until one process
   * ends without one (docs/provider-limits.md#riding-out-a-limit). `agent/started` comes once.
   */
  async function runAttempts(file: string, cliEnv: Env): Promise<ChildOutcome> {
    const model = env.AGENT_MODEL ?? "";
    let watcher = new AttemptWatcher(settings.vendor, model);
    let session: string | undefined;
    let started = false;
    const result = await runWithProviderRetries({
      argv: command,
      ...(deadline.agentAt !== undefined ? { deadlineAt: deadline.agentAt } : {}),
      stopping: () => forwarder.stop.aborted,
      clock: systemRetryClock(forwarder.stop),
      baseMs: settings.providerRetryBaseMs,
      attempt: async (argv) => {
        watcher = new AttemptWatcher(settings.vendor, model);
        const outcome = await runChild({
          file,
          argv,
          env: cliEnv,
          isTerminal: (line) => terminalVerdict(settings.vendor, line),
          graceMs: settings.graceMs,
          ...(deadline.agentAt !== undefined ? { deadlineAt: deadline.agentAt } : {}),
          deadlineGraceMs: deadline.stopGraceMs,
          eofWaitMs: deadline.eofWaitMs,
          onSpawned: (child) => {
            if (!started) emitter.event(agentStarted());
            started = true;
            forwarder.attach(child);
          },
          onStdoutLine: (line) => {
            emitter.line(line);
            watcher.line(line);
          },
          onStderrLine: (line) => io.stderr(`[agent] ${line}`),
          log,
        });
        forwarder.between();
        if (watcher.answered) session = watcher.sessionId ?? session;
        return { outcome, answer: watcher.answer(outcome) };
      },
      // No model answer yet (AttemptWatcher.answered): nothing of the conversation to keep, so
      // running the same command again loses nothing.
      continuation: () =>
        session === undefined
          ? command
          : (resumeArgv(settings.vendor, command, session) ??
            `${settings.vendor} cannot continue a session from this command`),
      onWait: (wait) =>
        announceWait(emitter, log, wait, {
          resumed: session === undefined ? "running the command again" : `continuing session ${session}`,
        }),
      onGiveUp: (why, answer) => announceGiveUp(log, why, answer),
    });
    forwarder.detach();
    // The deadline leaves no room for the wait: the run ends as at its deadline, the provider's
    // last answer in its log (the failure reason names it).
    return result.deadlineLeftNoRoom ? { kind: "deadline", exitCode: DEADLINE_EXIT_CODE } : result.outcome;
  }
}

/**
 * SIGTERM/SIGINT reach the agent process (docs/supervisor.md#start-settings-and-signals). Installed before the spawn so an
 * early signal neither kills the supervisor nor is lost: it is passed on once the agent exists.
 */
function forwardSignals(
  source: SignalSource,
  log: JsonLineLogger,
  onSignal: () => void,
): {
  attach(child: RunningChild): void;
  /** Between two processes of the run (a provider-limit wait): a signal now ends the run. */
  between(): void;
  detach(): void;
  dispose(): void;
  /** Aborted by the first signal: no further process starts, a wait ends at once. */
  stop: AbortSignal;
} {
  let child: RunningChild | undefined;
  let finished = false;
  const stopping = new AbortController();
  const early: NodeJS.Signals[] = [];
  const listeners = FORWARDED_SIGNALS.map((signal) => {
    const listener = () => {
      onSignal();
      stopping.abort();
      if (finished) {
        log.info(`received ${signal} after the agent ended; finishing the run`);
        return;
      }
      log.info(`received ${signal}; forwarding it to the agent`);
      if (child) child.signal(signal);
      else early.push(signal);
    };
    source.on(signal, listener);
    return [signal, listener] as const;
  });
  return {
    attach(running) {
      child = running;
      for (const signal of early.splice(0)) running.signal(signal);
    },
    between() {
      child = undefined;
    },
    detach() {
      finished = true;
      child = undefined;
    },
    dispose() {
      for (const [signal, listener] of listeners) source.off(signal, listener);
    },
    stop: stopping.signal,
  };
}
