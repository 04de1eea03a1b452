/**
 * A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it), for tests that start
 * a rendezvous.
 */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}
