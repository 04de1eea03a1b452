/**
 * The row norms' WebAssembly kernels as TypeScript sees them (src/backends/cpu/wasm/row_norms*.wat):
 * the signatures of their exports. Declared apart from the stages that call them
 * (row_norm_stage.ts) so that the instance's type (wasm_instance.ts) and its callers do not
 * import each other.
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

/**
 * The leading arguments of both forward kernels (ln_fwd, rms_fwd): x's and y's row 0 and row
 * stride (bytes), elements per row, dtype code, rows, epsilon.
 */
type ForwardRows = [
  x: number,
  xs: number,
  y: number,
  ys: number,
  n: number,
  dt: number,
  rows: number,
  eps: number,
];

/**
 * The row kernels' exports (byte addresses; dt: 0 float32, 1 float16, 2 bfloat16, 3 bfloat16
 * with no NaN constant, chosen by rows/row_call.ts run; per-column and per-row arrays float32).
 */
export interface RowNormExports {
  /**
   * Column sums of float32 partials at p (items of `stride` floats) as float64 at out, summed
   * in item order, for columns below cols rounded up to 2 (rows/merge_columns.ts).
   */
  rf_merge_cols(p: number, items: number, cols: number, stride: number, out: number): void;
  /** LayerNorm forward of `rows` rows: y, and each row's mean and rstd. */
  ln_fwd(...args: [...ForwardRows, w: number, b: number, mean: number, rstd: number]): void;
  /**
   * LayerNorm backward: flags 1 column partials (pw, pb: zeroed first), 2 gradInput; `scratch`
   * two rows of n rounded up to 4 float32s where a 16-bit gradInput pass keeps its first pass's
   * terms, or -1 (the rows loaded again).
   */
  ln_bwd(
    dy: number,
    dys: number,
    x: number,
    xs: number,
    gi: number,
    gis: number,
    n: number,
    dt: number,
    rows: number,
    mean: number,
    rstd: number,
    w: number,
    pw: number,
    pb: number,
    flags: number,
    scratch: number,
  ): void;
  /** RMSNorm forward: y = x * rstd * g, and each row's rstd. */
  rms_fwd(...args: [...ForwardRows, g: number, rstd: number]): void;
  /**
   * RMSNorm backward: dx, and the column partials pg (zeroed first); `scratch` as ln_bwd's (the
   * 16-bit dtypes' kept dy and x), or -1.
   */
  rms_bwd(
    dy: number,
    dys: number,
    x: number,
    xs: number,
    dx: number,
    dxs: number,
    n: number,
    dt: number,
    rows: number,
    rstd: number,
    g: number,
    pg: number,
    scratch: number,
  ): void;
  /**
   * AddRmsNorm forward: x = a + b rounded once to dt; rstd and y = (a + b) * rstd * g from
   * the float32 sum; `scratch` a row of n rounded up to 4 float32s where a 16-bit call keeps the
   * sum for y, or -1 (a and b loaded again).
   */
  add_rms_fwd(
    a: number,
    as: number,
    b: number,
    bs: number,
    x: number,
    xs: number,
    y: number,
    ys: number,
    n: number,
    dt: number,
    rows: number,
    eps: number,
    g: number,
    rstd: number,
    scratch: number,
  ): void;
  /**
   * AddLayerNorm / DeepNorm forward (row_norms_add.wat): s = alpha * a + b (+ bias) in
   * float32 into the scratch row `s`; flags 1 stores x = s rounded to dt, 2 adds the bias rows
   * at c, 4 the per-column float32 bias cb; then ln_fwd's mean, rstd and y of s.
   */
  add_ln_fwd(
    a: number,
    as: number,
    b: number,
    bs: number,
    c: number,
    cs: number,
    x: number,
    xs: number,
    y: number,
    ys: number,
    n: number,
    dt: number,
    rows: number,
    eps: number,
    alpha: number,
    flags: number,
    s: number,
    w: number,
    bb: number,
    cb: number,
    mean: number,
    rstd: number,
  ): void;
  /**
   * AddLayerNormGrad / DeepNormGrad backward (row_norms_add_grad.wat): s = alpha * a + b in
   * float32; flags 1 adds dsum (at c) to dx (at o), flags 2 stores dgx at o and alpha * dgx at
   * c; column partials pw (dgamma) and pb (dbeta), zeroed first; `scratch` as ln_bwd's (the
   * 16-bit dtypes' kept xm and g), or -1.
   */
  add_ln_bwd(
    dy: number,
    dys: number,
    a: number,
    as: number,
    b: number,
    bs: number,
    c: number,
    cs: number,
    o: number,
    os: number,
    n: number,
    dt: number,
    rows: number,
    alpha: number,
    flags: number,
    w: number,
    mean: number,
    rstd: number,
    pw: number,
    pb: number,
    scratch: number,
  ): void;
  /**
   * AddRmsNormCast forward (row_norms_cast.wat): x = a + b rounded to dt; rstd and y = (a + b)
   * * rstd * g from the float32 sum, stored as float32 at y1 and rounded to dt at y2;
   * `scratch` as add_rms_fwd's.
   */
  add_rms_cast_fwd(
    a: number,
    as: number,
    b: number,
    bs: number,
    x: number,
    xs: number,
    y1: number,
    y1s: number,
    y2: number,
    y2s: number,
    n: number,
    dt: number,
    rows: number,
    eps: number,
    g: number,
    rstd: number,
    scratch: number,
  ): void;
  /**
   * AdaLayerNorm forward (row_norms_ada.wat): ln_fwd's mean, rstd and (x - mean) * rstd * w + b,
   * then times the float32 (1 + scale) row and plus the shift row of batch (row0 + r) / seq.
   */
  ada_ln_fwd(
    ...args: [
      ...ForwardRows,
      w: number,
      b: number,
      sc: number,
      sh: number,
      row0: number,
      seq: number,
      mean: number,
      rstd: number,
    ]
  ): void;
  /**
   * AdaLayerNormBackward (row_norms_ada_grad.wat): flags 1 writes gradInput at gi; column
   * partials pw (gradWeight), pb (gradBias), zeroed first; batch partials ps (gradScale), psh
   * (gradShift), one padded row per batch the item's rows touch (slot 0: batch row0 / seq);
   * `scratch` as ln_bwd's (the 16-bit dtypes' kept g and z), or -1.
   */
  ada_ln_bwd(
    ...args: [
      dy: number,
      dys: number,
      x: number,
      xs: number,
      gi: number,
      gis: number,
      n: number,
      dt: number,
      rows: number,
      flags: number,
      w: number,
      b: number,
      sc: number,
      row0: number,
      seq: number,
      mean: number,
      rstd: number,
      pw: number,
      pb: number,
      ps: number,
      psh: number,
      scratch: number,
    ]
  ): void;
}
