/**
 * A provider fault of the schedule as a rule for the fake providers' `inject()`
 * (test/fakes/providers/README.md#faults): which calls it hits, by method and path.
 */
import type { FaultRule } from "../../test/fakes/providers/base.js";
import type { Fault } from "./schedule.js";

/** The provider call a fault hits, as a method and a path pattern that fits all three fakes. */
export function providerCall(call: string): Pick<FaultRule, "method" | "path"> {
  switch (call) {
    case "submit":
      // Every POST but a cancel: the batch create (and OpenAI's file upload before it).
      return { method: "POST", path: /^(?!.*[:/]cancel$)/ };
    case "poll":
      return { method: "GET" };
    case "cancel":
      return { method: "POST", path: /[:/]cancel$/ };
    case "delete":
      return { method: "DELETE" };
    default:
      throw new Error(`provider fault: params.call must be submit, poll, cancel or delete, got "${call}"`);
  }
}

/**
 * The fake's rule for a provider fault: an error status (500, 429 or Anthropic's 529 overload, the
 * last two with retry-after), a call that never answers (the controller's timeout decides), or a
 * call handled and its answer lost (a create creates: the lost submit the controller must settle
 * before any resend, docs/batch-runs.md).
 */
export function providerRule(fault: Fault): FaultRule {
  const where = { ...providerCall(String(fault.params.call)), times: Number(fault.params.times) };
  const retryAfter =
    fault.params.retryAfter !== undefined ? { retryAfter: Number(fault.params.retryAfter) } : {};
  switch (fault.kind) {
    case "provider-500":
      return { kind: "status", status: 500, ...where };
    case "provider-429":
      return { kind: "status", status: 429, ...retryAfter, ...where };
    case "provider-529":
      return { kind: "status", status: 529, ...retryAfter, ...where };
    case "provider-timeout":
      return { kind: "hang", ...where };
    case "provider-lost-answer":
      return { kind: "lose-answer", how: "reset", ...where };
    default:
      throw new Error(`provider fault: ${fault.kind} is not a provider fault`);
  }
}
