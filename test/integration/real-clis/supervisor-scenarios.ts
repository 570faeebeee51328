/**
 * The scenarios every `*-supervisor.test.ts` file runs, written once as a table over the vendors:
 * the real CLI under the built supervisor edits a file through its own tool, resumes the session it
 * announced, gives up on a rejected key, and meets a rate limit (one the supervisor rides out past
 * the CLI's own retries, or one that lasts until the deadline). A vendor row says only what differs
 * between the CLIs: its argv and model server, the model's answers, how a model call and a session
 * look, what it prints at a limit and how a resumed process shows the history. Each file holds its
 * row and calls `supervisedCliTests(row, …)` once, with its CLI's own scenarios in the callback; a
 * scenario a row leaves out is not run for that CLI. Adding a fifth CLI is one row.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { CliVendor } from "../../../src/core/cli/agent-clis.js";
import { terminalVerdict } from "../../../src/core/cli/vendors.js";
import { lastCliError } from "../../../src/core/readback/output.js";
import type { JournalEntry, ModelServer, ModelStep } from "../../fakes/models/base.js";
import {
  PROVIDER_RIDE_TO_SUCCESS,
  providerLimitEvents,
  type RunDir,
  type SupervisedRun,
  type SupervisorHarness,
} from "./supervisor-harness.js";

/** One CLI under the built supervisor: what differs from the others. */
export interface SupervisedVendorRow<M extends ModelServer> {
  vendor: CliVendor;
  harness: SupervisorHarness<M>;
  /**
   * The model server a scenario talks to: the file's one (its tests run one after another, each
   * scripting what it needs) or a fresh one (`concurrent`: the tests run side by side).
   */
  model(): M | Promise<M>;
  concurrent?: boolean;
  /** A test's timeout: past the run's deadline. */
  timeoutMs: number;
  /** core/argv.ts's argv for `prompt`, `extra` merged into the definition. */
  argv(prompt: string, extra?: Record<string, unknown>): string[];
  /** One model call as the model server's journal shows it: `<METHOD> <path>`. */
  modelCall: string;
  /** The form of the session id the CLI announces. */
  sessionId: RegExp;
  /** The CLI's last error as the read-back finds it (default: in the run's whole stdout). */
  cliError?(run: SupervisedRun): string;
  edit: SupervisedEditRow<M>;
  resume?: SupervisedResumeRow<M>;
  unauthorized: SupervisedUnauthorizedRow<M>;
  limitPastCli?: SupervisedLimitPastCliRow;
  limitToDeadline?: SupervisedLimitToDeadlineRow;
}

/** The model edits a file of the workspace through the CLI's own tool; the run ends with a success line. */
export interface SupervisedEditRow<M> {
  title: string;
  /** The model's answers, each one model call (the workspace is given for absolute paths). */
  script(dir: RunDir): ModelStep[];
  /** The file in the workspace and its content after the run. */
  file: { path: string; content: string };
  /** Each CLI line's kind (its type, and the subtype or item type where it has one) in order. */
  kinds: string[];
  kind(line: Record<string, unknown>): string;
  /** The session id the run announced. */
  session(run: SupervisedRun): string;
  /** The vendor's own checks: its lines, the requests it made (its model calls), the setup's files. */
  expectMore(run: SupervisedRun, ctx: { dir: RunDir; model: M; requests: JournalEntry[] }): void;
}

/** A second run in the same HOME resumes the session the edit announced. */
export interface SupervisedResumeRow<M> {
  title: string;
  prompt: string;
  /** The model's answer to the resumed run. */
  answer: ModelStep;
  /** The resumed run's lines and its model call, which carried the earlier history. */
  expectResumed(run: SupervisedRun, call: JournalEntry | undefined, session: string, model: M): void;
}

/** A rejected key (401). */
export interface SupervisedUnauthorizedRow<M> {
  title: string;
  prompt: string;
  /** The CLI's exit code, and how many model calls it makes before it gives up. */
  code: number;
  calls: number;
  /** What the read-back finds as the CLI's error (exact or a pattern). */
  error: string | RegExp;
  expectMore?(run: SupervisedRun, model: M): void;
}

/** The provider answers 429 more often than the CLI retries; the supervisor waits, runs it again, and it succeeds. */
export interface SupervisedLimitPastCliRow {
  title: string;
  /** The provider's 429 answer, given `answers` times (the CLI's own tries). */
  answer: ModelStep;
  answers: number;
  /** The supervisor's provider-limit event while it waited. */
  event: Record<string, unknown>;
  /** The provider's words the CLI gave up on, in that event. */
  message: string | RegExp;
  expectMore?(run: SupervisedRun): void;
}

/** The provider answers 429 until the deadline: the supervisor waits and continues, then the run ends 124. */
export interface SupervisedLimitToDeadlineRow {
  title: string;
  prompt: string;
  answer: ModelStep;
  /** The run's environment (a brief deadline, a 1 s first backoff). */
  env: Record<string, string>;
  /** What the read-back finds as the CLI's error (exact or a pattern). */
  error: string | RegExp;
  /** The supervisor's first provider-limit event. */
  event: Record<string, unknown>;
}

