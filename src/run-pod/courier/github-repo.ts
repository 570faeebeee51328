/**
 * Which GitHub repository a delivery goes to, from TARGET_REPO or a declared repository URL (docs/decisions.md D-47:
 * GitHub only; a remote on another host fails the delivery). Pure string work.
 */

export interface GitHubRepo {
  owner: string;
  name: string;
}

const SEGMENT = /^[A-Za-z0-9_.-]+$/;

export const fullName = (r: GitHubRepo) => `${r.owner}/${r.name}`;

/** `owner/name` (as in TARGET_REPO), else undefined. A trailing `.git` is tolerated. */
export function parseOwnerName(value: string): GitHubRepo | undefined {
  const parts = value
    .trim()
    .replace(/\.git$/, "")
    .split("/");
  if (parts.length !== 2) return undefined;
  const [owner, name] = parts as [string, string];
  if (!SEGMENT.test(owner) || !SEGMENT.test(name) || owner.startsWith(".") || name.startsWith(".")) {
    return undefined;
  }
  return { owner, name };
}

/**
 * The GitHub repository a remote URL names when its host is the GitHub server's: https/http
 * (`<server>/owner/name(.git)`), `ssh://git@host/owner/name.git`, scp form `git@host:owner/name.git`
 * and the `owner/name` shorthand of resources.repos. Else a sentence saying why not.
 */
export function repoOfRemote(remote: string, serverUrl: string): GitHubRepo | { problem: string } {
  const shown = withoutUserinfo(remote);
  const shorthand = parseOwnerName(remote);
  if (shorthand && !remote.includes(":")) return shorthand;
  const server = new URL(serverUrl);
  const serverPath = server.pathname.replace(/\/+$/, "");
  let host: string;
  let path: string;
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/\/)(.+)$/.exec(remote);
  if (scp && !/^[a-z][a-z0-9+.-]*:\/\//i.test(remote)) {
    host = scp[1] as string;
    path = `/${scp[2] as string}`;
    if (host.toLowerCase() !== server.hostname.toLowerCase()) {
      return { problem: `the declared repository URL ${shown} is not on ${server.host}` };
    }
  } else {
    let url: URL;
    try {
      url = new URL(remote);
    } catch {
      return { problem: `the declared repository URL ${shown} is not a URL` };
    }
    const sameHost =
      url.protocol === "ssh:"
        ? url.hostname.toLowerCase() === server.hostname.toLowerCase()
        : url.host.toLowerCase() === server.host.toLowerCase();
    if (!sameHost) return { problem: `the declared repository URL ${shown} is not on ${server.host}` };
    path = decodeURIComponent(url.pathname);
    if (url.protocol !== "ssh:" && serverPath !== "") {
      if (!path.startsWith(`${serverPath}/`)) {
        return { problem: `the declared repository URL ${shown} is not under ${serverUrl}` };
      }
      path = path.slice(serverPath.length);
    }
  }
  const repo = parseOwnerName(path.replace(/^\/+/, "").replace(/\/+$/, ""));
  return repo ?? { problem: `the declared repository URL ${shown} does not name an owner/name repository` };
}

/** The https URL git pushes to: `<server>/owner/name.git`. */
export function pushUrl(serverUrl: string, repo: GitHubRepo): string {
  return `${serverUrl.replace(/\/+$/, "")}/${repo.owner}/${repo.name}.git`;
}

/** A URL as safe to print: http(s) userinfo (a token someone put in a remote) removed. */
export function withoutUserinfo(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, "$1");
}
