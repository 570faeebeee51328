/**
 * Whether the user a review names may read what a warning would reveal: the webhook answers
 * through the API server to whoever wrote the object, so a warning tells that user only what
 * they could read themselves (docs/security.md#admission-webhook). Asked of the API server with a
 * LocalSubjectAccessReview for the review's userInfo.
 */
import type { KubeClient } from "../kube/client.js";

/** The AdmissionRequest's userInfo (authentication.k8s.io/v1 UserInfo). */
export interface ReviewUser {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface ReadAttributes {
  group: string;
  resource: string;
  name: string;
}

export type MayRead = (
  user: ReviewUser | undefined,
  what: ReadAttributes,
  signal: AbortSignal,
) => Promise<boolean>;

/** A review without a user names nobody who may read anything. */
export const namesNobody = (user: ReviewUser | undefined): boolean =>
  !user || (!user.username && (user.groups ?? []).length === 0);

/** `get` on the object, asked of the API server; throws when the API server cannot answer. */
export function subjectAccessReviewer(client: Pick<KubeClient, "request">, namespace: string): MayRead {
  return async (user, what, signal) => {
    if (!user || namesNobody(user)) return false;
    const answer = await client.request<{ status?: { allowed?: boolean } }>(
      "POST",
      `/apis/authorization.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/localsubjectaccessreviews`,
      {
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "LocalSubjectAccessReview",
          metadata: { namespace },
          spec: {
            ...(user.username ? { user: user.username } : {}),
            ...(user.uid ? { uid: user.uid } : {}),
            ...(user.groups ? { groups: user.groups } : {}),
            ...(user.extra ? { extra: user.extra } : {}),
            resourceAttributes: { namespace, verb: "get", ...what },
          },
        },
        signal,
      },
    );
    return answer?.status?.allowed === true;
  };
}
