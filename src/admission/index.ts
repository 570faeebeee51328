export { type MayRead, type ReviewUser, subjectAccessReviewer } from "./access.js";
export type { AdmissionChecks } from "./lookups.js";
export { lookupLimits, reviewWarnings } from "./lookups.js";
export { allowedReview, kindToCheck, parseReview } from "./review.js";
export { ADMISSION_PATH, type AdmissionServer, startAdmissionServer } from "./server.js";
export type { TlsFiles } from "./tls.js";
