/** What the webhook looked up about an object's neighbours, as plain data for the pure checks. */

/** One lookup's outcome: found, known absent (404), or not known (any other failure). */
export type Lookup<T> =
  | { state: "found"; value: T }
  | { state: "missing" }
  | { state: "unknown"; error: string };

export const found = <T>(value: T): Lookup<T> => ({ state: "found", value });
export const missing: Lookup<never> = { state: "missing" };
export const unknown = (error: string): Lookup<never> => ({ state: "unknown", error });
