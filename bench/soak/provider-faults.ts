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

/** The fake's rule for a `provider-500` or `provider-429` fault. */
export function providerRule(fault: Fault): FaultRule {
  const status = fault.kind === "provider-429" ? 429 : 500;
  return {
    kind: "status",
    status,
    ...(fault.params.retryAfter !== undefined ? { retryAfter: Number(fault.params.retryAfter) } : {}),
    ...providerCall(String(fault.params.call)),
    times: Number(fault.params.times),
  };
}
