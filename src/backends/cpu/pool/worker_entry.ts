/**
 * The entry of the pool's worker script: `deno task build:worker` bundles this module and
 * everything it imports (worker_main.ts, the job protocol, the kernels) into
 * worker_bundle.ts. A module the workers need is bundled once something here imports it.
 *
 * The modules of `kernels/` run on every thread: they import nothing that holds the calling
 * thread's state (tensors, the host heap's allocator). `deno task check` tells when the
 * bundle is stale.
 *
 * @module
 */

import { workerMain } from "./worker_main.ts";

workerMain();
