/**
 * Answers of a real kube-apiserver (v1.33, this repo's test plane) to the poll's metadata-only LIST,
 * captured 2026-12-07 for the protobuf decoder's table test (src/kube/metadata-protobuf.test.ts):
 * the same pages asked for in protobuf (base64 of the body) and in JSON. Agents are a custom
 * resource; page 1 of 2 (limit=2) holds one Agent being deleted behind a finalizer; the Job has a
 * controlling owner reference. Every item carries its managedFields.
 */

import type { ListedMetadata } from "../../src/kube/metadata-protobuf.js";

/** The metadata fields the protobuf decoder reads (src/kube/metadata-protobuf.ts). */
export const DECODED_FIELDS: readonly (keyof ListedMetadata)[] = [
  "name",
  "generateName",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "ownerReferences",
  "finalizers",
];

/** A JSON item's metadata cut to what the decoder reads: what its protobuf twin decodes to. */
export function decodedPart(metadata: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(DECODED_FIELDS.filter((k) => k in metadata).map((k) => [k, metadata[k]]));
}

/** One captured answer: its HTTP status, Content-Type and body. */
export interface CapturedAnswer {
  status: number;
  contentType: string;
  body: string;
}

/** Agents, limit=2: the first page (a continue token, remainingItemCount 1). */
export const AGENTS_PAGE_1_PROTOBUF: CapturedAnswer = {
  status: 200,
  contentType: "application/vnd.kubernetes.protobuf",
  body: "azhzAAorCg5tZXRhLms4cy5pby92MRIZUGFydGlhbE9iamVjdE1ldGFkYXRhTGlzdBK6BgpPCgASAzI1MxpEZXlKMklqb2liV1YwWVM1ck9ITXVhVzh2ZGpFaUxDSnlkaUk2TWpVekxDSnpkR0Z5ZENJNkltRXRNbHgxTURBd01DSjkgARLqAQrnAQoDYS0xEgAaEGNhcHR1cmUtMWE4YzJkMTYiACokZTMwZmY3MDAtNWYyMi00NDU5LTkwODUtYTZmMjQ2ZTBjNzNiMgMyNDc4AUIICITy29gGEACKAZEBCgd1bmtub3duEgZVcGRhdGUaGmFnZW50cy5yZS1jaW5xLmNvbS92MWJldGExIggIhPLb2AYQADIIRmllbGRzVjE6TApKeyJmOnNwZWMiOnsiLiI6e30sImY6cGFyYW1ldGVycyI6eyIuIjp7fSwiZjp0b3BpYyI6e319LCJmOnN0YXRpb25SZWYiOnt9fX1CABL5Awr2AwoDYS0yEgAaEGNhcHR1cmUtMWE4YzJkMTYiACokMzc3MDZkYjgtMTE5OC00N2ZjLTkzNzQtNmVkZGFhNmNkODQ3MgMyNTA4AkIICITy29gGEABKCAiE8tvYBhAAUABaCQoEdGVhbRIBeGI6CgRub3RlEjJ5eXl5eXl5eXl5eXl5eXl5eXl5eXl5eXl5eXl5eXl5eXl5eXl5eXl5eXl5eXl5eXl5eXIgYWdlbnRzLnJlLWNpbnEuY29tL2JhdGNoLWNsZWFudXCKAasCCgd1bmtub3duEgZVcGRhdGUaGmFnZW50cy5yZS1jaW5xLmNvbS92MWJldGExIggIhPLb2AYQADIIRmllbGRzVjE65QEK4gF7ImY6bWV0YWRhdGEiOnsiZjphbm5vdGF0aW9ucyI6eyIuIjp7fSwiZjpub3RlIjp7fX0sImY6ZmluYWxpemVycyI6eyIuIjp7fSwidjpcImFnZW50cy5yZS1jaW5xLmNvbS9iYXRjaC1jbGVhbnVwXCIiOnt9fSwiZjpsYWJlbHMiOnsiLiI6e30sImY6dGVhbSI6e319fSwiZjpzcGVjIjp7Ii4iOnt9LCJmOnBhcmFtZXRlcnMiOnsiLiI6e30sImY6dG9waWMiOnt9fSwiZjpzdGF0aW9uUmVmIjp7fX19QgAaACIA",
};