/** What the file's own scenarios may use of the table's. */
export interface SupervisedShared {
  /** The session the edit scenario's run announced ("" before it ran). */
  editSession(): string;
}

const matches = (actual: string, expected: string | RegExp) =>
  typeof expected === "string" ? expect(actual).toBe(expected) : expect(actual).toMatch(expected);

/** What the fake answers once a scenario's script is used up (test/fakes/models/base.ts). */
const DEFAULT_ANSWER: ModelStep = { text: "Done." };

/**
 * Registers the file's describe with every scenario its row has, then the file's own (`more`,
 * inside the same describe, after the table's).
 */
export function supervisedCliTests<M extends ModelServer>(
  row: SupervisedVendorRow<M>,
  more: (shared: SupervisedShared) => void = () => {},
): void {
  const { harness } = row;
  const test = row.concurrent ? it.concurrent : it;
  const cliError = row.cliError ?? ((run: SupervisedRun) => lastCliError(row.vendor, run.stdout));
  const editDir = () => harness.runDir("edit");
  let editSession = "";

  describe.skipIf(harness.skip)(
    `the real ${row.vendor} CLI under the built supervisor`,
    { timeout: row.timeoutMs },
    () => {
      const edit = row.edit;
      test(edit.title, async () => {
        const model = await row.model();
        const before = model.journal().length;
        const dir = editDir();
        const script = edit.script(dir);
        model.script(script);
        const run = await harness.supervise(model, dir, row.argv("Write hello.txt"));
        expect(run.code, run.stderr).toBe(0);
        expect(readFileSync(join(dir.workspace, edit.file.path), "utf8")).toBe(edit.file.content);
        expect(run.cliLines.map(edit.kind)).toEqual(edit.kinds);
        editSession = edit.session(run);
        expect(editSession).toMatch(row.sessionId);
        expect(terminalVerdict(row.vendor, run.cliText.at(-1) ?? "")).toEqual({ success: true });
        // The only requests: the model calls (no probe, no telemetry, no title request, nothing else).
        const requests = model.journal().slice(before);
        expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual(
          Array(script.length).fill(row.modelCall),
        );
        edit.expectMore(run, { dir, model, requests });
      });

      const resume = row.resume;
      if (resume)
        test(resume.title, async () => {
          expect(editSession).not.toBe("");
          const model = await row.model();
          const before = model.modelCalls().length;
          model.script([resume.answer]);
          const run = await harness.supervise(
            model,
            editDir(),
            row.argv(resume.prompt, { resources: { conversation: { id: editSession } } }),
          );
          expect(run.code, run.stderr).toBe(0);
          const [call] = model.modelCalls().slice(before);
          resume.expectResumed(run, call, editSession, model);
        });

      const unauthorized = row.unauthorized;
      test(unauthorized.title, async () => {
        const model = await row.model();
        const before = model.modelCalls().length;
        model.fallback({ error: { status: 401 } });
        try {
          const run = await harness.supervise(
            model,
            harness.runDir("unauthorized"),
            row.argv(unauthorized.prompt),
          );
          expect(run.code, run.stderr).toBe(unauthorized.code);
          expect(model.modelCalls().length - before, JSON.stringify(model.journal(), null, 1)).toBe(
            unauthorized.calls,
          );
          matches(cliError(run), unauthorized.error);
          unauthorized.expectMore?.(run, model);
        } finally {
          model.fallback(DEFAULT_ANSWER);
        }
      });

      const past = row.limitPastCli;
      if (past)
        test(past.title, async () => {
          const model = await row.model();
          const before = model.modelCalls().length;
          model.script(Array.from({ length: past.answers }, () => past.answer));
          const run = await harness.supervise(
            model,
            harness.runDir("rate-limited"),
            row.argv("hi"),
            PROVIDER_RIDE_TO_SUCCESS,
          );
          // The CLI gave up after its own tries; the supervisor waited and ran it again (no session
          // had begun), and the model's next answer ended the run.
          expect(run.code, run.stderr).toBe(0);
          expect(model.modelCalls().length - before).toBe(past.answers + 1);
          const [wait] = providerLimitEvents(run.stdout);
          expect(wait).toMatchObject(past.event);
          matches(String(wait?.message), past.message);
          past.expectMore?.(run);
        });

      const deadline = row.limitToDeadline;
      if (deadline)
        test(deadline.title, async () => {
          const model = await row.model();
          model.fallback(deadline.answer);
          try {
            const run = await harness.supervise(
              model,
              harness.runDir("rate-limited"),
              row.argv(deadline.prompt),
              deadline.env,
            );
            expect(run.code, run.stderr).toBe(124);
            matches(cliError(run), deadline.error);
            const waits = providerLimitEvents(run.stdout);
            expect(waits.length).toBeGreaterThanOrEqual(1);
            expect(waits[0]).toMatchObject(deadline.event);
          } finally {
            model.fallback(DEFAULT_ANSWER);
          }
        });

      more({ editSession: () => editSession });
    },
  );
}
