/**
 * The tasks of deno.json that run more than one command (the software CANN's build first, or
 * the checks in turn) or whose command has no usage of its own (`deno test`, `deno bench`):
 * `--help` prints the task's usage and runs nothing; otherwise the commands run in turn, as the
 * task once wrote them with `&&`, with the task's arguments appended to the last one (`deno task
 * test --junit-path=build/junit.xml` passes it to `deno test`), and the first failure's exit
 * status ends the task.
 *
 * ```sh
 * deno run --allow-run scripts/task.ts <task> [arguments...]
 * ```
 *
 * @module
 */

import "./require_deno.ts";
import { usageError } from "./cli.ts";

/** One task: its usage and its commands (arguments of `deno`). */
interface Task {
  /** What `--help` prints. */
  readonly usage: string;
  /** The commands in turn; the task's arguments go to the last. */
  readonly steps: readonly (readonly string[])[];
  /** Environment of the last command. */
  readonly env?: Readonly<Record<string, string>>;
  /** Whether the task takes arguments (otherwise any is refused, exit 2). */
  readonly takesArgs: boolean;
  /** Whether `--help` goes to the last command (a script with its own usage), alone. */
  readonly ownHelp?: boolean;
}

const BUILD_SIM = ["task", "build:sim"];
/** bench:syncbn's permissions: the ranks it spawns, their rendezvous. */
const RUN_NET = [
  "--allow-ffi",
  "--allow-env",
  "--allow-read",
  "--allow-run",
  "--allow-net=127.0.0.1",
];

/** A task that builds the software CANN, then runs task `base` with `--sim`. */
function onSim(name: string, base: string): Task {
  return {
    usage: `usage: deno task ${name} [options of deno task ${base}]
Builds the software CANN into build/sim (deno task build:sim, needs cc), then runs
deno task ${base} --sim on it with the options given (deno task ${base} --help
lists them).`,
    steps: [BUILD_SIM, ["task", base, "--sim"]],
    takesArgs: true,
  };
}

/**
 * A task that builds the software CANN, then runs `script` with `flags` (permissions) and
 * `scriptArgs`; `--help` goes to the script, which has its own usage.
 */
function afterSim(script: string, flags: readonly string[], scriptArgs: string[] = []): Task {
  return {
    usage: "",
    steps: [BUILD_SIM, ["run", ...flags, script, ...scriptArgs]],
    takesArgs: true,
    ownHelp: true,
  };
}

const TASKS: Readonly<Record<string, Task>> = {
  test: {
    usage: `usage: deno task test [deno test options] [files or folders...]
Builds the software CANN into build/sim (deno task build:sim, needs cc), then runs every test
(or those given) with the permissions they need. Other arguments go to deno test, e.g.
  deno task test tests/ops/                      the tests of one folder
  deno task test --filter "layer norm"           the tests whose name matches
  deno task test --junit-path=build/junit.xml    a JUnit report (as .ci/run writes it)
The whole suite runs in two deno test processes at once, a folder of tests/ at a time each
(scripts/test_lanes.ts; DENO_JOBS=1: one deno test), unless files, folders or options other
than --reporter, --junit-path, --filter, --fail-fast and --quiet are given.`,
    steps: [BUILD_SIM, [
      "run",
      "--allow-run",
      "--allow-read",
      "--allow-write",
      "--allow-env=DENO_JOBS",
      "scripts/test_lanes.ts",
    ]],
    takesArgs: true,
  },
  "test:props": {
    usage: `usage: deno task test:props [deno test options]
Builds the software CANN, then runs the property tests (tests/properties/) with their nightly
case counts (PROPS_NIGHTLY=1). Other arguments go to deno test.`,
    steps: [BUILD_SIM, ["test", "--allow-ffi", "--allow-env", "--allow-read", "tests/properties/"]],
    env: { PROPS_NIGHTLY: "1" },
    takesArgs: true,
  },
  bench: {
    usage: `usage: deno task bench [deno bench options] [files...]
Builds the software CANN, then runs the deno bench suites (bench/*.bench.ts; NPU rows on the
software CANN). Other arguments go to deno bench, e.g. deno task bench bench/ops.bench.ts.`,
    steps: [BUILD_SIM, ["bench", "--allow-ffi", "--allow-env", "--allow-read"]],
    takesArgs: true,
  },
  check: {
    usage: `usage: deno task check
Runs the static checks in turn, stopping at the first that fails: deno fmt --check, deno lint,
build:worker --check, deno check of every folder, deno doc --lint of the
entry points, deno publish --dry-run. Takes no arguments.`,
    steps: [
      ["fmt", "--check"],
      ["lint"],
      ["task", "build:worker", "--check"],
      ["check", "mod.ts", "src/", "tests/", "bench/", "scripts/", "examples/"],
      ["doc", "--lint", "mod.ts", "ascend.ts", "backends.ts"],
      ["publish", "--dry-run", "--allow-dirty"],
    ],
    takesArgs: false,
  },
  "demo:sim": onSim("demo:sim", "demo"),
  "example:syncbn:sim": onSim("example:syncbn:sim", "example:syncbn"),
  "verify:npu:sim": onSim("verify:npu:sim", "verify:npu"),
  "bench:dispatch": afterSim("bench/dispatch.ts", [
    "--allow-ffi",
    "--allow-env",
    "--allow-read",
    "--allow-write=build",
    "--allow-run",
  ]),
  "bench:syncbn": afterSim("bench/sync_bn_hccl.ts", RUN_NET, ["--sim"]),
};

/** Runs `deno <args>` with this terminal; resolves to its exit status. */
async function deno(args: readonly string[], env?: Record<string, string>): Promise<number> {
  const root = new URL("../", import.meta.url);
  const child = new Deno.Command(Deno.execPath(), { args: [...args], cwd: root, env }).spawn();
  return (await child.status).code;
}

const [name, ...args] = Deno.args;
const task = TASKS[name];
if (task === undefined) {
  console.error(`scripts/task.ts: no task ${JSON.stringify(name)} (known: ${Object.keys(TASKS)})`);
  Deno.exit(2);
}
const given = args.filter((a) => a !== "--");
if (given.includes("--help") || given.includes("-h")) {
  if (task.ownHelp) Deno.exit(await deno([...task.steps.at(-1)!, "--help"]));
  console.log(task.usage);
  Deno.exit(0);
}
if (!task.takesArgs && given.length > 0) {
  usageError(name, `takes no arguments, got ${given.join(" ")}`);
}
for (const [i, step] of task.steps.entries()) {
  const last = i === task.steps.length - 1;
  const code = await deno(last ? [...step, ...given] : step, last ? { ...task.env } : undefined);
  if (code !== 0) Deno.exit(code);
}
