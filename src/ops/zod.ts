/**
 * The one import of zod, pinned here rather than through an import map, so that a checkout
 * of this package used by path from another project (see the README) resolves it without
 * that project mapping "zod": zod 4 changed the error-map API this package uses.
 *
 * @module
 */

export { z } from "npm:zod@^3.25.76";
