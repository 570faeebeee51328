/**
 * OpenAI Batch API client (docs/batch-providers.md#requests): upload a one-line JSONL file holding a
 * POST /v1/responses call, create a batch over it, read the output or error file once it
 * completes, and delete the files on cleanup (batch objects cannot be deleted).
 */
import { FormData } from "undici";
import type { components } from "../../generated/providers/openai.js";
import { type HttpClient, type ProviderClientOptions, vendorHttpClient } from "./http.js";
import {
  LOST_SUBMIT_MAX_PAGES,
  LOST_SUBMIT_PAGE_SIZE,
  LOST_SUBMIT_SLACK_MS,
  readCreated,
  undecidedAfterPages,
} from "./lost-submit.js";
import {
  batchEndReason,
  codexFailure,
  findOutputLine,
  NO_RESULT,
  SETTLED_STATUSES,
  translateOpenAILine,
} from "./openai-lines.js";
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
import { jsonl, optStr, record, str, unreadable } from "./read.js";

export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";
const V = "openai";

type BatchRequestInput = components["schemas"]["BatchRequestInput"];
type CreateBatchRequest = components["schemas"]["CreateBatchRequest"];
type Batch = components["schemas"]["Batch"];

/** The name text.format requires; any a-z, 0-9, _ or - string up to 64 chars will do. */
export const OPENAI_SCHEMA_NAME = "agent_output";

/** The one JSONL line of the input file. Pure, exported for tests. */
export function openaiInputLine(req: BatchSubmitRequest): BatchRequestInput {
  return {
    custom_id: req.agentUid,
    method: "POST",
    url: "/v1/responses",
    body: {
      model: req.model,
      input: req.prompt,
      max_output_tokens: req.maxTokens,
      // The Responses API stores every response by default; nothing may outlive the cleanup.
      store: false,
      ...(req.outputSchema !== undefined
        ? {
            text: {
              format: {
                type: "json_schema",
                name: OPENAI_SCHEMA_NAME,
                strict: true,
                schema: req.outputSchema,
              },
            },
          }
        : {}),
    },
  };
}

export function openaiCreateBatchBody(inputFileId: string, agentUid: string): CreateBatchRequest {
  return {
    input_file_id: inputFileId,
    endpoint: "/v1/responses",
    completion_window: "24h",
    metadata: { agent_uid: agentUid },
  };
}

export class OpenAIBatchProvider implements BatchProvider {
  readonly name = "openai" as const;
  /** Where requests go: the option, else the real host. */
  readonly baseUrl: string;
  private readonly http: HttpClient;

  constructor(options: ProviderClientOptions = {}) {
    this.baseUrl = options.baseUrl ?? OPENAI_DEFAULT_BASE_URL;
    this.http = vendorHttpClient(V, this.baseUrl, options);
  }

  private headers(apiKey: string): Record<string, string> {
    return { authorization: `Bearer ${apiKey}` };
  }

  async submit(req: BatchSubmitRequest): Promise<BatchSubmitResult> {
    const fileId = req.inputFileId ?? (await this.upload(req));
    try {
      const created = await this.http.json({
        method: "POST",
        path: "/batches",
        headers: this.headers(req.apiKey),
        json: openaiCreateBatchBody(fileId, req.agentUid),
      });
      return readCreated(() => ({ batchId: str(V, record(V, created.body, "batch").id, "batch.id") }));
    } catch (err) {
      if (err instanceof BatchProviderError && !err.permanent) {
        // A retry creates its batch over this same upload: one file per Agent, however many tries.
        err.inputFileId = fileId;
        throw err;
      }
      // No batch will ever refer to the upload, so nothing would ever clean it up: remove it now.
      await this.deleteFile(fileId, req.apiKey).catch(() => undefined);
      throw err;
    }
  }

