/**
 * Prints `N passed, N failed` from a Deno JUnit report (each test step counts as a test case).
 * Exits non-zero when the report is missing, holds no test, or has a failure.
 *
 * @module
 */

const path = Deno.args[0] ?? "build/junit.xml";
let xml: string;
try {
  xml = await Deno.readTextFile(path);
} catch {
  console.log(`no test report at ${path}`);
  console.log("0 passed, 1 failed");
  Deno.exit(1);
}
// A testcase either self-closes (passed) or contains <failure> / <skipped>.
const cases = xml.match(/<testcase\b[^>]*?(\/>|>[\s\S]*?<\/testcase>)/g) ?? [];
let failed = 0;
let skipped = 0;
for (const c of cases) {
  if (/<failure\b|<error\b/.test(c)) failed++;
  else if (/<skipped\b/.test(c)) skipped++;
}
const passed = cases.length - failed - skipped;
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
Deno.exit(failed > 0 || cases.length === 0 ? 1 : 0);
