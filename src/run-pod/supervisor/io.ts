/**
 * The supervisor's connections to its own process: where its stdout and stderr lines go and where
 * signals come from. The real process by default; tests pass their own.
 */
import { type LineWriter, stderrWriter, stdoutWriter } from "../common/emitter.js";

/** The part of `process` signal forwarding needs. */
export interface SignalSource {
  on(signal: NodeJS.Signals, listener: () => void): unknown;
  off(signal: NodeJS.Signals, listener: () => void): unknown;
}

export interface SupervisorIo {
  /** The run's record (pod log ⇒ status.output): bare lines only, written synchronously. */
  stdout: LineWriter;
  /** Usage text, `[agent] ` lines and the supervisor's own diagnostics. */
  stderr: LineWriter;
  signals: SignalSource;
}

export const processIo: SupervisorIo = {
  stdout: stdoutWriter,
  stderr: stderrWriter,
  signals: process,
};

/** Signals an agent process receives when the supervisor does (docs/supervisor.md#start-settings-and-signals). */
export const FORWARDED_SIGNALS: readonly NodeJS.Signals[] = ["SIGTERM", "SIGINT"];
