/**
 * The README's recipe for using a checkout of this package from another Deno project, without
 * JSR: a fresh project whose deno.json maps "@aclnn/norm" to the checkout's entry points runs
 * an operator on the CPU backend with no permission flags. zod is pinned inside the package
 * (src/ops/zod.ts), so the project needs no mapping for it.
 *
 * @module
 */

import assert from "node:assert/strict";

const checkout = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

Deno.test("use by path: another project imports the checkout through its import map", async () => {
  // One fixed directory (made afresh): deno check's cache, keyed by the modules' contents and
  // paths, then holds across runs while the checkout does not change (a temporary name made
  // every run check the whole library again, seconds of type checking).
  const project = `${checkout}/build/use_by_path_app`;
  await Deno.remove(project, { recursive: true }).catch(() => {});
  await Deno.mkdir(project, { recursive: true });
  try {
    // Exactly the README's deno.json, with the checkout's path filled in.
    await Deno.writeTextFile(
      `${project}/deno.json`,
      JSON.stringify(
        {
          imports: {
            "@aclnn/norm": `${checkout}/mod.ts`,
            "@aclnn/norm/ascend": `${checkout}/ascend.ts`,
            "@aclnn/norm/backends": `${checkout}/backends.ts`,
          },
        },
        null,
        2,
      ),
    );
    await Deno.writeTextFile(
      `${project}/main.ts`,
      `import { batchNormStats, Tensor } from "@aclnn/norm";
const { mean } = batchNormStats({ input: Tensor.fromArray([1, 2, 3, 4], [2, 2]) });
console.log(JSON.stringify(mean.toArray()));
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "main.ts"],
      cwd: project,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    assert.equal(new TextDecoder().decode(out.stdout).trim(), "[2,3]");
    // The type check passes too (deno check of the project).
    const check = await new Deno.Command(Deno.execPath(), {
      args: ["check", "main.ts"],
      cwd: project,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(check.code, 0, new TextDecoder().decode(check.stderr));
  } finally {
    await Deno.remove(project, { recursive: true });
  }
});
