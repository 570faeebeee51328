/**
 * Anthropic Message Batches client (docs/batch-providers.md#requests): one request per batch, custom_id =
 * the Agent's uid; results read from the batch's results_url once it has ended.
 */
import type { components } from "../../generated/providers/anthropic.js";
import { findResultLine, translateAnthropicResult } from "./anthropic-lines.js";
import { type HttpClient, type ProviderClientOptions, vendorHttpClient } from "./http.js";
import {
  inLostWindow,
  LOST_SUBMIT_MAX_PAGES,
  LOST_SUBMIT_PAGE_SIZE,
  LOST_SUBMIT_SLACK_MS,
  readCreated,
  undecidedAfterPages,
} from "./lost-submit.js";
import type {
  BatchCleanupResult,
  BatchPollResult,
  BatchProvider,
  BatchSubmitRequest,
  BatchSubmitResult,
  LostSubmitQuery,
  LostSubmitResult,
} from "./provider.js";
import { BatchProviderError, settleUnseen } from "./provider.js";
import { jsonl, record, str, unreadable } from "./read.js";

export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";
export const ANTHROPIC_VERSION = "2023-06-01";
const V = "anthropic";

type CreateParams = components["schemas"]["CreateMessageBatchParams"];
type MessageBatch = components["schemas"]["MessageBatch"];

/** The create body: exactly one request, keyed by the Agent's uid. Pure, exported for tests. */
export function anthropicCreateBody(req: BatchSubmitRequest): CreateParams {
  return {
    requests: [
      {
        custom_id: req.agentUid,
        params: {
          model: req.model,
          max_tokens: req.maxTokens,
          messages: [{ role: "user", content: req.prompt }],
          ...(req.outputSchema !== undefined
            ? { output_config: { format: { type: "json_schema", schema: req.outputSchema } } }
            : {}),
        },
      },
    ],
  };
}

export class AnthropicBatchProvider implements BatchProvider {
  readonly name = "anthropic" as const;
  /** Where requests go: the option, else the real host. */
  readonly baseUrl: string;
  private readonly http: HttpClient;

  constructor(options: ProviderClientOptions = {}) {
    this.baseUrl = options.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL;
    this.http = vendorHttpClient(V, this.baseUrl, options);
  }

  private headers(apiKey: string): Record<string, string> {
    return { "x-api-key": apiKey, "anthropic-version": ANTHROPIC_VERSION };
  }

  private batchPath(batchId: string): string {
    return `/v1/messages/batches/${encodeURIComponent(batchId)}`;
  }

  async submit(req: BatchSubmitRequest): Promise<BatchSubmitResult> {
    const { body } = await this.http.json({
      method: "POST",
      path: "/v1/messages/batches",
      headers: this.headers(req.apiKey),
      json: anthropicCreateBody(req),
    });
    return readCreated(() => ({ batchId: str(V, record(V, body, "batch").id, "batch.id") }));
  }

  /**
   * Anthropic lists batches without their requests, so a batch cannot be matched to the Agent by
   * its custom_id until its results exist. The candidates are the batches of exactly one request
   * created in the lost attempt's window (the listing is newest first); an ended candidate is the
   * Agent's when its result line carries the Agent's uid; while a candidate has not ended, the
   * question stays open (undecided) rather than risking a second batch or adopting someone
   * else's (docs/batch-runs.md#a-submit-whose-answer-was-lost).
   */
  async findLostSubmit(q: LostSubmitQuery): Promise<LostSubmitResult> {
    const running: string[] = [];
    let afterId: string | undefined;
    for (let page = 0; page < LOST_SUBMIT_MAX_PAGES; page++) {
      const { body } = await this.http.json({
        method: "GET",
        path: `/v1/messages/batches?limit=${LOST_SUBMIT_PAGE_SIZE}${afterId ? `&after_id=${encodeURIComponent(afterId)}` : ""}`,
        headers: this.headers(q.apiKey),
      });
      const list = record(V, body, "batch list");
      const data = Array.isArray(list.data) ? list.data : [];
      let older = false;
      for (const item of data) {
        const b = record(V, item, "listed batch");
        const created = Date.parse(str(V, b.created_at, "batch.created_at"));
        if (created > q.until + LOST_SUBMIT_SLACK_MS) continue;
        if (!inLostWindow(created, q.since, q.until)) {
          older = true;
          break;
        }
        if (requestCount(b.request_counts) !== 1) continue;
        const id = str(V, b.id, "batch.id");
        if (b.processing_status !== "ended") {
          running.push(id);
          continue;
        }
        if (typeof b.results_url !== "string" || b.results_url === "") continue;
        const res = await this.http.send({
          method: "GET",
          path: b.results_url,
          headers: { ...this.headers(q.apiKey), accept: "application/binary" },
          passStatuses: [404],
        });
        if (res.status === 404) continue;
        if (findResultLine(jsonl(V, res.text, "results"), q.agentUid) !== undefined) {
          return { state: "found", batchId: id };
        }
      }
      if (older || list.has_more !== true || typeof list.last_id !== "string") {
        return running.length > 0
          ? {
              state: "undecided",
              reason: `${V}: batch ${running.join(", ")} was created when the submit's answer was lost and has not ended; whether it is this Agent's shows in its results`,
            }
          : { state: "none" };
      }
      afterId = list.last_id;
    }
    return undecidedAfterPages(V, "the end of the lost attempt's window");
  }

