/**
 * The options of the TCP rendezvous (rendezvous.ts for rank 0, rendezvous_join.ts for the
 * others), in a module of their own so that both sides import them without importing each
 * other.
 *
 * @module
 */

/** Options of the rendezvous (rendezvous.ts). */
export interface RendezvousOptions {
  /** This process's rank (0 listens). */
  readonly rank: number;
  /** The number of ranks. */
  readonly worldSize: number;
  /** Where rank 0 listens (a host name or IP address). */
  readonly masterAddr: string;
  /** The TCP port rank 0 listens on. */
  readonly masterPort: number;
  /** Milliseconds for the whole rendezvous. */
  readonly timeoutMs: number;
  /** The job's id, the same on every rank (the key of the proofs of rendezvous_auth.ts). */
  readonly jobId: string;
  /** Where rank 0 reports the connections it drops. Default: `console.warn`. */
  readonly log?: (message: string) => void;
  /** Milliseconds a connection to rank 0 has to say hello. Default: min(10000, timeoutMs). */
  readonly helloTimeoutMs?: number;
  /**
   * Connections that may wait to say hello at once; one more closes the oldest. Default: the
   * larger of 256 and 2 × worldSize.
   */
  readonly maxWaiting?: number;
}