/** The same page in JSON. */
export const AGENTS_PAGE_1_JSON: CapturedAnswer = {
  status: 200,
  contentType: "application/json",
  body: '{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"253","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjUzLCJzdGFydCI6ImEtMlx1MDAwMCJ9","remainingItemCount":1},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a-1","namespace":"capture-1a8c2d16","uid":"e30ff700-5f22-4459-9085-a6f246e0c73b","resourceVersion":"247","generation":1,"creationTimestamp":"2026-12-07T18:20:52Z","managedFields":[{"manager":"unknown","operation":"Update","apiVersion":"agents.re-cinq.com/v1beta1","time":"2026-12-07T18:20:52Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:parameters":{".":{},"f:topic":{}},"f:stationRef":{}}}}]}},{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a-2","namespace":"capture-1a8c2d16","uid":"37706db8-1198-47fc-9374-6eddaa6cd847","resourceVersion":"250","generation":2,"creationTimestamp":"2026-12-07T18:20:52Z","deletionTimestamp":"2026-12-07T18:20:52Z","deletionGracePeriodSeconds":0,"labels":{"team":"x"},"annotations":{"note":"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"},"finalizers":["agents.re-cinq.com/batch-cleanup"],"managedFields":[{"manager":"unknown","operation":"Update","apiVersion":"agents.re-cinq.com/v1beta1","time":"2026-12-07T18:20:52Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:note":{}},"f:finalizers":{".":{},"v:\\"agents.re-cinq.com/batch-cleanup\\"":{}},"f:labels":{".":{},"f:team":{}}},"f:spec":{".":{},"f:parameters":{".":{},"f:topic":{}},"f:stationRef":{}}}}]}}]}\n',
};

/** The last page (empty continue; an Agent named by generateName). */
export const AGENTS_PAGE_2_PROTOBUF: CapturedAnswer = {
  status: 200,
  contentType: "application/vnd.kubernetes.protobuf",
  body: "azhzAAorCg5tZXRhLms4cy5pby92MRIZUGFydGlhbE9iamVjdE1ldGFkYXRhTGlzdBKpAgoJCgASAzI1MxoAEpsCCpgCCgthLWdlbi1tdmdzNhIGYS1nZW4tGhBjYXB0dXJlLTFhOGMyZDE2IgAqJDIwNmI2NmQ3LTYwZmEtNDMzZS1iNzE1LTQ0ZWE4MTc5ZjY4NDIDMjQ5OAFCCAiE8tvYBhAAigG0AQoHdW5rbm93bhIGVXBkYXRlGhphZ2VudHMucmUtY2lucS5jb20vdjFiZXRhMSIICITy29gGEAAyCEZpZWxkc1YxOm8KbXsiZjptZXRhZGF0YSI6eyJmOmdlbmVyYXRlTmFtZSI6e319LCJmOnNwZWMiOnsiLiI6e30sImY6cGFyYW1ldGVycyI6eyIuIjp7fSwiZjp0b3BpYyI6e319LCJmOnN0YXRpb25SZWYiOnt9fX1CABoAIgA=",
};

/** The same page in JSON. */
export const AGENTS_PAGE_2_JSON: CapturedAnswer = {
  status: 200,
  contentType: "application/json",
  body: '{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"253"},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a-gen-mvgs6","generateName":"a-gen-","namespace":"capture-1a8c2d16","uid":"206b66d7-60fa-433e-b715-44ea8179f684","resourceVersion":"249","generation":1,"creationTimestamp":"2026-12-07T18:20:52Z","managedFields":[{"manager":"unknown","operation":"Update","apiVersion":"agents.re-cinq.com/v1beta1","time":"2026-12-07T18:20:52Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{}},"f:spec":{".":{},"f:parameters":{".":{},"f:topic":{}},"f:stationRef":{}}}}]}}]}\n',
};

