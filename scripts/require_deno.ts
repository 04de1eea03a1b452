/**
 * The minimum Deno this package supports, checked when a task starts (the demo, the doctor,
 * the simulator build and the benchmarks import this module first): older releases fail in
 * confusing ways (Float16Array, `using`, the test sanitizers, node:v8), so say it in one line.
 *
 * @module
 */

/** The oldest Deno release the test suite passes on (also tested: 2.9.6). */
export const MIN_DENO = "2.8.0";

function parts(version: string): number[] {
  return version.split(/[.-]/).slice(0, 3).map((p) => Number.parseInt(p, 10) || 0);
}

/** Whether `version` is at least `minimum` (major.minor.patch). */
export function atLeast(version: string, minimum: string): boolean {
  const a = parts(version);
  const b = parts(minimum);
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i];
  return true;
}

if (!atLeast(Deno.version.deno, MIN_DENO)) {
  console.error(
    `@aclnn/norm needs Deno ${MIN_DENO} or newer; this is Deno ${Deno.version.deno}. ` +
      `Upgrade (deno upgrade), or run it through npm: npx -y deno@2.9.6 task ...`,
  );
  Deno.exit(1);
}
