/**
 * A TCP connection to one of a destination's checked addresses: each is tried in the resolver's
 * order, each for a bounded time, and the address connected to is the one the policy checked (the
 * name is never resolved again).
 */
import { connect, type Socket } from "node:net";
import type { ResolvedAddress } from "./address-policy.js";

/** How long one address may take to accept the connection before the next is tried. */
export const CONNECT_TIMEOUT_MS = 15_000;

export interface Dialled {
  socket: Socket;
  address: string;
}

function dialOne(address: ResolvedAddress, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address.address, port, family: address.family === 6 ? 6 : 4 });
    const fail = (err: Error) => {
      socket.destroy();
      reject(err);
    };
    socket.setTimeout(timeoutMs, () => fail(new Error(`no answer within ${timeoutMs / 1000} s`)));
    socket.once("error", fail);
    socket.once("connect", () => {
      socket.setTimeout(0);
      socket.off("error", fail);
      resolve(socket);
    });
  });
}

/** Connects to the first address that accepts; rejects with the last address's error, naming it. */
export async function dial(
  addresses: readonly ResolvedAddress[],
  port: number,
  timeoutMs = CONNECT_TIMEOUT_MS,
): Promise<Dialled> {
  let last: Error = new Error("no address");
  for (const address of addresses) {
    try {
      return { socket: await dialOne(address, port, timeoutMs), address: address.address };
    } catch (err) {
      last = new Error(`${address.address}: ${(err as Error).message}`);
    }
  }
  throw last;
}