/** Jobs, one page: a Job with a controlling owner reference. */
export const JOBS_PAGE_PROTOBUF: CapturedAnswer = {
  status: 200,
  contentType: "application/vnd.kubernetes.protobuf",
  body: "azhzAAorCg5tZXRhLms4cy5pby92MRIZUGFydGlhbE9iamVjdE1ldGFkYXRhTGlzdBKoCQoJCgASAzI1MxoAEpoJCpcJCgdhLTEtcnVuEgAaEGNhcHR1cmUtMWE4YzJkMTYiACokNjNiMjhjOTctZGYxNS00MGE2LThkY2EtOWM0OGUwMzBiZTY0MgMyNTM4AUIICITy29gGEABaSgoiYmF0Y2gua3ViZXJuZXRlcy5pby9jb250cm9sbGVyLXVpZBIkNjNiMjhjOTctZGYxNS00MGE2LThkY2EtOWM0OGUwMzBiZTY0WicKHGJhdGNoLmt1YmVybmV0ZXMuaW8vam9iLW5hbWUSB2EtMS1ydW5aNgoOY29udHJvbGxlci11aWQSJDYzYjI4Yzk3LWRmMTUtNDBhNi04ZGNhLTljNDhlMDMwYmU2NFoTCghqb2ItbmFtZRIHYS0xLXJ1bmpSCgVBZ2VudBoDYS0xIiRlMzBmZjcwMC01ZjIyLTQ0NTktOTA4NS1hNmYyNDZlMGM3M2IqGmFnZW50cy5yZS1jaW5xLmNvbS92MWJldGExMAE4AYoBqgEKF2t1YmUtY29udHJvbGxlci1tYW5hZ2VyEgZVcGRhdGUaCGJhdGNoL3YxIggIhPLb2AYQADIIRmllbGRzVjE6YQpfeyJmOnN0YXR1cyI6eyJmOmNvbmRpdGlvbnMiOnt9LCJmOnJlYWR5Ijp7fSwiZjp0ZXJtaW5hdGluZyI6e30sImY6dW5jb3VudGVkVGVybWluYXRlZFBvZHMiOnt9fX1CBnN0YXR1c4oB+QQKB3Vua25vd24SBlVwZGF0ZRoIYmF0Y2gvdjEiCAiE8tvYBhAAMghGaWVsZHNWMTrFBArCBHsiZjptZXRhZGF0YSI6eyJmOm93bmVyUmVmZXJlbmNlcyI6eyIuIjp7fSwiazp7XCJ1aWRcIjpcImUzMGZmNzAwLTVmMjItNDQ1OS05MDg1LWE2ZjI0NmUwYzczYlwifSI6e319fSwiZjpzcGVjIjp7ImY6YmFja29mZkxpbWl0Ijp7fSwiZjpjb21wbGV0aW9uTW9kZSI6e30sImY6Y29tcGxldGlvbnMiOnt9LCJmOm1hbnVhbFNlbGVjdG9yIjp7fSwiZjpwYXJhbGxlbGlzbSI6e30sImY6cG9kUmVwbGFjZW1lbnRQb2xpY3kiOnt9LCJmOnN1c3BlbmQiOnt9LCJmOnRlbXBsYXRlIjp7ImY6c3BlYyI6eyJmOmNvbnRhaW5lcnMiOnsiazp7XCJuYW1lXCI6XCJjXCJ9Ijp7Ii4iOnt9LCJmOmltYWdlIjp7fSwiZjppbWFnZVB1bGxQb2xpY3kiOnt9LCJmOm5hbWUiOnt9LCJmOnJlc291cmNlcyI6e30sImY6dGVybWluYXRpb25NZXNzYWdlUGF0aCI6e30sImY6dGVybWluYXRpb25NZXNzYWdlUG9saWN5Ijp7fX19LCJmOmRuc1BvbGljeSI6e30sImY6cmVzdGFydFBvbGljeSI6e30sImY6c2NoZWR1bGVyTmFtZSI6e30sImY6c2VjdXJpdHlDb250ZXh0Ijp7fSwiZjp0ZXJtaW5hdGlvbkdyYWNlUGVyaW9kU2Vjb25kcyI6e319fX19QgAaACIA",
};

