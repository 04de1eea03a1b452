;; The row kernels' helpers: their sums, statistics and stores (row_norms.wat and the other
;; row_norms_*.wat files use them), spliced into kernels.wat's module by the build
;; (scripts/build_wasm.ts, first of its list, before its dtype specialisation): they use
;; kernels.wat's codecs ($ld4, $shift, $bits4) and get the same dispatch by `$dt` and the same
;; inlining. row_norms.wat states the layout of the rows they read.
;;
;; Sums (as CANN's kernels compute, hicann/ops-nn norm/*: float32 arithmetic): row sums
;; accumulate float32 lanes over blocks of 1024 elements (four vectors per step, sixteen
;; lanes); each block's lanes are widened and added in float64, in a fixed order, so a sum
;; depends on the row (and its dtype) alone. The statistics' sums ($rf_sums2) take sixteen
;; consecutive elements a step for every dtype. The sums of squares ($rf_squares, RMSNorm's)
;; take them as two pairs (kernels.wat $pair_lo): for float32 and float16 the same sixteen in
;; order, for bfloat16 each pair the even and then the odd elements of eight, so a bfloat16
;; row's lanes add other elements than the same values' float32 row and its rstd may differ in
;; the last bit (bfloat16 rms_fwd 0.91x its time). Pairs in $rf_sums2 too took bfloat16
;; batchNorm statistics to 0.88x, but made add_ln_fwd's dtype copies too large for Binaryen to
;; inline into its export (float32 add_ln_fwd 1.32x: bench/RESULTS.md, nineteenth session). A row's mean and variance come from one pass of sums of the
;; differences from a pivot near the mean and of their squares ($rf_moments; two passes, about
;; the first element and then the mean, $rf_mean64 and $rf_dev2, where the pivot is far from
;; the mean), so that float32 lanes do not drift on data far from zero (a constant row of
;; 10000.3 had a mean 7 ulps off, a variance of 4.7e-5 instead of 0 and outputs of -0.21
;; instead of 0). The per-row scalars (mean, rstd, the backward's means) are finished in
;; float64 from those sums and rounded once to float32, the precision the element-wise
;; formulas use them in.
(module
  ;; Elements per float32 block of a row sum: each of the 16 lanes adds at most 64 elements.
  ;; (The literal 1024 below.)

  ;; The lanes of a + b + c + d, widened and added in float64: ((a + b) + (c + d)) in float32
  ;; lanes, then (lane 0 + lane 2) + (lane 1 + lane 3) in float64.
  (func $rf_fold (param $a v128) (param $b v128) (param $c v128) (param $d v128) (result f64)
    (local $s v128)
    (local $w v128)
    (local.set $s
      (f32x4.add (f32x4.add (local.get $a) (local.get $b)) (f32x4.add (local.get $c) (local.get $d))))
    (local.set $w
      (f64x2.add
        (f64x2.promote_low_f32x4 (local.get $s))
        (f64x2.promote_low_f32x4
          (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $s) (local.get $s)))))
    (f64.add (f64x2.extract_lane 0 (local.get $w)) (f64x2.extract_lane 1 (local.get $w))))

  ;; Lanes below k (k >= 1) all ones, the others zero: the mask of a row's last vector.
  (func $rf_mask (param $k i32) (result v128)
    (i32x4.gt_s (i32x4.splat (local.get $k)) (v128.const i32x4 0 1 2 3)))

  ;; v^2, lane by lane: the term of a sum of squares ($rf_squares, $rf_sums2).
  (func $rf_sq (param $v v128) (result v128)
    (f32x4.mul (local.get $v) (local.get $v)))

  ;; The lanes of v of magnitude below 2^100, the others (and NaN) 0: the pivots that a mean's
  ;; terms are taken about ($rf_mean64; channel_pixel_blocks.wat's runs). A difference from such
  ;; a pivot cannot overflow (it rounds to the element itself near float32's largest values),
  ;; and an Inf or NaN element reaches the sum as it did without one.
  (func $rf_pivot4 (param $v v128) (result v128)
    (v128.and (local.get $v)
      (f32x4.lt (f32x4.abs (local.get $v)) (v128.const f32x4 0x1p100 0x1p100 0x1p100 0x1p100))))

  ;; The mean of the n (at least 1) elements at p (dt), in float64: the first element (the
  ;; pivot, $rf_pivot4) plus the mean of the differences from it ($rf_sums2's first sum).
  ;; Constant data then sums to 0 exactly, and data far from zero sums its spread instead of
  ;; its magnitude.
  (func $rf_mean64 (param $p i32) (param $n i32) (param $dt i32) (result f64)
    (local $pv f32)
    (local.set $pv
      (f32x4.extract_lane 0 (call $rf_pivot4 (call $ld4 (local.get $p) (local.get $dt)))))
    (drop
      (call $rf_sums2 (local.get $p) (local.get $n) (local.get $dt) (f32x4.splat (local.get $pv))))
    (f64.add (f64.promote_f32 (local.get $pv))
      (f64.div (global.get $rf_second) (f64.convert_i32_u (local.get $n)))))

  ;; q, a sum of n squared deviations taken about a value d away from the mean, less the
  ;; n d^2 that adds (never below 0; NaN stays NaN): the squared deviations from the mean.
  (func $rf_recentre (param $q f64) (param $n f64) (param $d f64) (result f64)
    (f64.max (f64.const 0)
      (f64.sub (local.get $q) (f64.mul (local.get $n) (f64.mul (local.get $d) (local.get $d))))))

  ;; The sum of the squared deviations of the n elements at p (dt) from their mean `mean`
  ;; ($rf_mean64), taken about m, that mean rounded to float32 ($rf_sums2's second sum, as the
  ;; element-wise formulas take the mean), recentred on the mean ($rf_recentre): the
  ;; rounding of the mean does not reach the variance.
  (func $rf_dev2 (param $p i32) (param $n i32) (param $dt i32) (param $mean f64) (param $m f32)
    (result f64)
    (call $rf_recentre
      (call $rf_sums2 (local.get $p) (local.get $n) (local.get $dt) (f32x4.splat (local.get $m)))
      (f64.convert_i32_u (local.get $n))
      (f64.sub (local.get $mean) (f64.promote_f32 (local.get $m)))))

  ;; The pivot of a run's one-pass moments ($rf_moments): the mean of its first 16 elements,
  ;; summed in float32 as a tree (so 16 equal values give their value exactly), or its first
  ;; element when it has fewer; $rf_pivot4's rule (magnitude below 2^100, else 0). Its distance
  ;; from the run's mean is then about a quarter of the run's deviation, not a whole one.
  (func $rf_pivot16 (param $p i32) (param $n i32) (param $dt i32) (result f32)
    (local $es i32) (local $s v128)
    (if (i32.lt_u (local.get $n) (i32.const 16))
      (then (return
        (f32x4.extract_lane 0 (call $rf_pivot4 (call $ld4 (local.get $p) (local.get $dt)))))))
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $s
      (f32x4.add
        (f32x4.add (call $ld4 (local.get $p) (local.get $dt))
          (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt)))
        (f32x4.add
          (call $ld4 (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))) (local.get $dt))
          (call $ld4 (i32.add (local.get $p) (i32.mul (local.get $es) (i32.const 3))) (local.get $dt)))))
    (local.set $s
      (f32x4.add (local.get $s)
        (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $s) (local.get $s))))
    (local.set $s
      (f32x4.add (local.get $s)
        (i8x16.shuffle 4 5 6 7 0 1 2 3 12 13 14 15 8 9 10 11 (local.get $s) (local.get $s))))
    (f32x4.extract_lane 0
      (call $rf_pivot4 (f32x4.mul (local.get $s) (v128.const f32x4 0.0625 0.0625 0.0625 0.0625)))))

  ;; A run's mean (returned) and the sum of its squared deviations from it (left in $rf_second),
  ;; in float64, from one pass over its n (at least 1) elements at p (dt): the sums of the
  ;; differences from a pivot ($rf_pivot16) and of their squares ($rf_sums2), the latter
  ;; recentred on the mean ($rf_recentre). Float32 lanes err on those squares by a few
  ;; epsilons of n (var + d^2), d the pivot's distance from the mean; the pass is kept when
  ;; d^2 <= var (at most twice the error of squares taken about the mean, typically 1/16
  ;; more). Otherwise (and when the sum is not finite) the run takes the two passes of
  ;; $rf_mean64 and $rf_dev2, as a run whose pivot is far from its mean needs.
  ;; float16 runs are taken first with their elements loaded as finite (code 5: $ld4 without
  ;; the fix of Inf and NaN, whose elements then read as magnitudes of 2^16 or more), and again
  ;; with the full loads only when the moments leave room for such an element: every element
  ;; lies within sqrt(m2) of the mean (m2 the sum of the squared deviations), so a run whose
  ;; |mean| + sqrt(m2) stays below 65504 (float16's largest finite value) held none. The
  ;; float32 sums err by a few parts in 10^5 (a lane adds at most 128 terms before float64),
  ;; far inside the 32 between 65504 and 2^16. The same results either way, at no cost per
  ;; element; a run of large data may be taken twice (1024 elements of magnitude 2000 have
  ;; sqrt(m2) near 64000).
  (func $rf_moments (param $p i32) (param $n i32) (param $dt i32) (result f64)
    (local $r f64)
    (if (call $finite_first (local.get $dt))
      (then
        (local.set $r (call $rf_moments_at (local.get $p) (local.get $n) (i32.const 5)))
        (if (f64.lt (f64.add (f64.abs (local.get $r)) (f64.sqrt (global.get $rf_second)))
              (f64.const 65504))
          (then (return (local.get $r))))
        (return (call $rf_moments_at (local.get $p) (local.get $n) (i32.const 1)))))
    (call $rf_moments_at (local.get $p) (local.get $n) (local.get $dt)))

  ;; $rf_moments with the elements loaded as code dt.
  (func $rf_moments_at (param $p i32) (param $n i32) (param $dt i32) (result f64)
    (local $pv f32) (local $nf f64) (local $d f64) (local $q f64) (local $mean f64)
    (local.set $pv (call $rf_pivot16 (local.get $p) (local.get $n) (local.get $dt)))
    (local.set $nf (f64.convert_i32_u (local.get $n)))
    (local.set $q
      (call $rf_sums2 (local.get $p) (local.get $n) (local.get $dt) (f32x4.splat (local.get $pv))))
    (local.set $d (f64.div (global.get $rf_second) (local.get $nf)))
    (local.set $q (call $rf_recentre (local.get $q) (local.get $nf) (local.get $d)))
    (if (i32.and (f64.lt (local.get $q) (f64.const inf))
          (f64.le (f64.mul (local.get $nf) (f64.mul (local.get $d) (local.get $d))) (local.get $q)))
      (then
        (global.set $rf_second (local.get $q))
        (return (f64.add (f64.promote_f32 (local.get $pv)) (local.get $d)))))
    (local.set $mean (call $rf_mean64 (local.get $p) (local.get $n) (local.get $dt)))
    (global.set $rf_second
      (call $rf_dev2 (local.get $p) (local.get $n) (local.get $dt) (local.get $mean)
        (f32.demote_f64 (local.get $mean))))
    (local.get $mean))

  ;; A row's statistics, as LayerNorm takes them: its mean and rstd = 1 / sqrt(var + eps) from
  ;; its squared deviations ($rf_moments), each rounded to float32 and stored at `mean` and
  ;; `rstd`.
  (func $rf_stats (param $p i32) (param $n i32) (param $dt i32) (param $eps f64) (param $mean i32)
    (param $rstd i32)
    (f32.store (local.get $mean)
      (f32.demote_f64 (call $rf_moments (local.get $p) (local.get $n) (local.get $dt))))
    (f32.store (local.get $rstd) (call $rf_rstd (global.get $rf_second) (local.get $n) (local.get $eps))))

  ;; The code a pass over a row whose statistics $rf_stats stored (its float32 mean at `mean`)
  ;; loads it with (kernels.wat $load_code): 5, float16 as finite, when the mean is finite, as
  ;; only a row of finite elements gives (a float16 row's sum cannot overflow).
  (func $rf_stats_code (param $dt i32) (param $mean i32) (result i32)
    (call $load_code (local.get $dt)
      (call $finite64 (f64.promote_f32 (f32.load (local.get $mean))))))

  ;; The sums over the n elements at p (dt) of v - m and of (v - m)^2: the second returned,
  ;; the first left in $rf_second; blocked as $rf_squares blocks.
  (func $rf_sums2 (param $p i32) (param $n i32) (param $dt i32) (param $m v128) (result f64)
    (local $es i32) (local $j i32) (local $n16 i32) (local $end i32) (local $s f64) (local $t f64)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128)
    (local $qa v128) (local $qb v128) (local $qc v128) (local $qd v128) (local $v v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n16 (i32.and (local.get $n) (i32.const -16)))
    (block $blocksDone
      (loop $block
        (br_if $blocksDone (i32.ge_u (local.get $j) (local.get $n16)))
        (local.set $end (i32.add (local.get $j) (i32.const 1024)))
        (if (i32.gt_u (local.get $end) (local.get $n16)) (then (local.set $end (local.get $n16))))
        (local.set $a (v128.const i64x2 0 0))
        (local.set $b (v128.const i64x2 0 0))
        (local.set $c (v128.const i64x2 0 0))
        (local.set $d (v128.const i64x2 0 0))
        (local.set $qa (v128.const i64x2 0 0))
        (local.set $qb (v128.const i64x2 0 0))
        (local.set $qc (v128.const i64x2 0 0))
        (local.set $qd (v128.const i64x2 0 0))
        (loop $next
          (local.set $v (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $m)))
          (local.set $a (f32x4.add (local.get $a) (local.get $v)))
          (local.set $qa (f32x4.add (local.get $qa) (call $rf_sq (local.get $v))))
          (local.set $v
            (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt))
              (local.get $m)))
          (local.set $b (f32x4.add (local.get $b) (local.get $v)))
          (local.set $qb (f32x4.add (local.get $qb) (call $rf_sq (local.get $v))))
          (local.set $v
            (f32x4.sub
              (call $ld4 (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))) (local.get $dt))
              (local.get $m)))
          (local.set $c (f32x4.add (local.get $c) (local.get $v)))
          (local.set $qc (f32x4.add (local.get $qc) (call $rf_sq (local.get $v))))
          (local.set $v
            (f32x4.sub
              (call $ld4 (i32.add (local.get $p) (i32.mul (local.get $es) (i32.const 3))) (local.get $dt))
              (local.get $m)))
          (local.set $d (f32x4.add (local.get $d) (local.get $v)))
          (local.set $qd (f32x4.add (local.get $qd) (call $rf_sq (local.get $v))))
          (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 2))))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br_if $next (i32.lt_u (local.get $j) (local.get $end))))
        (local.set $s (f64.add (local.get $s)
          (call $rf_fold (local.get $a) (local.get $b) (local.get $c) (local.get $d))))
        (local.set $t (f64.add (local.get $t)
          (call $rf_fold (local.get $qa) (local.get $qb) (local.get $qc) (local.get $qd))))
        (br $block)))
    ;; The last n mod 16 elements: whole vectors, then the last one masked.
    (local.set $a (v128.const i64x2 0 0))
    (local.set $qa (v128.const i64x2 0 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $v (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $m)))
        (if (i32.gt_u (i32.add (local.get $j) (i32.const 4)) (local.get $n))
          (then
            (local.set $v
              (v128.and (local.get $v) (call $rf_mask (i32.sub (local.get $n) (local.get $j)))))))
        (local.set $a (f32x4.add (local.get $a) (local.get $v)))
        (local.set $qa (f32x4.add (local.get $qa) (call $rf_sq (local.get $v))))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next)))
    (global.set $rf_second (f64.add (local.get $s)
      (call $rf_fold (local.get $a) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
        (v128.const i64x2 0 0))))
    (f64.add (local.get $t)
      (call $rf_fold (local.get $qa) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
        (v128.const i64x2 0 0))))

  ;; The sum of the squares of the n elements at p (dt), blocked as the module doc says.
  ;; float16 is summed first with its elements loaded as finite (code 5), and again with the
  ;; full loads only when the sum leaves room for an Inf or a NaN read so (2^16 or more, so a
  ;; square of 2^32 or more): a sum below 65504^2 held none ($rf_moments says why the float32
  ;; sums' error stays inside the margin). The same sum either way.
  (func $rf_squares (param $p i32) (param $n i32) (param $dt i32) (result f64)
    (local $t f64)
    (if (call $finite_first (local.get $dt))
      (then
        (local.set $t (call $rf_squares_at (local.get $p) (local.get $n) (i32.const 5)))
        (if (f64.lt (local.get $t) (f64.const 4290774016)) (then (return (local.get $t))))
        (return (call $rf_squares_at (local.get $p) (local.get $n) (i32.const 1)))))
    (call $rf_squares_at (local.get $p) (local.get $n) (local.get $dt)))

  ;; $rf_squares with the elements loaded as code dt.
  (func $rf_squares_at (param $p i32) (param $n i32) (param $dt i32) (result f64)
    (local $es i32) (local $j i32) (local $n16 i32) (local $end i32) (local $t f64)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128) (local $v v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n16 (i32.and (local.get $n) (i32.const -16)))
    (block $blocksDone
      (loop $block
        (br_if $blocksDone (i32.ge_u (local.get $j) (local.get $n16)))
        (local.set $end (i32.add (local.get $j) (i32.const 1024)))
        (if (i32.gt_u (local.get $end) (local.get $n16)) (then (local.set $end (local.get $n16))))
        (local.set $a (v128.const i64x2 0 0))
        (local.set $b (v128.const i64x2 0 0))
        (local.set $c (v128.const i64x2 0 0))
        (local.set $d (v128.const i64x2 0 0))
        (loop $next
          (local.set $a (f32x4.add (local.get $a)
            (call $rf_sq (call $pair_lo (local.get $p) (local.get $dt)))))
          (local.set $b (f32x4.add (local.get $b)
            (call $rf_sq (call $pair_hi (local.get $p) (local.get $es) (local.get $dt)))))
          (local.set $c (f32x4.add (local.get $c)
            (call $rf_sq
              (call $pair_lo (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1)))
                (local.get $dt)))))
          (local.set $d (f32x4.add (local.get $d)
            (call $rf_sq
              (call $pair_hi (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1)))
                (local.get $es) (local.get $dt)))))
          (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 2))))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br_if $next (i32.lt_u (local.get $j) (local.get $end))))
        (local.set $t (f64.add (local.get $t)
          (call $rf_fold (local.get $a) (local.get $b) (local.get $c) (local.get $d))))
        (br $block)))
    ;; The last n mod 16 elements: whole vectors, then the last one masked.
    (local.set $a (v128.const i64x2 0 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $v
          (call $rf_sq (call $ld4 (local.get $p) (local.get $dt))))
        (if (i32.gt_u (i32.add (local.get $j) (i32.const 4)) (local.get $n))
          (then
            (local.set $v
              (v128.and (local.get $v) (call $rf_mask (i32.sub (local.get $n) (local.get $j)))))))
        (local.set $a (f32x4.add (local.get $a) (local.get $v)))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next)))
    (f64.add (local.get $t)
      (call $rf_fold (local.get $a) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
        (v128.const i64x2 0 0))))

  ;; Keeps two vectors of a row kernel's first pass for its second (kernels.wat
  ;; $keeps_terms): a at byte k of the kept row at p, b at byte k of the kept row at q.
  (func $rf_keep2 (param $p i32) (param $q i32) (param $k i32) (param $a v128) (param $b v128)
    (v128.store (i32.add (local.get $p) (local.get $k)) (local.get $a))
    (v128.store (i32.add (local.get $q) (local.get $k)) (local.get $b)))

  ;; Stores four float32 lanes v at byte address p, each rounded once to dt.
  (func $rf_st4 (param $p i32) (param $dt i32) (param $v v128)
    (if (i32.eqz (local.get $dt))
      (then (v128.store (local.get $p) (local.get $v)))
      (else (v128.store64_lane 0 (local.get $p) (call $bits4 (local.get $dt) (local.get $v))))))

  ;; Stores eight float32 lanes, a's then b's, at byte address p, each rounded once to dt: two
  ;; stores of float32, one of the 16-bit dtypes' eight lanes (kernels.wat $bits8). Callers keep
  ;; $rf_st4 for float32 where storing each vector as it is made runs faster.
  (func $rf_st8 (param $p i32) (param $dt i32) (param $a v128) (param $b v128)
    (if (i32.eqz (local.get $dt))
      (then
        (v128.store (local.get $p) (local.get $a))
        (v128.store offset=16 (local.get $p) (local.get $b)))
      (else (v128.store (local.get $p) (call $bits8 (local.get $dt) (local.get $a) (local.get $b))))))

  ;; Stores a bfloat16 pair (dt 2 or 3; kernels.wat $pair_lo and $pair_hi: a the even elements of
  ;; eight, b the odd ones) at byte address p, each lane rounded once (kernels.wat $bf16w,
  ;; $bf16w_hi): a's bits in the low half of each 32-bit lane, b's in the high half, with one
  ;; store and no narrowing.
  (func $pair_st8 (param $p i32) (param $dt i32) (param $a v128) (param $b v128)
    (v128.store (local.get $p)
      (v128.or (call $bf16w (local.get $dt) (local.get $a))
        (call $bf16w_hi (local.get $dt) (local.get $b)))))

  ;; Stores lanes 0 .. count-1 (count 1 to 3) of v at byte address p, rounded as $rf_st4 does.
  (func $rf_st4n (param $p i32) (param $dt i32) (param $v v128) (param $count i32)
    (local $r v128)
    (if (i32.eqz (local.get $dt))
      (then
        (v128.store32_lane 0 (local.get $p) (local.get $v))
        (if (i32.gt_u (local.get $count) (i32.const 1))
          (then (v128.store32_lane offset=4 1 (local.get $p) (local.get $v))))
        (if (i32.gt_u (local.get $count) (i32.const 2))
          (then (v128.store32_lane offset=8 2 (local.get $p) (local.get $v))))
        (return)))
    (local.set $r (call $bits4 (local.get $dt) (local.get $v)))
    (v128.store16_lane 0 (local.get $p) (local.get $r))
    (if (i32.gt_u (local.get $count) (i32.const 1))
      (then (v128.store16_lane offset=2 1 (local.get $p) (local.get $r))))
    (if (i32.gt_u (local.get $count) (i32.const 2))
      (then (v128.store16_lane offset=4 2 (local.get $p) (local.get $r)))))

  ;; Zeroes n float32 at byte address p, rounded up to a whole vector.
  (func $rf_zero (param $p i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n) (i32.const 2))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (v128.store (local.get $p) (v128.const i64x2 0 0))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $next))))

  ;; 1 / sqrt(q / n + eps) rounded to float32 (q a row's sum of squares, eps already a float).
  (func $rf_rstd (param $q f64) (param $n i32) (param $eps f64) (result f32)
    (f32.demote_f64
      (f64.div (f64.const 1)
        (f64.sqrt (f64.add (f64.div (local.get $q) (f64.convert_i32_u (local.get $n)))
          (local.get $eps))))))
)
