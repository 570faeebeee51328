/**
 * The end-to-end scenarios every real-CLI file runs, written once as a table over the vendors: an
 * edit delivered as a pull request, a rejected key, a provider that stays at its rate limit, a limit
 * past the CLI's own retries that the supervisor rides out by continuing the session, seeded chaos,
 * and a realtime session resumed in a fresh pod. A vendor row says only what differs between the
 * CLIs: the CLI and its model API, the change its own edit tool makes, what it answers at a limit,
 * how a resumed process shows the history, and the checks on its own lines. Each vendor file holds
 * its row and calls `realCliVendorTests(row)` once (one file per vendor, so vitest runs them side by
 * side); a scenario a row leaves out is not run for that CLI. Adding a fifth CLI is one row.
 */
import { describe, expect, it } from "vitest";
import { vendorFor } from "../../../src/cli/render-output.js";
import type { CliVendor } from "../../../src/core/cli/agent-clis.js";
import type { Agent } from "../../../src/core/types.js";
import type { JournalEntry, ModelServer, ModelStep } from "../../fakes/models/base.js";
import { type Answer, bareGit, type ConversationStore } from "./realtime-helpers.js";
import {
  createAgent,
  FAST_PROVIDER_RETRIES,
  finishedAgent,
  forgeRecipe,
  keySecret,
  podLog,
  type RealCliEnv,
  type RealCliSuite,
  type RealCliSuiteOptions,
  realCliSuite,
  SINK_HEADERS_KEY,
} from "./setup.js";

/** What a vendor's checks get besides the Agent: the file's env, its suite and the conversation store. */
export interface VendorContext<M> {
  env: RealCliEnv;
  suite: RealCliSuite<M>;
  /** Present when the row's suite is `realtime`. */
  store: ConversationStore | undefined;
}

/** The change the model makes through the CLI's own edit tool in the limit and chaos runs. */
export interface VendorChange {
  /** The definition's prompt and permission_mode. */
  spec: Record<string, unknown>;
  /** The model's answer that edits the clone through the CLI's tool (it writes the row's `file`). */
  edit: ModelStep;
  /** The model's last answer, after the edit. */
  done: ModelStep;
}

/** One CLI of the end-to-end tests: what differs from the others. */
export interface RealCliVendorRow<M extends ModelServer> {
  vendor: CliVendor;
  /** Stations and Agents are named `<prefix>-<scenario>` (`cl-edit`, `cl-edit-1`). */
  prefix: string;
  /** The CLI's model API, its local server and the run's bounds. */
  suite: Omit<RealCliSuiteOptions<M>, "vendor">;
  /** One model call as the model server's journal shows it: `<METHOD> <path>`. */
  modelCall: string;
  /** status.sessionId's form. */
  sessionId: RegExp;
  /** What the CLI calls its resumable conversation in a title: "session", "thread". */
  sessionNoun: string;
  /** The file of the forge's `acme/app` the model's edit writes, as `git diff --name-status` shows it, and its content after. */
  file: { path: string; status: "A" | "M"; content: string };
  /** Needed by `limitPastCli` and `chaos`. */
  change?: VendorChange;
  edit: EditRow<M>;
  unauthorized: UnauthorizedRow<M>;
  rateLimited: RateLimitedRow<M>;
  limitPastCli?: LimitPastCliRow<M>;
  chaos?: ChaosRow;
  realtime?: RealtimeRow<M>;
}

/** The interactive run that edits the clone: Succeeded, its lines read back, the edit as a PR. */
export interface EditRow<M> {
  title: string;
  /** The definition's own fields (prompt, permission_mode, disallowed_tools…). */
  spec: Record<string, unknown>;
  /** More `resources` beside the clone and the key. */
  resources?: (ctx: VendorContext<M>) => Record<string, unknown>;
  /** `output.select`. */
  select: Record<string, unknown>[];
  /** The model's answers; each is one model call. */
  script: ModelStep[];
  /** The checks on the CLI's own lines (session, usage, `kubectl agent logs`, select, tools offered). */
  expectLines(agent: Agent, model: M, ctx: VendorContext<M>): void | Promise<void>;
}

