/**
 * The CPU pool's worker script (scripts/build_worker.ts): the committed
 * src/backends/cpu/pool/worker_bundle.ts is the bundle of worker_entry.ts now; a stale or
 * missing one is reported; the script is self-contained JavaScript that starts the message
 * loop, and the kernels' private helpers reach the workers without being exported.
 * The workers running it are tested in pool_*.test.ts (this folder).
 */

import assert from "node:assert/strict";
import {
  bundleWorker,
  staleWorkerBundle,
  WORKER_BUNDLE,
  workerBundleModule,
} from "../../scripts/build_worker.ts";
import { WORKER_SCRIPT } from "../../src/backends/cpu/pool/worker_bundle.ts";

Deno.test("worker bundle: the committed module is the bundle of worker_entry.ts (deno task build:worker)", async () => {
  assert.equal(await staleWorkerBundle(), undefined);
});

Deno.test("worker bundle: the same sources bundle to the same text", async () => {
  const [a, b] = [await bundleWorker(), await bundleWorker()];
  assert.equal(a, b);
  // The module holds the script as it is: the template literal's escapes undo themselves.
  const text = await workerBundleModule(a);
  const url = `data:application/typescript,${encodeURIComponent(text)}`;
  const module = await import(url);
  assert.equal(module.WORKER_SCRIPT, a);
});

Deno.test("worker bundle: a stale or missing module is reported", async () => {
  const root = new URL("../../build/worker_bundle_test/", import.meta.url);
  const at = new URL(WORKER_BUNDLE, root);
  await Deno.mkdir(new URL(".", at), { recursive: true });
  try {
    assert.equal(await staleWorkerBundle(root), "missing");
    const committed = await Deno.readTextFile(new URL(`../../${WORKER_BUNDLE}`, import.meta.url));
    await Deno.writeTextFile(at, committed.replace("workerMain();", "workerMain(); // edited"));
    assert.match((await staleWorkerBundle(root))!, /^first difference at line \d+: /);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("worker bundle: self-contained JavaScript that starts the worker's loop", () => {
  assert.doesNotMatch(WORKER_SCRIPT, /^\s*(import|export)\b/m, "no module syntax left");
  assert.match(WORKER_SCRIPT, /\nworkerMain\(\);\n$/);
  assert.match(WORKER_SCRIPT, /function runStage\(/);
  // Parses as a script (no TypeScript left, no duplicate declarations); not run here.
  new Function(WORKER_SCRIPT);
});
