/*
 * Software CANN ("aclsim") -- the float64 working memory of the operators' runs (sim_scratch.c).
 *
 * One arena per process. sim_op_run opens a scope around each operator's run; every block handed
 * out inside it (sim_load, ops_zalloc) stays valid until the scope ends and is never freed one by
 * one. The memory is kept for the next run and grows to the largest run's demand, so a run of the
 * same size touches no fresh pages; sim_scratch_release returns it (aclFinalize). Every call is
 * made with sim_lock held (run_task holds it around sim_op_run), which is what makes one arena
 * safe for every thread and stream. Core-internal (hidden symbols of libaclsim_core.so).
 */
#ifndef ACLSIM_SIM_SCRATCH_H
#define ACLSIM_SIM_SCRATCH_H

#include <stdint.h>

/* Opens a run's scope; scopes do not nest. */
void sim_scratch_begin(void);
/* Ends the scope: every block handed out since sim_scratch_begin is released to the arena. */
void sim_scratch_end(void);
/* n doubles (at least one), uninitialised, 64-byte aligned, valid until sim_scratch_end; NULL when
 * the host is out of memory. Outside a scope the process aborts with a message. */
double *sim_scratch_doubles(int64_t n);
/* Frees the arena's memory (outside a scope); the next run allocates it again. */
void sim_scratch_release(void);

#endif
