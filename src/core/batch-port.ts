/**
 * The contract between the controller and one vendor's batch API.
 *
 * The reconcile core decides *when* to submit, poll, cancel or clean up; an
 * implementation of this interface only knows *how* for one vendor. Every
 * method does network I/O and may throw {@link BatchProviderError}; callers
 * treat a throw as "try again on a later reconcile" (poll) or as a counted
 * failure (cleanup), never as a run outcome.
 */

import { batchAnswer } from "./provider-limits/batch.js";

/** The batch APIs we submit to; also the value of status.batchProvider. */
export type BatchProviderName = "anthropic" | "gemini" | "openai";

export interface BatchSubmitRequest {
  /** The Agent's metadata.uid: custom_id / display_name + metadata.key. */
  agentUid: string;
  /** The resolved model id (spec.model, else the definition's, else claude-opus-5-5). */
  model: string;
  /** The definition's prompt rendered with the Agent's parameters. */
  prompt: string;
  /** batch.maxTokens, default 16000. */
  maxTokens: number;
  /** output.schema, when the definition sets one. */
  outputSchema?: Record<string, unknown>;
  /** The vendor API key read from agent-secrets. */
  apiKey: string;
  /**
   * OpenAI only: the input file an earlier, transiently failed attempt of this submit uploaded.
   * The retry creates its batch over it instead of uploading the prompt again.
   */
  inputFileId?: string;
}

export interface BatchSubmitResult {
  /** status.batchId: msgbatch_..., batch_..., or the <id> of batches/<id>. */
  batchId: string;
}

/** The outcome of one poll. */
export type BatchPollResult =
  | { state: "in_progress" }
  | {
      state: "ended";
      /** succeeded → Agent Succeeded with exitCode 0; failed → Failed with exitCode 1. */
      outcome: "succeeded" | "failed";
      /** Every CLI line (JSON text, no trailing newline), uncapped; the caller caps status.output. */
      lines: string[];
      /** Set when outcome is failed: the seed's failureReason text. */
      failureReason?: string;
    };

/** The outcome of one cleanup attempt. */
export type BatchCleanupResult =
  /** Every provider-side object is gone (a 404 counts as gone). */
  | { state: "done" }
  /** The batch has not settled yet (canceling / cancelling); not a failure, try again later. */
  | { state: "not_settled" };

/**
 * A submit whose answer was lost after the request was sent (docs/batch-runs.md#a-submit-whose-answer-was-lost):
 * the attempt may have created a batch. `since` is when the first such attempt was sent, `until`
 * when the last one failed (epoch ms, the controller's clock).
 */
export interface LostSubmitQuery {
  agentUid: string;
  apiKey: string;
  since: number;
  until: number;
  /** OpenAI: the input file the lost attempt created its batch over, when the upload was answered. */
  inputFileId?: string;
}

/** What the provider holds of a lost submit. */
export type LostSubmitResult =
  /** The lost attempt created this batch: it is the Agent's, adopted instead of a second one. */
  | { state: "found"; batchId: string }
  /** No batch of the Agent exists: the submit is sent again (OpenAI: over this upload when one was found). */
  | { state: "none"; inputFileId?: string }
  /** Cannot be told yet (Anthropic: a candidate batch has not ended); asked again after the back-off. */
  | { state: "undecided"; reason: string };

export interface BatchProvider {
  readonly name: BatchProviderName;
  submit(req: BatchSubmitRequest): Promise<BatchSubmitResult>;
  /** agentUid and model are needed to build the CLI lines (session_id / thread_id, init model). */
  poll(batchId: string, ctx: { agentUid: string; model: string; apiKey: string }): Promise<BatchPollResult>;
  /** Requests cancellation; a batch that already ended is not an error. */
  cancel(batchId: string, apiKey: string): Promise<void>;
  /** Deletes the provider-side objects; throws on a failed attempt (which the caller counts). */
  cleanup(batchId: string, apiKey: string): Promise<BatchCleanupResult>;
  /**
   * OpenAI: deletes an input file a failed submit uploaded (`BatchProviderError.inputFileId`) once
   * no retry will use it. Gone already (404) is not an error. Vendors without uploads omit it.
   */
  discardUpload?(fileId: string, apiKey: string): Promise<void>;
  /** Finds the batch a submit whose answer was lost may have created, before any resend. */
  findLostSubmit(q: LostSubmitQuery): Promise<LostSubmitResult>;
}

export class BatchProviderError extends Error {
  /** OpenAI submit: the uploaded input file a retry should reuse (the batch create failed transiently). */
  inputFileId?: string;
  /**
   * The request was sent and no usable answer came back (a timeout or reset after sending, a 500,
   * 502 or 504, a 2xx body that could not be read): the provider may have acted on it. A create
   * failing this way may have created a batch.
   */
  mayHaveActed = false;
  /**
   * Cleanup: the attempt failed reading whether the batch has settled, before it deleted anything
   * (docs/batch-runs.md#timeouts-delete-limits: a try made while the batch is still settling is not a failure).
   */
  settleUnseen = false;

  constructor(
    message: string,
    readonly status?: number,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = "BatchProviderError";
  }

  /**
   * A 4xx other than 408, 409 and 429: the request itself is wrong (bad key, unknown model,
   * invalid field), so repeating it cannot help; so is a 429 that says the billing period's quota
   * is used up (docs/provider-limits.md#recognising-a-limit). Everything else (408, 409, a rate
   * limit, 5xx, a transport failure, an unreadable body) may pass on a later attempt.
   */
  get permanent(): boolean {
    return isPermanentHttpStatus(this.status) || batchAnswer("", this).kind === "quota_exhausted";
  }
}

export function isPermanentHttpStatus(status: number | undefined): boolean {
  return status !== undefined && status >= 400 && status < 500 && ![408, 409, 429].includes(status);
}

/** Marks a cleanup's failure to read the batch's state (BatchProviderError.settleUnseen) and rethrows it. */
export function settleUnseen(err: unknown): never {
  if (err instanceof BatchProviderError) err.settleUnseen = true;
  throw err;
}
