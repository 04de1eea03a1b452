/**
 * Runs the software-CANN ABI check (tests/sim/check_abi.ts) as a Deno test. Needs the
 * simulator built (`deno task build:sim`), --allow-read and --allow-ffi.
 *
 * @module
 */
import { checkAbi } from "./check_abi.ts";

Deno.test("software CANN exports exactly the cann_abi.json ABI", async () => {
  const problems = await checkAbi();
  if (problems.length) {
    throw new Error(`ABI problems:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
});
