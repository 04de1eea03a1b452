;; The float32 kernels of the BatchNorm family's stages (src/backends/cpu/kernels/
;; channel_stages.ts drives them): per-channel statistics (sum, m2), per-channel sums
;; (sum(dy), sum(dy * (x - mean))) and the per-channel writes (normalize, gradient, scale),
;; over the tensors in place in the host heap.
;; Spliced into kernels.wat's module after row_sums.wat (whose helpers $rf_* they use) and
;; specialised by `$dt` as the row norms are; row_norms.wat and row_sums.wat state the numerics, which these
;; share: elements widened exactly to float32, element-wise formulas in float32, each output
;; rounded once from float32 ($rf_st4), sums of float32 runs added in float64.
;;
;; The writes are centred, as CANN computes them (formulas.ts NORMALIZE_CONSTANTS).
;;
;; Two loop structures, one call per work item:
;; - rows (here): `rows` runs of `inner` contiguous elements of one channel (NCHW), consecutive
;;   runs `*s` bytes apart. Statistics take segments of at most 4096 elements: each segment's
;;   mean and its squared deviations from it (row_sums.wat's $rf_moments, as LayerNorm's rows
;;   take them), merged into the item's (sum, m2) in float64 (Chan et al.),
;;   segment by segment in order.
;; - pixels (channel_pixels.wat): `pix` consecutive pixels of C channels each (channels-last,
;;   dense, C a multiple of 4), per-channel float32 arrays at `k` (the write constants,
;;   interleaved per four channels, or the sums' means). Runs of at most 128 pixels accumulate
;;   float32 lanes per channel in the scratch at `acc`; each run is then added (sums) or
;;   merged (statistics: its float32 means, then its squared deviations from them, as for
;;   rows) into the per-channel float64 outputs at `o1`, `o2`.
(module
  ;; Statistics of one item, rows: (sum, m2 about the item's mean) as float64 at `out`.
  (func (export "bn_stats_rows")
    (param $x i32) (param $xs i32) (param $inner i32) (param $dt i32) (param $rows i32)
    (param $out i32)
    (call $bn_stats_rows_at (local.get $x) (local.get $xs) (local.get $inner) (local.get $dt)
      (local.get $rows) (local.get $out)))

  ;; bn_stats_rows, callable from the other kernels (channel_units.wat).
  (func $bn_stats_rows_at
    (param $x i32) (param $xs i32) (param $inner i32) (param $dt i32) (param $rows i32)
    (param $out i32)
    (local $r i32) (local $p i32) (local $j i32) (local $len i32) (local $sh i32)
    (local $n f64) (local $s f64) (local $m2 f64) (local $sb f64) (local $qb f64) (local $nb f64)
    (local $d f64) (local $mean f64)
    (local.set $sh (call $shift (local.get $dt)))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $p (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $xs))))
        (local.set $j (i32.const 0))
        (block $segsDone
          (loop $seg
            (br_if $segsDone (i32.ge_u (local.get $j) (local.get $inner)))
            (local.set $len (i32.sub (local.get $inner) (local.get $j)))
            (if (i32.gt_u (local.get $len) (i32.const 4096)) (then (local.set $len (i32.const 4096))))
            (local.set $nb (f64.convert_i32_u (local.get $len)))
            (local.set $mean (call $rf_moments (local.get $p) (local.get $len) (local.get $dt)))
            (local.set $sb (f64.mul (local.get $mean) (local.get $nb)))
            (local.set $qb (global.get $rf_second))
            (if (f64.eq (local.get $n) (f64.const 0))
              (then
                (local.set $s (local.get $sb))
                (local.set $m2 (local.get $qb)))
              (else
                (local.set $d (f64.sub (local.get $mean) (f64.div (local.get $s) (local.get $n))))
                (local.set $m2
                  (f64.add (f64.add (local.get $m2) (local.get $qb))
                    (f64.div (f64.mul (f64.mul (local.get $d) (local.get $d))
                      (f64.mul (local.get $n) (local.get $nb)))
                      (f64.add (local.get $n) (local.get $nb)))))
                (local.set $s (f64.add (local.get $s) (local.get $sb)))))
            (local.set $n (f64.add (local.get $n) (local.get $nb)))
            (local.set $p (i32.add (local.get $p) (i32.shl (local.get $len) (local.get $sh))))
            (local.set $j (i32.add (local.get $j) (local.get $len)))
            (br $seg)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row)))
    (f64.store (local.get $out) (local.get $s))
    (f64.store offset=8 (local.get $out) (local.get $m2)))

  ;; Sums of one item, rows: sum(dy) and sum(dy * (x - mean)) (mean rounded to float32) as
  ;; float64 at `out`; float32 lanes over runs of 256 elements of a row.
  (func (export "bn_sums_rows")
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $inner i32)
    (param $dt i32) (param $rows i32) (param $mean f64) (param $out i32)
    (call $bn_sums_rows_at (local.get $dy) (local.get $dys) (local.get $x) (local.get $xs)
      (local.get $inner) (local.get $dt) (local.get $rows) (local.get $mean) (local.get $out)))

  ;; With code 5 (float16 loaded as finite), the running maximum mx of the magnitudes of a
  ;; and b (the channel sums' elements); mx otherwise (the other codes' loops keep none).
  ;; f32x4.pmax is one instruction (no lane is NaN here), where f32x4.max's NaN and signed-zero
  ;; rules take several and made the sums 1.8-4.1x slower (bench/RESULTS.md).
  (func $bn_peak (param $dt i32) (param $mx v128) (param $a v128) (param $b v128) (result v128)
    (if (result v128) (i32.eq (local.get $dt) (i32.const 5))
      (then
        (f32x4.pmax (local.get $mx)
          (f32x4.pmax (f32x4.abs (local.get $a)) (f32x4.abs (local.get $b)))))
      (else (local.get $mx))))

  ;; With code 5, $bn_special = whether a lane of the maximum mx reached 2^16: the least
  ;; magnitude an Inf or a NaN loaded as finite reads as, above every finite float16 (65504).
  (func $bn_special_at (param $dt i32) (param $mx v128)
    (if (i32.eq (local.get $dt) (i32.const 5))
      (then
        (global.set $bn_special
          (v128.any_true
            (f32x4.ge (local.get $mx) (v128.const f32x4 0x1p16 0x1p16 0x1p16 0x1p16)))))))

  ;; bn_sums_rows, callable from the other kernels (channel_units.wat). float16 is summed
  ;; first with dy and x loaded as finite (code 5), and again with the full loads only when the
  ;; magnitudes' running maximum shows an Inf or a NaN among them (row_sums.wat $rf_moments
  ;; says how): the same sums either way.
  (func $bn_sums_rows_at
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $inner i32)
    (param $dt i32) (param $rows i32) (param $mean f64) (param $out i32)
    (if (call $finite_first (local.get $dt))
      (then
        (call $bn_sums_rows_as (local.get $dy) (local.get $dys) (local.get $x) (local.get $xs)
          (local.get $inner) (i32.const 5) (local.get $rows) (local.get $mean) (local.get $out))
        (if (i32.eqz (global.get $bn_special)) (then (return)))))
    (call $bn_sums_rows_as (local.get $dy) (local.get $dys) (local.get $x) (local.get $xs)
      (local.get $inner) (local.get $dt) (local.get $rows) (local.get $mean) (local.get $out)))

  ;; $bn_sums_rows_at with the elements loaded as code dt; with code 5, $bn_special set ($bn_special_at).
  (func $bn_sums_rows_as
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $inner i32)
    (param $dt i32) (param $rows i32) (param $mean f64) (param $out i32)
    (local $r i32) (local $p i32) (local $q i32) (local $j i32) (local $end i32) (local $es i32)
    (local $n4 i32) (local $n8 i32)
    (local $t1 f64) (local $t2 f64)
    (local $m v128) (local $e v128) (local $d v128) (local $f v128) (local $g v128)
    (local $a1 v128) (local $a2 v128) (local $b1 v128) (local $b2 v128) (local $mask v128)
    (local $w v128) (local $mx v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $inner) (i32.const -4)))
    (local.set $m (f32x4.splat (f32.demote_f64 (local.get $mean))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $p (i32.add (local.get $dy) (i32.mul (local.get $r) (local.get $dys))))
        (local.set $q (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $xs))))
        (local.set $j (i32.const 0))
        ;; Whole vectors in runs of 256 elements, a pair a step (kernels.wat $pair_lo: for
        ;; bfloat16 its even and odd elements).
        (block $blocksDone
          (loop $block
            (br_if $blocksDone (i32.ge_u (local.get $j) (local.get $n4)))
            (local.set $end (i32.add (local.get $j) (i32.const 256)))
            (if (i32.gt_u (local.get $end) (local.get $n4)) (then (local.set $end (local.get $n4))))
            (local.set $n8 (i32.sub (local.get $end) (i32.and (i32.sub (local.get $end) (local.get $j)) (i32.const 7))))
            (local.set $a1 (v128.const i64x2 0 0))
            (local.set $a2 (v128.const i64x2 0 0))
            (local.set $b1 (v128.const i64x2 0 0))
            (local.set $b2 (v128.const i64x2 0 0))
            (block $pairsDone
              (loop $pair
                (br_if $pairsDone (i32.ge_u (local.get $j) (local.get $n8)))
                (local.set $e (call $pair_lo (local.get $p) (local.get $dt)))
                (local.set $w (call $pair_lo (local.get $q) (local.get $dt)))
                (local.set $mx (call $bn_peak (local.get $dt) (local.get $mx) (local.get $e) (local.get $w)))
                (local.set $d (f32x4.sub (local.get $w) (local.get $m)))
                (local.set $f (call $pair_hi (local.get $p) (local.get $es) (local.get $dt)))
                (local.set $w (call $pair_hi (local.get $q) (local.get $es) (local.get $dt)))
                (local.set $mx (call $bn_peak (local.get $dt) (local.get $mx) (local.get $f) (local.get $w)))
                (local.set $g (f32x4.sub (local.get $w) (local.get $m)))
                (local.set $a1 (f32x4.add (local.get $a1) (local.get $e)))
                (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $e) (local.get $d))))
                (local.set $b1 (f32x4.add (local.get $b1) (local.get $f)))
                (local.set $b2 (f32x4.add (local.get $b2) (f32x4.mul (local.get $f) (local.get $g))))
                (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
                (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
                (local.set $j (i32.add (local.get $j) (i32.const 8)))
                (br $pair)))
            (if (i32.lt_u (local.get $j) (local.get $end))
              (then
                (local.set $e (call $ld4 (local.get $p) (local.get $dt)))
                (local.set $w (call $ld4 (local.get $q) (local.get $dt)))
                (local.set $mx (call $bn_peak (local.get $dt) (local.get $mx) (local.get $e) (local.get $w)))
                (local.set $d (f32x4.sub (local.get $w) (local.get $m)))
                (local.set $a1 (f32x4.add (local.get $a1) (local.get $e)))
                (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $e) (local.get $d))))
                (local.set $p (i32.add (local.get $p) (local.get $es)))
                (local.set $q (i32.add (local.get $q) (local.get $es)))
                (local.set $j (i32.add (local.get $j) (i32.const 4)))))
            (local.set $t1 (f64.add (local.get $t1)
              (call $rf_fold (local.get $a1) (local.get $b1) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $t2 (f64.add (local.get $t2)
              (call $rf_fold (local.get $a2) (local.get $b2) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (br $block)))
        ;; The last one to three elements, masked.
        (if (i32.lt_u (local.get $j) (local.get $inner))
          (then
            (local.set $mask (call $rf_mask (i32.sub (local.get $inner) (local.get $j))))
            (local.set $e (v128.and (call $ld4 (local.get $p) (local.get $dt)) (local.get $mask)))
            (local.set $w (call $ld4 (local.get $q) (local.get $dt)))
            (local.set $mx
              (call $bn_peak (local.get $dt) (local.get $mx) (local.get $e)
                (v128.and (local.get $w) (local.get $mask))))
            (local.set $d
              (v128.and (f32x4.sub (local.get $w) (local.get $m)) (local.get $mask)))
            (local.set $t1 (f64.add (local.get $t1)
              (call $rf_fold (local.get $e) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $t2 (f64.add (local.get $t2)
              (call $rf_fold (f32x4.mul (local.get $e) (local.get $d)) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0) (v128.const i64x2 0 0))))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row)))
    (call $bn_special_at (local.get $dt) (local.get $mx))
    (f64.store (local.get $out) (local.get $t1))
    (f64.store offset=8 (local.get $out) (local.get $t2)))

  ;; The value a write of kind `op` gives four elements, centred as CANN computes them
  ;; (formulas.ts NORMALIZE_CONSTANTS): 0 normalize (x - k0) * k1 + k2, 1 gradient
  ;; (dy * k3 - k2) - (x - k0) * k1, 2 scale dy * k0, 3 swish: g = the normalize value, then
  ;; g / (1 + exp(g * k3)) with k3 = -swishScale (channel_swish.wat $cs_swish4) (float32).
  ;; Ops 0 and 3 read x only, 2 dy only, 1 both.
  (func $bn_value (param $op i32) (param $e v128) (param $v v128) (param $k0 v128)
    (param $k1 v128) (param $k2 v128) (param $k3 v128) (result v128)
    (if (i32.eq (local.get $op) (i32.const 3))
      (then
        (return (call $cs_swish4
          (f32x4.add (f32x4.mul (f32x4.sub (local.get $v) (local.get $k0)) (local.get $k1))
            (local.get $k2))
          (local.get $k3)))))
    (if (result v128) (i32.eqz (local.get $op))
      (then
        (f32x4.add (f32x4.mul (f32x4.sub (local.get $v) (local.get $k0)) (local.get $k1))
          (local.get $k2)))
      (else
        (if (result v128) (i32.eq (local.get $op) (i32.const 1))
          (then
            (f32x4.sub
              (f32x4.sub (f32x4.mul (local.get $e) (local.get $k3)) (local.get $k2))
              (f32x4.mul (f32x4.sub (local.get $v) (local.get $k0)) (local.get $k1))))
          (else (f32x4.mul (local.get $e) (local.get $k0)))))))

  ;; A write of kind `op` over one item, rows (dy read for ops 1 and 2, x for 0, 1 and 3), each
  ;; row by $bn_write_row. A float16 write of code 1 (constants not from sums over its data,
  ;; which may hold an Inf or a NaN: eval-mode batchNorm, batchNormElemt, batchNormElemtBackward)
  ;; scans the rows it reads first (kernels.wat $f16_rows_finite; dy and x are the same row for
  ;; the writes that read one) and loads a row that holds none as finite (code 5,
  ;; kernels.wat $ld4), storing as code 1: the same bits, bn_norm_rows, bn_grad_rows and
  ;; bn_scale_rows 0.92-0.94x the time (bench/RESULTS.md, twenty-fifth session).
  (func $bn_write_rows
    (param $op i32) (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32)
    (param $o i32) (param $os i32) (param $inner i32) (param $dt i32) (param $rows i32)
    (param $k0 f64) (param $k1 f64) (param $k2 f64) (param $k3 f64)
    (local $r i32) (local $p i32) (local $q i32) (local $t i32) (local $a v128) (local $b v128)
    (local $c v128) (local $f v128)
    (local.set $a (f32x4.splat (f32.demote_f64 (local.get $k0))))
    (local.set $b (f32x4.splat (f32.demote_f64 (local.get $k1))))
    (local.set $c (f32x4.splat (f32.demote_f64 (local.get $k2))))
    (local.set $f (f32x4.splat (f32.demote_f64 (local.get $k3))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $p (i32.add (local.get $dy) (i32.mul (local.get $r) (local.get $dys))))
        (local.set $q (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $xs))))
        (local.set $t (i32.add (local.get $o) (i32.mul (local.get $r) (local.get $os))))
        (if (call $f16_rows_finite (local.get $dt) (local.get $p) (local.get $q)
              (local.get $inner))
          (then
            (call $bn_write_row (local.get $op) (local.get $p) (local.get $q) (local.get $t)
              (local.get $inner) (i32.const 5) (local.get $dt) (local.get $a) (local.get $b)
              (local.get $c) (local.get $f)))
          (else
            (call $bn_write_row (local.get $op) (local.get $p) (local.get $q) (local.get $t)
              (local.get $inner) (local.get $dt) (local.get $dt) (local.get $a) (local.get $b)
              (local.get $c) (local.get $f))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; One row of a write of kind `op` (dy at p, x at q, out at t; inner elements), loaded as ldt
  ;; and stored as dt: whole vectors two a step, then the last one to three elements.
  (func $bn_write_row
    (param $op i32) (param $p i32) (param $q i32) (param $t i32) (param $inner i32)
    (param $ldt i32) (param $dt i32) (param $a v128) (param $b v128) (param $c v128)
    (param $f v128)
    (local $j i32) (local $es i32) (local $n4 i32) (local $n8 i32) (local $e v128) (local $v v128)
    (local $e2 v128) (local $v2 v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $inner) (i32.const -4)))
    (local.set $n8 (i32.and (local.get $inner) (i32.const -8)))
    (block $pairsDone
      (loop $pair
        (br_if $pairsDone (i32.ge_u (local.get $j) (local.get $n8)))
        (if (i32.lt_u (i32.sub (local.get $op) (i32.const 1)) (i32.const 2))
          (then
            (local.set $e (call $ld4 (local.get $p) (local.get $ldt)))
            (local.set $e2 (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $ldt)))))
        (if (i32.ne (local.get $op) (i32.const 2))
          (then
            (local.set $v (call $ld4 (local.get $q) (local.get $ldt)))
            (local.set $v2 (call $ld4 (i32.add (local.get $q) (local.get $es)) (local.get $ldt)))))
        ;; float32: each vector stored as it is made (both made first, then stored, ran
        ;; bn_grad_rows 1.18x slower); 16-bit dtypes: one store of both ($rf_st8).
        (if (i32.eqz (local.get $dt))
          (then
            (call $rf_st4 (local.get $t) (local.get $dt)
              (call $bn_value (local.get $op) (local.get $e) (local.get $v) (local.get $a)
                (local.get $b) (local.get $c) (local.get $f)))
            (call $rf_st4 (i32.add (local.get $t) (local.get $es)) (local.get $dt)
              (call $bn_value (local.get $op) (local.get $e2) (local.get $v2) (local.get $a)
                (local.get $b) (local.get $c) (local.get $f))))
          (else
            (call $rf_st8 (local.get $t) (local.get $dt)
              (call $bn_value (local.get $op) (local.get $e) (local.get $v) (local.get $a)
                (local.get $b) (local.get $c) (local.get $f))
              (call $bn_value (local.get $op) (local.get $e2) (local.get $v2) (local.get $a)
                (local.get $b) (local.get $c) (local.get $f)))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $t (i32.add (local.get $t) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $inner)))
        (if (i32.lt_u (i32.sub (local.get $op) (i32.const 1)) (i32.const 2))
          (then (local.set $e (call $ld4 (local.get $p) (local.get $ldt)))))
        (if (i32.ne (local.get $op) (i32.const 2))
          (then (local.set $v (call $ld4 (local.get $q) (local.get $ldt)))))
        (local.set $v
          (call $bn_value (local.get $op) (local.get $e) (local.get $v) (local.get $a)
            (local.get $b) (local.get $c) (local.get $f)))
        (if (i32.lt_u (local.get $j) (local.get $n4))
          (then (call $rf_st4 (local.get $t) (local.get $dt) (local.get $v)))
          (else
            (call $rf_st4n (local.get $t) (local.get $dt) (local.get $v)
              (i32.sub (local.get $inner) (local.get $j)))))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
        (local.set $t (i32.add (local.get $t) (local.get $es)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next))))

  ;; $bn_write_rows for bfloat16 (dt 2 or 3), which the build calls in its place in the kernels'
  ;; bfloat16 copies, and in a bfloat16 clone of channel_units.wat's $bn_write_units (scripts/
  ;; wat_text.ts specializeByDtype): the same write, its whole vectors
  ;; taken as pairs of even and odd elements (kernels.wat $pair_lo; every constant of a write is
  ;; the same in all lanes), 0.83-0.95x the time. A function of its own: the same change inside
  ;; $bn_write_rows changed Binaryen's float16 loops (bn_scale_rows float16 1.06-1.10x slower).
  (func $bn_write_rows__bf16
    (param $op i32) (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32)
    (param $o i32) (param $os i32) (param $inner i32) (param $dt i32) (param $rows i32)
    (param $k0 f64) (param $k1 f64) (param $k2 f64) (param $k3 f64)
    (local $r i32) (local $p i32) (local $q i32) (local $t i32) (local $j i32) (local $es i32)
    (local $n4 i32) (local $n8 i32) (local $a v128) (local $b v128) (local $c v128) (local $f v128)
    (local $e v128) (local $v v128) (local $e2 v128) (local $v2 v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $inner) (i32.const -4)))
    (local.set $n8 (i32.and (local.get $inner) (i32.const -8)))
    (local.set $a (f32x4.splat (f32.demote_f64 (local.get $k0))))
    (local.set $b (f32x4.splat (f32.demote_f64 (local.get $k1))))
    (local.set $c (f32x4.splat (f32.demote_f64 (local.get $k2))))
    (local.set $f (f32x4.splat (f32.demote_f64 (local.get $k3))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $p (i32.add (local.get $dy) (i32.mul (local.get $r) (local.get $dys))))
        (local.set $q (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $xs))))
        (local.set $t (i32.add (local.get $o) (i32.mul (local.get $r) (local.get $os))))
        (local.set $j (i32.const 0))
        (block $pairsDone
          (loop $pair
            (br_if $pairsDone (i32.ge_u (local.get $j) (local.get $n8)))
            (if (i32.lt_u (i32.sub (local.get $op) (i32.const 1)) (i32.const 2))
              (then
                (local.set $e (call $pair_lo (local.get $p) (local.get $dt)))
                (local.set $e2 (call $pair_hi (local.get $p) (local.get $es) (local.get $dt)))))
            (if (i32.ne (local.get $op) (i32.const 2))
              (then
                (local.set $v (call $pair_lo (local.get $q) (local.get $dt)))
                (local.set $v2 (call $pair_hi (local.get $q) (local.get $es) (local.get $dt)))))
            (call $pair_st8 (local.get $t) (local.get $dt)
              (call $bn_value (local.get $op) (local.get $e) (local.get $v) (local.get $a)
                (local.get $b) (local.get $c) (local.get $f))
              (call $bn_value (local.get $op) (local.get $e2) (local.get $v2) (local.get $a)
                (local.get $b) (local.get $c) (local.get $f)))
            (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $t (i32.add (local.get $t) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $pair)))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $inner)))
            (if (i32.lt_u (i32.sub (local.get $op) (i32.const 1)) (i32.const 2))
              (then (local.set $e (call $ld4 (local.get $p) (local.get $dt)))))
            (if (i32.ne (local.get $op) (i32.const 2))
              (then (local.set $v (call $ld4 (local.get $q) (local.get $dt)))))
            (local.set $v
              (call $bn_value (local.get $op) (local.get $e) (local.get $v) (local.get $a)
                (local.get $b) (local.get $c) (local.get $f)))
            (if (i32.lt_u (local.get $j) (local.get $n4))
              (then (call $rf_st4 (local.get $t) (local.get $dt) (local.get $v)))
              (else
                (call $rf_st4n (local.get $t) (local.get $dt) (local.get $v)
                  (i32.sub (local.get $inner) (local.get $j)))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $t (i32.add (local.get $t) (local.get $es)))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $next)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  (func (export "bn_norm_rows")
    (param $x i32) (param $xs i32) (param $o i32) (param $os i32) (param $inner i32)
    (param $dt i32) (param $rows i32) (param $k0 f64) (param $k1 f64) (param $k2 f64)
    (call $bn_write_rows (i32.const 0) (local.get $x) (local.get $xs) (local.get $x)
      (local.get $xs) (local.get $o) (local.get $os) (local.get $inner) (local.get $dt)
      (local.get $rows) (local.get $k0) (local.get $k1) (local.get $k2) (f64.const 0)))

  (func (export "bn_grad_rows")
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $o i32) (param $os i32)
    (param $inner i32) (param $dt i32) (param $rows i32) (param $k0 f64) (param $k1 f64)
    (param $k2 f64) (param $k3 f64)
    (call $bn_write_rows (i32.const 1) (local.get $dy) (local.get $dys) (local.get $x)
      (local.get $xs) (local.get $o) (local.get $os) (local.get $inner) (local.get $dt)
      (local.get $rows) (local.get $k0) (local.get $k1) (local.get $k2) (local.get $k3)))

  (func (export "bn_scale_rows")
    (param $dy i32) (param $dys i32) (param $o i32) (param $os i32) (param $inner i32)
    (param $dt i32) (param $rows i32) (param $k0 f64)
    (call $bn_write_rows (i32.const 2) (local.get $dy) (local.get $dys) (local.get $dy)
      (local.get $dys) (local.get $o) (local.get $os) (local.get $inner) (local.get $dt)
      (local.get $rows) (local.get $k0) (f64.const 0) (f64.const 0) (f64.const 0)))

  ;; Zeroes n float64 at byte address p (n a multiple of 2 or not: whole float64s).
  (func $bn_zero64 (param $p i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (f64.store (local.get $p) (f64.const 0))
        (local.set $p (i32.add (local.get $p) (i32.const 8)))
        (br $next))))
)