/** The same page in JSON. */
export const JOBS_PAGE_JSON: CapturedAnswer = {
  status: 200,
  contentType: "application/json",
  body: '{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"253"},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a-1-run","namespace":"capture-1a8c2d16","uid":"63b28c97-df15-40a6-8dca-9c48e030be64","resourceVersion":"253","generation":1,"creationTimestamp":"2026-12-07T18:20:52Z","labels":{"batch.kubernetes.io/controller-uid":"63b28c97-df15-40a6-8dca-9c48e030be64","batch.kubernetes.io/job-name":"a-1-run","controller-uid":"63b28c97-df15-40a6-8dca-9c48e030be64","job-name":"a-1-run"},"ownerReferences":[{"apiVersion":"agents.re-cinq.com/v1beta1","kind":"Agent","name":"a-1","uid":"e30ff700-5f22-4459-9085-a6f246e0c73b","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"batch/v1","time":"2026-12-07T18:20:52Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{},"f:ready":{},"f:terminating":{},"f:uncountedTerminatedPods":{}}},"subresource":"status"},{"manager":"unknown","operation":"Update","apiVersion":"batch/v1","time":"2026-12-07T18:20:52Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:ownerReferences":{".":{},"k:{\\"uid\\":\\"e30ff700-5f22-4459-9085-a6f246e0c73b\\"}":{}}},"f:spec":{"f:backoffLimit":{},"f:completionMode":{},"f:completions":{},"f:manualSelector":{},"f:parallelism":{},"f:podReplacementPolicy":{},"f:suspend":{},"f:template":{"f:spec":{"f:containers":{"k:{\\"name\\":\\"c\\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}}]}}]}\n',
};

/** A GET of a missing Job with Accept: application/vnd.kubernetes.protobuf: a protobuf Status. */
export const JOB_NOT_FOUND_PROTOBUF: CapturedAnswer = {
  status: 404,
  contentType: "application/vnd.kubernetes.protobuf",
  body: "azhzAAoMCgJ2MRIGU3RhdHVzElQKBgoAEgAaABIHRmFpbHVyZRobam9icy5iYXRjaCAibm9wZSIgbm90IGZvdW5kIghOb3RGb3VuZCoXCgRub3BlEgViYXRjaBoEam9icygAMgAwlAMaACIA",
};

/** A LIST of Agents in plain protobuf (no as=): 406, a protobuf Status (custom resources have no protobuf form). */
export const AGENTS_PLAIN_PROTOBUF_406: CapturedAnswer = {
  status: 406,
  contentType: "application/vnd.kubernetes.protobuf",
  body: "azhzAAoMCgJ2MRIGU3RhdHVzEpkBCgYKABIAGgASB0ZhaWx1cmUadG9ubHkgdGhlIGZvbGxvd2luZyBtZWRpYSB0eXBlcyBhcmUgYWNjZXB0ZWQ6IGFwcGxpY2F0aW9uL2pzb24sIGFwcGxpY2F0aW9uL3lhbWwsIGFwcGxpY2F0aW9uL3ZuZC5rdWJlcm5ldGVzLnByb3RvYnVmIg1Ob3RBY2NlcHRhYmxlMJYDGgAiAA==",
};

/** The poll's Accept (protobuf, then JSON) with a continue token older than an etcd compaction: a JSON Status. */
export const EXPIRED_CONTINUE: CapturedAnswer = {
  status: 410,
  contentType: "application/json",
  body: '{\n  "kind": "Status",\n  "apiVersion": "v1",\n  "metadata": {\n    "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiYS0yXHUwMDAwIn0"\n  },\n  "status": "Failure",\n  "message": "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",\n  "reason": "Expired",\n  "code": 410\n}',
};
