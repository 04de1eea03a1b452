/*
 * Software CANN ("aclsim") -- the operators' float64 scratch arena (contract: sim_scratch.h).
 *
 * A scope bumps through one kept block. A request that does not fit gets a block of its own
 * (an overflow block, freed when the scope ends); the scope's total demand then becomes the size
 * of the kept block, allocated again at once, so that the next run of that size fits in it. The
 * kept block is only written by the runs, so its pages are touched once and reused afterwards.
 */
#include "sim_scratch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define ALIGN ((size_t)64)

/* An overflow block: this header, then its data (ALIGN-aligned, as the header is ALIGN bytes). */
typedef struct Overflow {
  struct Overflow *next;
  char pad[ALIGN - sizeof(struct Overflow *)];
} Overflow;

static char *g_base;       /* the kept block (NULL: none yet) */
static size_t g_cap;       /* its size in bytes */
static size_t g_used;      /* bytes of it handed out in this scope */
static size_t g_demand;    /* bytes requested in this scope, overflow included */
static Overflow *g_spill;  /* this scope's overflow blocks */
static bool g_open;

static void misuse(const char *what) {
  fprintf(stderr, "aclsim: internal error: %s\n", what);
  abort();
}

void sim_scratch_begin(void) {
  if (g_open) misuse("sim_scratch_begin inside an open scope");
  g_open = true;
  g_used = 0;
  g_demand = 0;
}

void sim_scratch_end(void) {
  if (!g_open) misuse("sim_scratch_end without a scope");
  g_open = false;
  if (!g_spill) return;
  while (g_spill) {
    Overflow *next = g_spill->next;
    free(g_spill);
    g_spill = next;
  }
  free(g_base);
  g_base = aligned_alloc(ALIGN, g_demand);
  g_cap = g_base ? g_demand : 0;
}

double *sim_scratch_doubles(int64_t n) {
  if (!g_open) misuse("sim_scratch_doubles outside an operator's run");
  size_t count = n > 0 ? (size_t)n : 1;
  if (count > (SIZE_MAX - ALIGN * 2) / sizeof(double)) return NULL;
  size_t bytes = (count * sizeof(double) + ALIGN - 1) / ALIGN * ALIGN;
  if (g_demand > SIZE_MAX - bytes) return NULL;
  g_demand += bytes;
  if (g_base && bytes <= g_cap - g_used) {
    double *v = (double *)(g_base + g_used);
    g_used += bytes;
    return v;
  }
  Overflow *o = aligned_alloc(ALIGN, sizeof(Overflow) + bytes);
  if (!o) return NULL;
  o->next = g_spill;
  g_spill = o;
  return (double *)(o + 1);
}

void sim_scratch_release(void) {
  if (g_open) misuse("sim_scratch_release inside an operator's run");
  free(g_base);
  g_base = NULL;
  g_cap = 0;
}
