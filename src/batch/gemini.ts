/**
 * Gemini Batch API client (docs/batch-providers.md#requests): one inline request through
 * models/<model>:batchGenerateContent; the result is inlined in the batch operation.
 */
import type { components } from "../../generated/providers/gemini.js";
import { geminiBatchState, isGeminiTerminal, translateGeminiOperation } from "./gemini-lines.js";
import { type HttpClient, type ProviderClientOptions, vendorHttpClient } from "./http.js";
import {
  LOST_SUBMIT_MAX_PAGES,
  LOST_SUBMIT_PAGE_SIZE,
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
import { BatchProviderError } from "./provider.js";
import { record, str, unreadable } from "./read.js";

export const GEMINI_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com";
const V = "gemini";

type CreateBody = components["schemas"]["BatchGenerateContentRequest"];

/** The model id as the path wants it: without a models/ prefix. */
export function geminiModelId(model: string): string {
  return model.replace(/^models\//, "");
}

/** The create body: one inline request; displayName and metadata.key are the Agent's uid. */
export function geminiCreateBody(req: BatchSubmitRequest): CreateBody {
  return {
    batch: {
      displayName: req.agentUid,
      inputConfig: {
        requests: {
          requests: [
            {
              request: {
                contents: [{ role: "user", parts: [{ text: req.prompt }] }],
                generationConfig: {
                  maxOutputTokens: req.maxTokens,
                  ...(req.outputSchema !== undefined
                    ? { responseMimeType: "application/json", responseJsonSchema: req.outputSchema }
                    : {}),
                },
              },
              metadata: { key: req.agentUid },
            },
          ],
        },
      },
    },
  };
}

export class GeminiBatchProvider implements BatchProvider {
  readonly name = "gemini" as const;
  /** Where requests go: the option, else the real host. */
  readonly baseUrl: string;
  private readonly http: HttpClient;

  constructor(options: ProviderClientOptions = {}) {
    this.baseUrl = options.baseUrl ?? GEMINI_DEFAULT_BASE_URL;
    this.http = vendorHttpClient(V, this.baseUrl, options);
  }

  private headers(apiKey: string): Record<string, string> {
    return { "x-goog-api-key": apiKey };
  }

  private batchPath(batchId: string): string {
    return `/v1beta/batches/${encodeURIComponent(batchId)}`;
  }

  async submit(req: BatchSubmitRequest): Promise<BatchSubmitResult> {
    const { body } = await this.http.json({
      method: "POST",
      path: `/v1beta/models/${encodeURIComponent(geminiModelId(req.model))}:batchGenerateContent`,
      headers: this.headers(req.apiKey),
      json: geminiCreateBody(req),
    });
    return readCreated(() => ({
      batchId: batchIdOf(str(V, record(V, body, "operation").name, "operation.name")),
    }));
  }

  /**
   * The batch's displayName is the Agent's uid (geminiCreateBody), so the listing says exactly
   * whether the lost attempt created one. The listing's order is not documented: every page is
   * read, up to LOST_SUBMIT_MAX_PAGES.
   */
  async findLostSubmit(q: LostSubmitQuery): Promise<LostSubmitResult> {
    let pageToken: string | undefined;
    for (let page = 0; page < LOST_SUBMIT_MAX_PAGES; page++) {
      const { body } = await this.http.json({
        method: "GET",
        path: `/v1beta/batches?pageSize=${LOST_SUBMIT_PAGE_SIZE}${pageToken ? `&pageToken=${encodeURIComponent(pageToken)}` : ""}`,
        headers: this.headers(q.apiKey),
      });
      const list = record(V, body, "batch list");
      for (const item of Array.isArray(list.operations) ? list.operations : []) {
        const op = record(V, item, "listed operation");
        const meta = op.metadata;
        const displayName =
          typeof meta === "object" && meta !== null
            ? (meta as Record<string, unknown>).displayName
            : undefined;
        if (displayName === q.agentUid)
          return { state: "found", batchId: batchIdOf(str(V, op.name, "operation.name")) };
      }
      if (typeof list.nextPageToken !== "string" || list.nextPageToken === "") return { state: "none" };
      pageToken = list.nextPageToken;
    }
    return undecidedAfterPages(V, `a batch named ${q.agentUid}`);
  }

  private async getOperation(batchId: string, apiKey: string, passStatuses?: number[]) {
    const res = await this.http.json({
      method: "GET",
      path: this.batchPath(batchId),
      headers: this.headers(apiKey),
      passStatuses,
    });
    if (res.status === 404) return undefined;
    return record(V, res.body, "operation");
  }

  async poll(
    batchId: string,
    ctx: { agentUid: string; model: string; apiKey: string },
  ): Promise<BatchPollResult> {
    const operation = await this.getOperation(batchId, ctx.apiKey);
    if (operation === undefined || !isGeminiTerminal(geminiBatchState(operation))) {
      return { state: "in_progress" };
    }
    return translateGeminiOperation(operation, ctx);
  }

  async cancel(batchId: string, apiKey: string): Promise<void> {
    try {
      await this.http.send({
        method: "POST",
        path: `${this.batchPath(batchId)}:cancel`,
        headers: this.headers(apiKey),
        passStatuses: [404],
      });
    } catch (err) {
      // A batch that already ended refuses the cancel; that is the outcome we wanted.
      if (!(err instanceof BatchProviderError) || (err.status !== 400 && err.status !== 409)) throw err;
      const operation = await this.getOperation(batchId, apiKey, [404]);
      if (operation !== undefined && !isGeminiTerminal(geminiBatchState(operation))) throw err;
    }
  }

  /** DELETE right away: Gemini does not need the batch to settle first (the caller cancels before). */
  async cleanup(batchId: string, apiKey: string): Promise<BatchCleanupResult> {
    await this.http.send({
      method: "DELETE",
      path: this.batchPath(batchId),
      headers: this.headers(apiKey),
      passStatuses: [404],
    });
    return { state: "done" };
  }
}

/** The <id> of an operation named batches/<id>. */
function batchIdOf(name: string): string {
  const match = /^batches\/(.+)$/.exec(name);
  if (match?.[1] === undefined)
    throw unreadable(V, `operation.name ${JSON.stringify(name)} is not batches/<id>`);
  return match[1];
}
