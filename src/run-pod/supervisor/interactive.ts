/**
 * An interactive run (and a batch fallback Job): one agent CLI process from start to exit code
 * (docs/supervisor.md). Order of what a listener sees: `agent/started`, the agent's lines, the file
 * events, then exactly one terminal agent event; the conversation is saved before that event and
 * `$HOME/run/exit-code` is written last of all.
 */
import { terminalVerdict } from "../../core/vendors.js";
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
import { EOF_WAIT_MS, type RunningChild, runChild } from "./child-run.js";
import { prepareCli } from "./cli-setup/index.js";
import { findExecutable } from "./command-path.js";
import { SAVE_TIMEOUT_MS, saveConversation } from "./conversation-save.js";
import { logDeadline, reportWithinTail, runDeadline, tailShare } from "./deadline.js";
import { drainThenWriteExitCode } from "./exit-code-file.js";
import { FORWARDED_SIGNALS, type SignalSource, type SupervisorIo } from "./io.js";
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
    const outcome = await runChild({
      file,
      argv: command,
      env: prepared.env,
      isTerminal: (line) => terminalVerdict(settings.vendor, line),
      graceMs: settings.graceMs,
      ...(deadline.agentAt !== undefined ? { deadlineAt: deadline.agentAt } : {}),
      deadlineGraceMs: deadline.stopGraceMs,
      eofWaitMs: deadline.eofWaitMs,
      onSpawned: (child) => {
        emitter.event(agentStarted());
        forwarder.attach(child);
      },
      onStdoutLine: (line) => emitter.line(line),
      onStderrLine: (line) => io.stderr(`[agent] ${line}`),
      log,
    });
    forwarder.detach();
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
}

/**
 * SIGTERM/SIGINT reach the agent process (docs/supervisor.md#start-settings-and-signals). Installed before the spawn so an
 * early signal neither kills the supervisor nor is lost: it is passed on once the agent exists.
 */
function forwardSignals(
  source: SignalSource,
  log: JsonLineLogger,
  onSignal: () => void,
): { attach(child: RunningChild): void; detach(): void; dispose(): void } {
  let child: RunningChild | undefined;
  let finished = false;
  const early: NodeJS.Signals[] = [];
  const listeners = FORWARDED_SIGNALS.map((signal) => {
    const listener = () => {
      onSignal();
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
    detach() {
      finished = true;
      child = undefined;
    },
    dispose() {
      for (const [signal, listener] of listeners) source.off(signal, listener);
    },
  };
}
