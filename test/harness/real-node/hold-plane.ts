/**
 * Starts a plane with a real node and holds it until killed: the real-node test kills this process
 * with SIGKILL to prove the plane's watchdog takes the node off the machine (docs/real-node.md).
 * Prints `ready <state file>` once the node is Ready.
 */
import { startControlPlane } from "../cluster.js";

const plane = await startControlPlane({ realNode: true });
process.stdout.write(`ready ${plane.stateFile}\n`);
setInterval(() => {}, 60_000);