  /**
   * The batch carries the Agent's uid as metadata.agent_uid (openaiCreateBatchBody), so the
   * listing (newest first) says whether the lost attempt created one. When it did not, an input
   * file the lost attempt uploaded (named <uid>.jsonl) is reused, so the Agent keeps one file;
   * any further such file is deleted.
   */
  async findLostSubmit(q: LostSubmitQuery): Promise<LostSubmitResult> {
    const batch = await this.findListed("/batches?", q, (b) => {
      const meta = b.metadata;
      const uid =
        typeof meta === "object" && meta !== null ? (meta as Record<string, unknown>).agent_uid : undefined;
      return uid === q.agentUid || (q.inputFileId !== undefined && b.input_file_id === q.inputFileId);
    });
    if (batch === "too_many") return undecidedAfterPages(V, `a batch with metadata.agent_uid ${q.agentUid}`);
    if (batch.length > 0) return { state: "found", batchId: str(V, batch[0]?.id, "batch.id") };
    if (q.inputFileId !== undefined) return { state: "none", inputFileId: q.inputFileId };
    const filename = `${q.agentUid}.jsonl`;
    const files = await this.findListed(
      "/files?purpose=batch&order=desc&",
      q,
      (f) => f.filename === filename,
    );
    if (files === "too_many") return undecidedAfterPages(V, `an input file named ${filename}`);
    const [keep, ...extra] = files.map((f) => str(V, f.id, "file.id"));
    for (const id of extra) await this.deleteFile(id, q.apiKey).catch(() => undefined);
    return keep === undefined ? { state: "none" } : { state: "none", inputFileId: keep };
  }

