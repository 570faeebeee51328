/**
 * Anthropic Message Batches client (docs/batch-providers.md#requests): one request per batch, custom_id =
 * the Agent's uid; results read from the batch's results_url once it has ended.
 */
import type { components } from "../../generated/providers/anthropic.js";
import { findResultLine, translateAnthropicResult } from "./anthropic-lines.js";
import { type HttpClient, type ProviderClientOptions, vendorHttpClient } from "./http.js";
import type {
  BatchCleanupResult,
  BatchPollResult,
  BatchProvider,
  BatchSubmitRequest,
  BatchSubmitResult,
} from "./provider.js";
import { BatchProviderError } from "./provider.js";
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
    return { batchId: str(V, record(V, body, "batch").id, "batch.id") };
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
      // Cancelling an ended batch is refused; that is the outcome we wanted.
      if (!(err instanceof BatchProviderError) || (err.status !== 400 && err.status !== 409)) throw err;
      const batch = await this.getBatch(batchId, apiKey, [404]);
      if (batch !== undefined && batch.processing_status !== "ended") throw err;
    }
  }

  async cleanup(batchId: string, apiKey: string): Promise<BatchCleanupResult> {
    // Only an ended batch can be deleted; a canceling one is not a failure, just not yet.
    const batch = await this.getBatch(batchId, apiKey, [404]);
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
