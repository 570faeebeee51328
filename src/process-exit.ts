/**
 * The explicit exit of a command-line program (`kubectl agent`, the run pod's programs), shared so
 * both keep the same guarantee.
 */

/**
 * Exits with `code` once what was written to stdout and stderr has been handed to the OS, even if
 * a handle (a keep-alive socket, a timer) is still open: a program's returned code is the contract,
 * not an empty event loop. A bare `process.exit` would drop what a pipe had not yet taken.
 */
export function exitAfterFlush(code: number): void {
  process.exitCode = code;
  let pending = 2;
  const flushed = () => {
    pending -= 1;
    if (pending === 0) process.exit(code);
  };
  process.stdout.write("", flushed);
  process.stderr.write("", flushed);
}
