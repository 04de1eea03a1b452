/**
 * The job id of an HCCL process group's rendezvous (src/distributed/rendezvous.ts): the value
 * every rank of one job shares and a stranger does not know. Every hello to rank 0 proves it
 * (src/distributed/rendezvous_auth.ts); a connection that cannot is dropped and logged.
 *
 * Where it comes from, the first one set wins:
 * 1. the `jobId` option of `createHcclProcessGroup`;
 * 2. `$TORCHELASTIC_RUN_ID`, which torchrun gives every worker: its `--rdzv-id`, a fresh
 *    uuid4 with `--standalone`, and `none` when neither is given (pytorch
 *    torch/distributed/run.py: get_args_parser's `--rdzv-id` default, run(); the variable is
 *    set in torch/distributed/elastic/agent/server/local_elastic_agent.py, _start_workers);
 * 3. `$ACLNN_NORM_JOB_ID`, for other launchers;
 * 4. `none`, as torchrun without `--rdzv-id`: the job runs, and rank 0 warns that any process
 *    reaching its port can join (the id is known to all).
 *
 * @module
 */

import { HCCL_E_PARA, HcclError } from "../errors.ts";
import { grantedEnv } from "../tensor/env.ts";

/** The variable torchrun sets to the run's id (`--rdzv-id`). */
export const TORCHRUN_JOB_ID_ENV = "TORCHELASTIC_RUN_ID";
/** This library's variable for the job id, read when torchrun's is not set. */
export const JOB_ID_ENV = "ACLNN_NORM_JOB_ID";
/** The id when none is set: torchrun's default `--rdzv-id`. */
export const DEFAULT_JOB_ID = "none";
/** The longest job id, in UTF-16 code units. */
export const MAX_JOB_ID_LENGTH = 1024;

/** A resolved job id and where it came from (for messages). */
export interface JobId {
  /** The id. */
  readonly id: string;
  /** `jobId`, `TORCHELASTIC_RUN_ID`, `ACLNN_NORM_JOB_ID` or `default`. */
  readonly source: "jobId" | typeof TORCHRUN_JOB_ID_ENV | typeof JOB_ID_ENV | "default";
}

/**
 * The job id from `option`, else the environment, else {@linkcode DEFAULT_JOB_ID}. Throws an
 * {@linkcode HcclError} HCCL_E_PARA (1) naming `op` for an option that is not a string of
 * 1..1024 characters, or a variable longer than that (an empty variable counts as unset).
 */
export function resolveJobId(option: unknown, op: string): JobId {
  if (option !== undefined) {
    if (typeof option !== "string" || option.length === 0 || option.length > MAX_JOB_ID_LENGTH) {
      throw new HcclError(
        HCCL_E_PARA,
        `${op}: jobId must be a string of 1..${MAX_JOB_ID_LENGTH} characters, the same on ` +
          `every rank (got ${
            typeof option === "string" ? `${option.length} characters` : typeof option
          })`,
      );
    }
    return { id: option, source: "jobId" };
  }
  for (const name of [TORCHRUN_JOB_ID_ENV, JOB_ID_ENV] as const) {
    const value = grantedEnv(name);
    if (value === undefined || value === "") continue;
    if (value.length > MAX_JOB_ID_LENGTH) {
      throw new HcclError(
        HCCL_E_PARA,
        `${op}: ${name} has ${value.length} characters, more than ${MAX_JOB_ID_LENGTH}`,
      );
    }
    return { id: value, source: name };
  }
  return { id: DEFAULT_JOB_ID, source: "default" };
}

/**
 * What rank 0 should warn about `job` (undefined when nothing): the id `none` is torchrun's
 * default and this library's, known to anyone, so it keeps out only other jobs' ranks.
 */
export function jobIdWarning(job: JobId, op: string, where: string): string | undefined {
  if (job.id !== DEFAULT_JOB_ID) return undefined;
  const risk = `any process that reaches the rendezvous at ${where} can take a rank's slot ` +
    `or stop the job`;
  switch (job.source) {
    case "default":
      return `${op}: no job id is set (the jobId option, ${TORCHRUN_JOB_ID_ENV} or ` +
        `${JOB_ID_ENV}, read with --allow-env), so the ranks use "${DEFAULT_JOB_ID}": ${risk}. ` +
        `Give every rank the same unguessable id.`;
    case TORCHRUN_JOB_ID_ENV:
      return `${op}: ${TORCHRUN_JOB_ID_ENV} is "${DEFAULT_JOB_ID}" (torchrun without ` +
        `--rdzv-id): ${risk}. Start torchrun with --rdzv-id=<an unguessable id> or --standalone.`;
    default:
      return `${op}: the job id "${DEFAULT_JOB_ID}" (from ${job.source}) is known to anyone: ` +
        `${risk}. Give every rank the same unguessable id.`;
  }
}