/** A rejected key (401). */
export interface UnauthorizedRow<M> {
  /** The title after "a rejected key (401) ends Failed ". */
  how: string;
  /** status.failureReason: exact, a pattern, or the vendor's own check. */
  reason: string | RegExp | ((agent: Agent) => void);
  /** How many model calls the CLI makes before it gives up. */
  calls: number;
  expectMore?(agent: Agent, model: M): void;
}

/** A provider that answers 429 until the run's deadline. */
export interface RateLimitedRow<M> {
  /** The title between "(429): " and ", then Failed". */
  how: string;
  retryAfterSeconds?: number;
  /** status.failureReason: the deadline naming the provider's last answer (exact or a pattern). */
  reason: string | RegExp;
  /** The fewest model calls: the CLI's own bounded retries and at least one more process. */
  minCalls?: number;
  /** What status.providerRetries.last holds. */
  last?: Record<string, unknown>;
  expectMore?(agent: Agent, model: M): void;
}

/** A limit past the CLI's own retries: the supervisor continues the session and the edit lands. */
export interface LimitPastCliRow<M> {
  /** The title before " past the CLI's own": "overloaded", "a rate limit". */
  what: string;
  /** The CLI's word for its own tries: "retries", "attempts". */
  tries: string;
  /** The provider's answer, given `answers` times after the edit: more than the CLI retries. */
  status: number;
  answers: number;
  /** More of the definition (e.g. a sink that hears the wait). */
  spec?: (ctx: VendorContext<M>) => Record<string, unknown>;
  /** status.providerRetries, and that the resumed process sent the history and the continuation. */
  expectResumed(agent: Agent, model: M, ctx: VendorContext<M>): void;
}

/** ~30 % of model requests answered by a fault at random. */
export interface ChaosRow {
  /** The seed of the faults (test/fakes/models/base.ts seededRandom). */
  seed: number;
}

/** A realtime session of three turns, then a resume in a fresh pod. */
export interface RealtimeRow<M> {
  /** The model's three answers. */
  script: ModelStep[];
  /** The third turn's prompt. */
  third: string;
  /** The second turn's acceptance, checked against the session the run ended with. */
  expectSecondAccepted?(second: Answer, sessionId: string): void;
  /** The three turns' requests: each carried the conversation so far. */
  expectTurns(model: M, first: Agent): void;
  /** The resumed pod's requests: they carried the earlier history. */
  expectResumed(calls: JournalEntry[]): void;
  /** The line by which the resumed turn announced the same session. */
  announced(sessionId: string): string;
}

/** The row's `change`, which a limit or chaos run needs. */
function changeOf<M extends ModelServer>(row: RealCliVendorRow<M>): VendorChange {
  if (!row.change) throw new Error(`the ${row.vendor} row has limitPastCli or chaos but no \`change\``);
  return row.change;
}

const matches = (actual: string | undefined, expected: string | RegExp) =>
  typeof expected === "string" ? expect(actual).toBe(expected) : expect(actual).toMatch(expected);

