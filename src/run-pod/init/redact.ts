/**
 * Keeping credentials out of the init's log (docs/run-pod.md#the-init step 4): a URL's userinfo is never
 * printed, and an http(s) clone URL loses it before git ever sees it.
 */

/** Replaces the userinfo of every `scheme://user[:pass]@` in `text` with `<redacted>@`. */
export function redactUrlCredentials(text: string): string {
  return text.replace(/([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^\s/@]+@/g, "$1<redacted>@");
}

/**
 * An http(s) URL without its userinfo (credentials come from the credential helper instead);
 * anything else (ssh, scp form, a local path) is returned unchanged, so an ssh login stays.
 */
export function stripHttpUserinfo(url: string): string {
  if (!/^https?:\/\//i.test(url)) return url;
  try {
    const parsed = new URL(url);
    if (parsed.username === "" && parsed.password === "") return url;
    parsed.username = "";
    parsed.password = "";
    return parsed.toString();
  } catch {
    // Not parseable as a URL: still never let userinfo through.
    return url.replace(/^(https?:\/\/)[^/@]*@/i, "$1");
  }
}
