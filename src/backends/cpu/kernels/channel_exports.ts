/**
 * The channel kernels (BatchNorm family, GroupNorm and their fused activations:
 * src/backends/cpu/wasm/channel_*.wat) as TypeScript sees them: the signatures of their exports,
 * per (n, c) row or per pixel block (channel_stages.ts) and per run of rows (channel_units.ts).
 * Declared apart from the stages that call them so that the instance's type (wasm_instance.ts)
 * and its callers do not import each other.
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

/**
 * The channel kernels' exports (byte addresses; dt 0 float32, 1 float16, 2 bfloat16, and in the
 * writes 3 bfloat16 with no NaN constant, 4 float16 that computes no NaN: stage_types.ts
 * KernelCode).
 */
export interface ChannelExports {
  /** (sum, m2) of `rows` runs of one channel, as float64 at `out`. */
  bn_stats_rows(x: number, xs: number, inner: number, dt: number, rows: number, out: number): void;
  /** (sum(dy), sum(dy * (x - mean))) of `rows` runs of one channel, as float64 at `out`. */
  bn_sums_rows(
    dy: number,
    dys: number,
    x: number,
    xs: number,
    inner: number,
    dt: number,
    rows: number,
    mean: number,
    out: number,
  ): void;
  /** y = (x - k0) * k1 + k2 over `rows` runs. */
  bn_norm_rows(
    x: number,
    xs: number,
    o: number,
    os: number,
    inner: number,
    dt: number,
    rows: number,
    k0: number,
    k1: number,
    k2: number,
  ): void;
  /** gi = ((dy - k2) - (x - k0) * k1) * k3 over `rows` runs. */
  bn_grad_rows(
    dy: number,
    dys: number,
    x: number,
    xs: number,
    o: number,
    os: number,
    inner: number,
    dt: number,
    rows: number,
    k0: number,
    k1: number,
    k2: number,
    k3: number,
  ): void;
  /** gi = dy * k0 over `rows` runs. */
  bn_scale_rows(
    dy: number,
    dys: number,
    o: number,
    os: number,
    inner: number,
    dt: number,
    rows: number,
    k0: number,
  ): void;
  /**
   * Per-channel (sum, m2) of `pix` pixels into float64 arrays at o1, o2 (scratch at acc);
   * `cached` 1 when the data is expected in the caches (the same bits).
   */
  bn_stats_pix(
    x: number,
    C: number,
    dt: number,
    pix: number,
    o1: number,
    o2: number,
    acc: number,
    cached: number,
  ): void;
  /**
   * Per-channel sums of `pix` pixels (float32 means at k) into float64 arrays at o1, o2;
   * `cached` 1 when the data is expected in the caches (the same bits).
   */
  bn_sums_pix(
    dy: number,
    x: number,
    C: number,
    dt: number,
    pix: number,
    k: number,
    o1: number,
    o2: number,
    acc: number,
    cached: number,
  ): void;
  /** The normalize write of `pix` pixels, float32 constants at k interleaved per four channels. */
  bn_norm_pix(x: number, o: number, C: number, dt: number, pix: number, k: number): void;
  /** The gradient write of `pix` pixels. */
  bn_grad_pix(
    dy: number,
    x: number,
    o: number,
    C: number,
    dt: number,
    pix: number,
    k: number,
  ): void;
  /** The scale write of `pix` pixels. */
  bn_scale_pix(dy: number, o: number, C: number, dt: number, pix: number, k: number): void;
  /** y = g / (1 + exp(g * k3)), g = (x - k0) * k1 + k2, over `rows` runs (channel_swish.wat). */
  bn_swish_rows(
    x: number,
    xs: number,
    o: number,
    os: number,
    inner: number,
    dt: number,
    rows: number,
    k0: number,
    k1: number,
    k2: number,
    k3: number,
  ): void;
  /** The swish write of `pix` pixels, four float32 constants a channel at k as bn_grad_pix's. */
  bn_swish_pix(x: number, o: number, C: number, dt: number, pix: number, k: number): void;
  /**
   * GroupNormSwishGrad's sum(dYNew), sum(xhat * dYNew) of `rows` runs (channel_swish_grad.wat):
   * six constants, `out`, then the dYNew cache's row 0 and row stride in bytes (0, 0: none).
   */
  gs_sums_rows(
    dy: number,
    dys: number,
    x: number,
    xs: number,
    inner: number,
    dt: number,
    rows: number,
    ...rest: [number, number, number, number, number, number, number, number, number]
  ): void;
  /** GroupNormSwishGrad's dx write of `rows` runs, nine constants (channel_swish_grad.wat). */
  gs_grad_rows(
    dy: number,
    dys: number,
    x: number,
    xs: number,
    o: number,
    os: number,
    inner: number,
    dt: number,
    rows: number,
    ...k: [number, number, number, number, number, number, number, number, number]
  ): void;
  /**
   * GroupNormSwishGrad's dx write of `rows` runs from the dYNew gs_sums_rows kept (row r at
   * c + r * cs) and x; constants k0, k1, k6, k7, k8 of gs_grad_rows's nine.
   */
  gs_grad_cached_rows(
    c: number,
    cs: number,
    x: number,
    xs: number,
    o: number,
    os: number,
    inner: number,
    dt: number,
    rows: number,
    k0: number,
    k1: number,
    k6: number,
    k7: number,
    k8: number,
  ): void;
}

/**
 * The arguments of a units write that reads one tensor (normalize and swish: x; scale: dy):
 * its row 0 and the bytes between consecutive rows, the output's, elements per row, dtype code,
 * rows, and the byte address of the rows' float64 constants (row u's at k + 32u).
 */
type UnitsWrite = [
  input: number,
  inputus: number,
  o: number,
  ous: number,
  inner: number,
  dt: number,
  units: number,
  k: number,
];

/** The units kernels' exports (byte addresses; dt as in {@linkcode ChannelExports}). */
export interface ChannelUnitsExports {
  /** Per row u of `units` rows `xus` bytes apart: (sum, m2) as float64 at out + 16u. */
  bn_stats_units(
    x: number,
    xus: number,
    inner: number,
    dt: number,
    units: number,
    out: number,
  ): void;
  /** Per row u: (sum(dy), sum(dy * (x - means[u]))) as float64 at out + 16u. */
  bn_sums_units(
    dy: number,
    dyus: number,
    x: number,
    xus: number,
    inner: number,
    dt: number,
    units: number,
    means: number,
    out: number,
  ): void;
  /** The normalize write of row u with its float64 constants at k + 32u. */
  bn_norm_units(...args: UnitsWrite): void;
  /**
   * The gradient write of row u with its float64 constants at k + 32u: dy's row 0 and the bytes
   * between its rows, then a units write's arguments (its input x).
   */
  bn_grad_units(dy: number, dyus: number, ...write: UnitsWrite): void;
  /** The swish write of row u with its float64 constants at k + 32u. */
  bn_swish_units(...args: UnitsWrite): void;
  /** The scale write of row u with its float64 constant at k + 32u. */
  bn_scale_units(...args: UnitsWrite): void;
}