  private async getBatch(batchId: string, apiKey: string, passStatuses?: number[]) {
    const res = await this.http.json({
      method: "GET",
      path: this.batchPath(batchId),
      headers: this.headers(apiKey),
      passStatuses,
    });
    if (res.status === 404) return undefined;
    const batch = record(V, res.body, "batch");
    const status = batch.processing_status;
    if (status !== "in_progress" && status !== "canceling" && status !== "ended") {
      throw unreadable(
        V,
        `processing_status ${JSON.stringify(status)} is not in_progress, canceling or ended`,
      );
    }
    return batch as unknown as MessageBatch;
  }

  async poll(
    batchId: string,
    ctx: { agentUid: string; model: string; apiKey: string },
  ): Promise<BatchPollResult> {
    const batch = await this.getBatch(batchId, ctx.apiKey);
    if (batch === undefined || batch.processing_status !== "ended") return { state: "in_progress" };
    if (typeof batch.results_url !== "string" || batch.results_url === "") {
      throw unreadable(V, "ended batch has no results_url");
    }
    const res = await this.http.send({
      method: "GET",
      path: batch.results_url,
      headers: { ...this.headers(ctx.apiKey), accept: "application/binary" },
    });
    const line = findResultLine(jsonl(V, res.text, "results"), ctx.agentUid);
    return translateAnthropicResult(line, ctx);
  }

  async cancel(batchId: string, apiKey: string): Promise<void> {
    try {
      await this.http.send({
        method: "POST",
        path: `${this.batchPath(batchId)}/cancel`,
        headers: this.headers(apiKey),
        passStatuses: [404],
      });
    } catch (err) {
      // Cancelling an ended batch is refused, and one already canceling (an earlier cancel was
      // accepted, perhaps by a leader whose memory of it is gone) needs none: either is the outcome
      // we wanted, so a failed cancel is confirmed by reading the batch
      // (docs/batch-runs.md#timeouts-delete-limits). A failed read keeps the cancel's own error.
      if (!(err instanceof BatchProviderError)) throw err;
      const batch = await this.getBatch(batchId, apiKey, [404]).catch(() => {
        throw err;
      });
      if (
        batch !== undefined &&
        batch.processing_status !== "ended" &&
        batch.processing_status !== "canceling"
      )
        throw err;
    }
  }

  async cleanup(batchId: string, apiKey: string): Promise<BatchCleanupResult> {
    // Only an ended batch can be deleted; a canceling one is not a failure, just not yet.
    const batch = await this.getBatch(batchId, apiKey, [404]).catch(settleUnseen);
    if (batch === undefined) return { state: "done" };
    if (batch.processing_status !== "ended") return { state: "not_settled" };
    await this.http.send({
      method: "DELETE",
      path: this.batchPath(batchId),
      headers: this.headers(apiKey),
      passStatuses: [404],
    });
    return { state: "done" };
  }
}

/** How many requests a listed batch holds: the sum of its request_counts. */
function requestCount(counts: unknown): number {
  if (typeof counts !== "object" || counts === null) return 0;
  return Object.values(counts).reduce<number>((n, v) => n + (typeof v === "number" ? v : 0), 0);
}
