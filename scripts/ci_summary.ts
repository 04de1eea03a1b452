/**
 * Prints `N passed, N failed` from a Deno JUnit report (each test step counts as a test case),
 * preceded by each failed case's file, name and the first lines of its message, so that a log
 * whose tail alone survives still names what failed. Exits non-zero when the report is missing,
 * holds no test, or has a failure.
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
  if (/<failure\b|<error\b/.test(c)) {
    failed++;
    console.log(describeFailure(c));
  } else if (/<skipped\b/.test(c)) skipped++;
}
const passed = cases.length - failed - skipped;
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
Deno.exit(failed > 0 || cases.length === 0 ? 1 : 0);

/** One failed case as `FAILED <classname> > <name>` and up to ten lines of its message. */
function describeFailure(testcase: string): string {
  const attr = (name: string) =>
    unescapeXml(testcase.match(new RegExp(`\\b${name}="([^"]*)"`))?.[1] ?? "?");
  const body = testcase.match(/<(?:failure|error)\b[^>]*>([\s\S]*?)<\/(?:failure|error)>/)?.[1] ??
    testcase.match(/<(?:failure|error)\b[^>]*message="([^"]*)"/)?.[1] ?? "";
  const lines = unescapeXml(body).split("\n").filter((l) => l.trim() !== "").slice(0, 10);
  return [`FAILED ${attr("classname")} > ${attr("name")}`, ...lines.map((l) => `  ${l}`)].join(
    "\n",
  );
}

/** The five predefined XML entities and numeric references, decoded. */
function unescapeXml(text: string): string {
  return text.replace(/&(lt|gt|quot|apos|amp|#\d+|#x[0-9a-f]+);/gi, (_, e: string) => {
    const named: Record<string, string> = { lt: "<", gt: ">", quot: '"', apos: "'", amp: "&" };
    if (e[0] !== "#") return named[e.toLowerCase()];
    return String.fromCodePoint(
      e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : +e.slice(1),
    );
  });
}
