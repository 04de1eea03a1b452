/**
 * The oracle's InstanceNorm in the kernel contract: aclnnInstanceNorm's y, mean and variance
 * from instanceNorm64 (tests/oracle/instance_norm.ts), each rounded once into its output.
 *
 * @module
 */

import type { InstanceNormPlan, InstanceNormTensors } from "../../../src/backends/types.ts";
import { instanceNorm64 } from "../instance_norm.ts";
import { read, write } from "./io.ts";

/** aclnnInstanceNorm: y in x's layout, mean and variance per (n, c). */
export function instanceNorm(plan: InstanceNormPlan, t: InstanceNormTensors): void {
  const r = instanceNorm64(
    read(t.x),
    t.x.shape,
    plan.channelsLast,
    read(t.gamma),
    read(t.beta),
    plan.eps,
  );
  write(t.y, r.y);
  write(t.mean, r.mean);
  write(t.variance, r.variance);
}