/** Registers the file's suite and every scenario its row has. */
export function realCliVendorTests<M extends ModelServer>(row: RealCliVendorRow<M>): void {
  let env: RealCliEnv;
  let store: ConversationStore | undefined;
  const suite = realCliSuite({
    ...row.suite,
    vendor: row.vendor,
    onStart: (started) => {
      env = started.env;
      store = started.store;
    },
  });
  const ctx = (): VendorContext<M> => ({ env, suite, store });
  const { stationWithModel, run, post, prompt, untilAccepted } = suite;
  const { prefix, file } = row;
  const timeout = row.suite.runTimeoutMs;
  const key = () => ({ secrets: [keySecret(row.suite.api)] });
  const branchFile = (agent: string) =>
    bareGit(env.forge?.root ?? "", "acme/app", ["show", `agent/${agent}:${file.path}`]);

  describe.skipIf(suite.skip)(`the real ${row.vendor} CLI on the local plane`, () => {
    it.concurrent(
      row.edit.title,
      async () => {
        const recipe = forgeRecipe(env, "acme/app");
        const model = await stationWithModel(`${prefix}-edit`, {
          ...row.edit.spec,
          resources: { ...recipe.resources, ...key(), ...row.edit.resources?.(ctx()) },
          delivery: recipe.delivery,
          output: {
            select: row.edit.select,
            sinks: [{ type: "http", url: env.listener.url, headers_secret: SINK_HEADERS_KEY }],
          },
        });
        model.script(row.edit.script);
        const name = `${prefix}-edit-1`;
        const agent = await run(name, `${prefix}-edit`);
        expect(agent.status?.failureReason ?? "").toBe("");
        expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
        const output = agent.status?.output ?? "";
        expect(agent.status?.sessionId ?? "").toMatch(row.sessionId);
        // kubectl agent status / logs tell the CLI by its lines.
        expect(vendorFor(output.split("\n"), row.suite.model)).toBe(row.vendor);
        await row.edit.expectLines(agent, model, ctx());
        expect(output).toBe(await podLog(env, agent, "agent"));

        // One model call per scripted answer, nothing else (no probe, no telemetry, no title request).
        expect(model.journal().map((e) => `${e.method} ${e.path}`)).toEqual(
          Array(row.edit.script.length).fill(row.modelCall),
        );

        // The edit is the pull request's diff.
        const pulls = env.forge?.github.pulls.filter((p) => p.head === `agent/${name}`) ?? [];
        expect(pulls).toHaveLength(1);
        expect(agent.status?.prUrl).toBe(pulls[0]?.htmlUrl);
        expect(
          await bareGit(env.forge?.root ?? "", "acme/app", [
            "diff",
            "--name-status",
            "main",
            `agent/${name}`,
          ]),
        ).toBe(`${file.status}\t${file.path}\n`);
        expect(await branchFile(name)).toBe(file.content);
      },
      timeout,
    );

    const unauthorized = row.unauthorized;
    it.concurrent(
      `a rejected key (401) ends Failed ${unauthorized.how}`,
      async () => {
        const model = await stationWithModel(`${prefix}-401`, { prompt: "Say hi." });
        model.fallback({ error: { status: 401 } });
        const agent = await run(`${prefix}-401-1`, `${prefix}-401`);
        expect(agent.status?.phase).toBe("Failed");
        const reason = unauthorized.reason;
        if (typeof reason === "function") reason(agent);
        else matches(agent.status?.failureReason, reason);
        expect(model.modelCalls()).toHaveLength(unauthorized.calls);
        unauthorized.expectMore?.(agent, model);
      },
      timeout,
    );

    const limited = row.rateLimited;
    it.concurrent(
      `a provider that stays at its rate limit (429): ${limited.how}, then Failed naming the provider's last answer`,
      async () => {
        // The run waits for its provider until the deadline, and the reason can name the provider's
        // answer only once the CLI has given up at least once and said so. On a loaded machine a
        // CLI's start alone can take most of two minutes (seen: opencode under `npm run
        // test:shaken` had printed no answer when a two-minute deadline ended), so four.
        const model = await stationWithModel(
          `${prefix}-429`,
          { prompt: "Say hi." },
          { deadlineMinutes: 4, env: FAST_PROVIDER_RETRIES },
        );
        model.fallback({
          error: { status: 429 },
          ...(limited.retryAfterSeconds === undefined
            ? {}
            : { retryAfterSeconds: limited.retryAfterSeconds }),
        });
        const agent = await run(`${prefix}-429-1`, `${prefix}-429`);
        expect(agent.status).toMatchObject({ phase: "Failed", exitCode: 124 });
        matches(agent.status?.failureReason, limited.reason);
        // The CLI's own bounded retries, then the supervisor's, each a process of the same run.
        expect(agent.status?.providerRetries?.count ?? 0).toBeGreaterThanOrEqual(1);
        if (limited.last) expect(agent.status?.providerRetries?.last).toMatchObject(limited.last);
        if (limited.minCalls !== undefined)
          expect(model.modelCalls().length).toBeGreaterThanOrEqual(limited.minCalls);
        limited.expectMore?.(agent, model);
      },
      timeout,
    );

    const past = row.limitPastCli;
    if (past) {
      const change = changeOf(row);
      it.concurrent(
        `${past.what} past the CLI's own ${past.tries} (${past.status}): the supervisor continues the same ${row.sessionNoun}, the history carried, and the edit lands`,
        async () => {
          const recipe = forgeRecipe(env, "acme/app");
          const model = await stationWithModel(
            `${prefix}-limit`,
            {
              ...change.spec,
              resources: { ...recipe.resources, ...key() },
              delivery: recipe.delivery,
              ...past.spec?.(ctx()),
            },
            { env: FAST_PROVIDER_RETRIES },
          );
          model.script([
            change.edit,
            // More failures than the CLI's own retries of its next request: it gives up, the supervisor does not.
            ...Array.from({ length: past.answers }, () => ({ error: { status: past.status } })),
            change.done,
          ]);
          const name = `${prefix}-limit-1`;
          const agent = await run(name, `${prefix}-limit`);
          expect(agent.status?.failureReason ?? "").toBe("");
          expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
          past.expectResumed(agent, model, ctx());
          expect(await branchFile(name)).toBe(file.content);
        },
        timeout,
      );
    }

    const chaos = row.chaos;
    if (chaos) {
      const change = changeOf(row);
      it.concurrent(
        "with ~30 % of model requests answered 429 (with and without retry-after), 529, 503 or a dropped stream at random (seeded): Succeeded with the model's edit",
        async () => {
          const recipe = forgeRecipe(env, "acme/app");
          const model = await stationWithModel(
            `${prefix}-chaos`,
            { ...change.spec, resources: { ...recipe.resources, ...key() }, delivery: recipe.delivery },
            { env: FAST_PROVIDER_RETRIES },
          );
          model.faults({ rate: 0.3, seed: chaos.seed });
          model.script([change.edit, change.done]);
          const name = `${prefix}-chaos-1`;
          const agent = await run(name, `${prefix}-chaos`);
          expect(agent.status?.failureReason ?? "", agent.status?.output).toBe("");
          expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
          // The provider did limit it: some requests were answered by a fault, not by the script.
          const faulted = model.modelCalls().filter((c) => c.step && ("error" in c.step || "cut" in c.step));
          expect(faulted.length).toBeGreaterThan(0);
          expect(await branchFile(name)).toBe(file.content);
        },
        timeout,
      );
    }

    const realtime = row.realtime;
    if (realtime)
      it.concurrent(
        `a realtime session of three turns continues one ${row.vendor} ${row.sessionNoun}; a resume in a fresh pod sends the earlier history`,
        async () => {
          const station = `${prefix}-rt`;
          const [a, b] = [`${prefix}-rt-a`, `${prefix}-rt-b`];
          const model = await stationWithModel(station, {
            prompt: "Remember the number 42.",
            execution: "realtime",
            resources: { ...key(), conversation: { source: `${store?.url}/conv` } },
          });
          model.script(realtime.script);
          await createAgent(env, a, station);
          const { accepted: second } = await untilAccepted(a, "Which number?");
          expect(await prompt(a, realtime.third)).toMatchObject({ status: 202 });
          expect(await post(a, "close")).toMatchObject({ status: 202 });
          const first = await finishedAgent(env, a, timeout);
          expect(first.status?.failureReason ?? "").toBe("");
          expect(first.status?.phase).toBe("Succeeded");
          const sessionId = first.status?.sessionId ?? "";
          expect(sessionId).toMatch(row.sessionId);
          realtime.expectSecondAccepted?.(second, sessionId);

          // One CLI process per turn, each continuing the session: every request carries the
          // conversation so far (the definition's prompt was turn 1).
          realtime.expectTurns(model, first);
          expect(store?.saves(sessionId)).toBeGreaterThan(0);

          // A fresh pod resumes it: the init restores the saved CLI home, the turn resumes the session.
          model.script([{ text: "It was 42." }]);
          const before = model.modelCalls().length;
          await createAgent(env, b, station, { resumeSession: sessionId });
          const { accepted } = await untilAccepted(b, "What was the number?");
          expect(accepted.body).toEqual({ turn: 1, queued: 1, sessionId });
          expect(await post(b, "close")).toMatchObject({ status: 202 });
          const resumed = await finishedAgent(env, b, timeout);
          expect(resumed.status?.failureReason ?? "").toBe("");
          expect(resumed.status).toMatchObject({ phase: "Succeeded", sessionId });
          realtime.expectResumed(model.modelCalls().slice(before));
          // The resumed turn announced the same session.
          expect(resumed.status?.output ?? "").toContain(realtime.announced(sessionId));
        },
        timeout * 2,
      );
  });
}
