/**
 * The output mask of the backward operators, shared by the kernel contracts of types.ts and
 * row_norm_types.ts (its own module, so that neither of the two imports the other).
 *
 * @module
 */

/** A three-entry output mask: which of the three outputs to compute. */
export type OutputMask = readonly [boolean, boolean, boolean];