  /**
   * The items of a newest-first listing that `match`, from the newest down to the lost attempt's
   * window; "too_many" when LOST_SUBMIT_MAX_PAGES pages did not reach it.
   */
  private async findListed(
    path: string,
    q: LostSubmitQuery,
    match: (item: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>[] | "too_many"> {
    const found: Record<string, unknown>[] = [];
    let after: string | undefined;
    for (let page = 0; page < LOST_SUBMIT_MAX_PAGES; page++) {
      const { body } = await this.http.json({
        method: "GET",
        path: `${path}limit=${LOST_SUBMIT_PAGE_SIZE}${after ? `&after=${encodeURIComponent(after)}` : ""}`,
        headers: this.headers(q.apiKey),
      });
      const list = record(V, body, "list");
      let older = false;
      for (const entry of Array.isArray(list.data) ? list.data : []) {
        const item = record(V, entry, "listed item");
        const created = typeof item.created_at === "number" ? item.created_at * 1000 : Number.NaN;
        if (created < q.since - LOST_SUBMIT_SLACK_MS) older = true;
        else if (match(item)) found.push(item);
      }
      if (older || list.has_more !== true || typeof list.last_id !== "string") return found;
      after = list.last_id;
    }
    return "too_many";
  }

  private async upload(req: BatchSubmitRequest): Promise<string> {
    const form = new FormData();
    form.append("purpose", "batch");
    const jsonlText = `${JSON.stringify(openaiInputLine(req))}\n`;
    form.append("file", new Blob([jsonlText], { type: "application/jsonl" }), `${req.agentUid}.jsonl`);
    const uploaded = await this.http.json({
      method: "POST",
      path: "/files",
      headers: this.headers(req.apiKey),
      form,
    });
    return readCreated(() => str(V, record(V, uploaded.body, "file").id, "file.id"));
  }

  private async getBatch(
    batchId: string,
    apiKey: string,
    passStatuses?: number[],
  ): Promise<Batch | undefined> {
    const res = await this.http.json({
      method: "GET",
      path: `/batches/${encodeURIComponent(batchId)}`,
      headers: this.headers(apiKey),
      passStatuses,
    });
    if (res.status === 404) return undefined;
    const batch = record(V, res.body, "batch");
    str(V, batch.status, "batch.status");
    return batch as unknown as Batch;
  }

  private async fileLines(fileId: string, apiKey: string): Promise<unknown[]> {
    const res = await this.http.send({
      method: "GET",
      path: `/files/${encodeURIComponent(fileId)}/content`,
      headers: this.headers(apiKey),
    });
    return jsonl(V, res.text, `file ${fileId}`);
  }

  async poll(
    batchId: string,
    ctx: { agentUid: string; model: string; apiKey: string },
  ): Promise<BatchPollResult> {
    const batch = await this.getBatch(batchId, ctx.apiKey);
    if (batch === undefined) throw unreadable(V, "batch missing");
    switch (batch.status) {
      case "validating":
      case "in_progress":
      case "finalizing":
      case "cancelling":
        return { state: "in_progress" };
      case "failed":
      case "expired":
      case "cancelled":
        return codexFailure(batchEndReason(batch), ctx);
      case "completed":
        break;
      default:
        throw unreadable(V, `batch.status ${JSON.stringify(batch.status)} is not a known status`);
    }
    for (const fileId of [batch.output_file_id, batch.error_file_id]) {
      const id = optStr(fileId);
      if (id === undefined || id === "") continue;
      const line = findOutputLine(await this.fileLines(id, ctx.apiKey), ctx.agentUid);
      if (line !== undefined) return translateOpenAILine(line, ctx);
    }
    return codexFailure(NO_RESULT, ctx);
  }

  async cancel(batchId: string, apiKey: string): Promise<void> {
    try {
      await this.http.send({
        method: "POST",
        path: `/batches/${encodeURIComponent(batchId)}/cancel`,
        headers: this.headers(apiKey),
        passStatuses: [404],
      });
    } catch (err) {
      // A batch that already ended refuses the cancel, and one already cancelling (an earlier cancel
      // was accepted, perhaps by a leader whose memory of it is gone) needs none: either is the
      // outcome we wanted, so a failed cancel is confirmed by reading the batch
      // (docs/batch-runs.md#timeouts-delete-limits). A failed read keeps the cancel's own error.
      if (!(err instanceof BatchProviderError)) throw err;
      const batch = await this.getBatch(batchId, apiKey, [404]).catch(() => {
        throw err;
      });
      if (batch !== undefined && !SETTLED_STATUSES.has(batch.status) && batch.status !== "cancelling")
        throw err;
    }
  }

  async discardUpload(fileId: string, apiKey: string): Promise<void> {
    await this.deleteFile(fileId, apiKey);
  }

  private async deleteFile(fileId: string, apiKey: string): Promise<void> {
    await this.http.send({
      method: "DELETE",
      path: `/files/${encodeURIComponent(fileId)}`,
      headers: this.headers(apiKey),
      passStatuses: [404],
    });
  }

  /**
   * Deletes the input, output and error files once the batch has settled. Every file is tried on
   * each attempt and a 404 counts as deleted, so a retry after a partial cleanup finishes the rest.
   */
  async cleanup(batchId: string, apiKey: string): Promise<BatchCleanupResult> {
    const batch = await this.getBatch(batchId, apiKey, [404]).catch(settleUnseen);
    if (batch === undefined) return { state: "done" };
    if (!SETTLED_STATUSES.has(batch.status)) return { state: "not_settled" };
    const fileIds = [batch.input_file_id, batch.output_file_id, batch.error_file_id]
      .map(optStr)
      .filter((id): id is string => id !== undefined && id !== "");
    const failures: BatchProviderError[] = [];
    for (const id of fileIds) {
      try {
        await this.deleteFile(id, apiKey);
      } catch (err) {
        if (!(err instanceof BatchProviderError)) throw err;
        failures.push(err);
      }
    }
    if (failures.length > 0) {
      const first = failures[0] as BatchProviderError;
      throw new BatchProviderError(
        `${V}: ${failures.length} of ${fileIds.length} batch files not deleted: ${failures.map((f) => f.message).join("; ")}`,
        first.status,
        first.retryAfterSeconds,
      );
    }
    return { state: "done" };
  }
}
