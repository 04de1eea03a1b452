;; The float32 kernels of the BatchNorm family's stages (src/backends/cpu/kernels/
;; channel_stages.ts drives them): per-channel statistics (sum, m2), per-channel sums
;; (sum(dy), sum(dy * (x - mean))) and the per-channel writes (normalize, gradient, scale),
;; over the tensors in place in the host heap.
;; Spliced into kernels.wat's module after row_norms.wat (whose helpers $rf_* they use) and
;; specialised by `$dt` as the row norms are; row_norms.wat states the numerics, which these
;; share: elements widened exactly to float32, element-wise formulas in float32, each output
;; rounded once from float32 ($rf_st4), sums of float32 runs added in float64.
;;
;; The writes are centred, as CANN computes them (formulas.ts NORMALIZE_CONSTANTS).
;;
;; Two loop structures, one call per work item:
;; - rows: `rows` runs of `inner` contiguous elements of one channel (NCHW), consecutive runs
;;   `*s` bytes apart. Statistics take segments of at most 4096 elements: each segment's sum,
;;   then its squared deviations from its float32 mean (both row_norms.wat's blocked sums),
;;   corrected to its exact mean and merged into the item's (sum, m2) in float64 (Chan et
;;   al.), segment by segment in order.
;; - pixels: `pix` consecutive pixels of C channels each (channels-last, dense, C a multiple of
;;   4), per-channel float32 arrays at `k` (the write constants, or the sums' means). Runs of
;;   at most 128 pixels accumulate float32 lanes per channel in the scratch at `acc`; each run
;;   is then added (sums) or merged (statistics: its float32 means, then its squared
;;   deviations from them, as for rows) into the per-channel float64 outputs at `o1`, `o2`.
(module
  ;; Statistics of one item, rows: (sum, m2 about the item's mean) as float64 at `out`.
  (func (export "bn_stats_rows")
    (param $x i32) (param $xs i32) (param $inner i32) (param $dt i32) (param $rows i32)
    (param $out i32)
    (local $r i32) (local $p i32) (local $j i32) (local $len i32) (local $sh i32)
    (local $n f64) (local $s f64) (local $m2 f64) (local $sb f64) (local $qb f64) (local $nb f64)
    (local $mb f32) (local $d f64)
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
            (local.set $sb
              (call $rf_sum (local.get $p) (local.get $len) (local.get $dt) (i32.const 0)
                (v128.const i64x2 0 0)))
            (local.set $mb (f32.demote_f64 (f64.div (local.get $sb) (local.get $nb))))
            (local.set $qb
              (call $rf_sum (local.get $p) (local.get $len) (local.get $dt) (i32.const 1)
                (f32x4.splat (local.get $mb))))
            ;; sum((x - mb)^2) = m2 + len * (mean - mb)^2.
            (local.set $d (f64.sub (f64.div (local.get $sb) (local.get $nb)) (f64.promote_f32 (local.get $mb))))
            (local.set $qb
              (f64.max (f64.const 0)
                (f64.sub (local.get $qb) (f64.mul (local.get $nb) (f64.mul (local.get $d) (local.get $d))))))
            (if (f64.eq (local.get $n) (f64.const 0))
              (then
                (local.set $s (local.get $sb))
                (local.set $m2 (local.get $qb)))
              (else
                (local.set $d
                  (f64.sub (f64.div (local.get $sb) (local.get $nb)) (f64.div (local.get $s) (local.get $n))))
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
    (local $r i32) (local $p i32) (local $q i32) (local $j i32) (local $end i32) (local $es i32)
    (local $n4 i32) (local $n8 i32)
    (local $t1 f64) (local $t2 f64)
    (local $m v128) (local $e v128) (local $d v128) (local $f v128) (local $g v128)
    (local $a1 v128) (local $a2 v128) (local $b1 v128) (local $b2 v128) (local $mask v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $inner) (i32.const -4)))
    (local.set $m (f32x4.splat (f32.demote_f64 (local.get $mean))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $p (i32.add (local.get $dy) (i32.mul (local.get $r) (local.get $dys))))
        (local.set $q (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $xs))))
        (local.set $j (i32.const 0))
        ;; Whole vectors in runs of 256 elements, two vectors a step.
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
                (local.set $e (call $ld4 (local.get $p) (local.get $dt)))
                (local.set $d (f32x4.sub (call $ld4 (local.get $q) (local.get $dt)) (local.get $m)))
                (local.set $f (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt)))
                (local.set $g
                  (f32x4.sub (call $ld4 (i32.add (local.get $q) (local.get $es)) (local.get $dt))
                    (local.get $m)))
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
                (local.set $d (f32x4.sub (call $ld4 (local.get $q) (local.get $dt)) (local.get $m)))
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
            (local.set $d
              (v128.and (f32x4.sub (call $ld4 (local.get $q) (local.get $dt)) (local.get $m))
                (local.get $mask)))
            (local.set $t1 (f64.add (local.get $t1)
              (call $rf_fold (local.get $e) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $t2 (f64.add (local.get $t2)
              (call $rf_fold (f32x4.mul (local.get $e) (local.get $d)) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0) (v128.const i64x2 0 0))))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row)))
    (f64.store (local.get $out) (local.get $t1))
    (f64.store offset=8 (local.get $out) (local.get $t2)))

  ;; The value a write of kind `op` gives four elements, centred as CANN computes them
  ;; (formulas.ts NORMALIZE_CONSTANTS): 0 normalize (x - k0) * k1 + k2, 1 gradient
  ;; (dy * k3 - k2) - (x - k0) * k1, 2 scale dy * k0 (float32).
  (func $bn_value (param $op i32) (param $e v128) (param $v v128) (param $k0 v128)
    (param $k1 v128) (param $k2 v128) (param $k3 v128) (result v128)
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

  ;; A write of kind `op` over one item, rows (dy read for ops 1 and 2, x for 0 and 1): whole
  ;; vectors two a step, then the last one to three elements.
  (func $bn_write_rows
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
            (if (i32.ne (local.get $op) (i32.const 0))
              (then
                (local.set $e (call $ld4 (local.get $p) (local.get $dt)))
                (local.set $e2 (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt)))))
            (if (i32.ne (local.get $op) (i32.const 2))
              (then
                (local.set $v (call $ld4 (local.get $q) (local.get $dt)))
                (local.set $v2 (call $ld4 (i32.add (local.get $q) (local.get $es)) (local.get $dt)))))
            (call $rf_st4 (local.get $t) (local.get $dt)
              (call $bn_value (local.get $op) (local.get $e) (local.get $v) (local.get $a)
                (local.get $b) (local.get $c) (local.get $f)))
            (call $rf_st4 (i32.add (local.get $t) (local.get $es)) (local.get $dt)
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
            (if (i32.ne (local.get $op) (i32.const 0))
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

  ;; Statistics of one item, pixels: per channel c, the sum at o1 + 8c and the m2 about the
  ;; item's mean at o2 + 8c (float64); `acc` holds 3C float32 of scratch, interleaved per four
  ;; channels (48 bytes each: run sums, run means, run squared deviations), so that the loops
  ;; address it with immediate offsets from one moving pointer (they are bound by their
  ;; instruction count).
  (func (export "bn_stats_pix")
    (param $x i32) (param $C i32) (param $dt i32) (param $pix i32) (param $o1 i32) (param $o2 i32)
    (param $acc i32)
    (local $q i32) (local $len i32) (local $k i32) (local $c i32) (local $p i32) (local $es i32)
    (local $ps i32) (local $a i32) (local $accEnd i32) (local $f i32)
    (local $n f64) (local $nb f64) (local $sb f64) (local $qb f64) (local $d f64) (local $s f64)
    (local $d4 v128) (local $e4 v128) (local $m4 v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $ps (i32.shl (local.get $C) (call $shift (local.get $dt))))
    (local.set $accEnd (i32.add (local.get $acc) (i32.mul (local.get $C) (i32.const 12))))
    (call $bn_zero64 (local.get $o1) (local.get $C))
    (call $bn_zero64 (local.get $o2) (local.get $C))
    (block $runsDone
      (loop $run
        (br_if $runsDone (i32.ge_u (local.get $q) (local.get $pix)))
        (local.set $len (i32.sub (local.get $pix) (local.get $q)))
        (if (i32.gt_u (local.get $len) (i32.const 128)) (then (local.set $len (i32.const 128))))
        (local.set $nb (f64.convert_i32_u (local.get $len)))
        (call $rf_zero (local.get $acc) (i32.mul (local.get $C) (i32.const 3)))
        ;; Pass 1: the run's per-channel sums, two pixels a step (their sum added at once).
        (local.set $k (i32.const 0))
        (local.set $p (i32.add (local.get $x) (i32.mul (local.get $q) (local.get $ps))))
        (block $done
          (loop $pixel
            (br_if $done (i32.ge_u (local.get $k) (local.get $len)))
            (local.set $a (local.get $acc))
            (if (i32.lt_u (i32.add (local.get $k) (i32.const 1)) (local.get $len))
              (then
                (loop $vec2
                  (v128.store (local.get $a)
                    (f32x4.add (v128.load (local.get $a))
                      (f32x4.add (call $ld4 (local.get $p) (local.get $dt))
                        (call $ld4 (i32.add (local.get $p) (local.get $ps)) (local.get $dt)))))
                  (local.set $p (i32.add (local.get $p) (local.get $es)))
                  (local.set $a (i32.add (local.get $a) (i32.const 48)))
                  (br_if $vec2 (i32.lt_u (local.get $a) (local.get $accEnd))))
                (local.set $p (i32.add (local.get $p) (local.get $ps)))
                (local.set $k (i32.add (local.get $k) (i32.const 2)))
                (br $pixel)))
            (loop $vec
              (v128.store (local.get $a)
                (f32x4.add (v128.load (local.get $a)) (call $ld4 (local.get $p) (local.get $dt))))
              (local.set $p (i32.add (local.get $p) (local.get $es)))
              (local.set $a (i32.add (local.get $a) (i32.const 48)))
              (br_if $vec (i32.lt_u (local.get $a) (local.get $accEnd))))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $pixel)))
        ;; The run's float32 means.
        (local.set $a (local.get $acc))
        (loop $vec
          (v128.store offset=16 (local.get $a)
            (f32x4.div (v128.load (local.get $a))
              (f32x4.splat (f32.convert_i32_u (local.get $len)))))
          (local.set $a (i32.add (local.get $a) (i32.const 48)))
          (br_if $vec (i32.lt_u (local.get $a) (local.get $accEnd))))
        ;; Pass 2: squared deviations from them, two pixels a step.
        (local.set $k (i32.const 0))
        (local.set $p (i32.add (local.get $x) (i32.mul (local.get $q) (local.get $ps))))
        (block $done
          (loop $pixel
            (br_if $done (i32.ge_u (local.get $k) (local.get $len)))
            (local.set $a (local.get $acc))
            (if (i32.lt_u (i32.add (local.get $k) (i32.const 1)) (local.get $len))
              (then
                (loop $vec2
                  (local.set $m4 (v128.load offset=16 (local.get $a)))
                  (local.set $d4 (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $m4)))
                  (local.set $e4
                    (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $ps)) (local.get $dt))
                      (local.get $m4)))
                  (v128.store offset=32 (local.get $a)
                    (f32x4.add (v128.load offset=32 (local.get $a))
                      (f32x4.add (f32x4.mul (local.get $d4) (local.get $d4))
                        (f32x4.mul (local.get $e4) (local.get $e4)))))
                  (local.set $p (i32.add (local.get $p) (local.get $es)))
                  (local.set $a (i32.add (local.get $a) (i32.const 48)))
                  (br_if $vec2 (i32.lt_u (local.get $a) (local.get $accEnd))))
                (local.set $p (i32.add (local.get $p) (local.get $ps)))
                (local.set $k (i32.add (local.get $k) (i32.const 2)))
                (br $pixel)))
            (loop $vec
              (local.set $d4
                (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (v128.load offset=16 (local.get $a))))
              (v128.store offset=32 (local.get $a)
                (f32x4.add (v128.load offset=32 (local.get $a))
                  (f32x4.mul (local.get $d4) (local.get $d4))))
              (local.set $p (i32.add (local.get $p) (local.get $es)))
              (local.set $a (i32.add (local.get $a) (i32.const 48)))
              (br_if $vec (i32.lt_u (local.get $a) (local.get $accEnd))))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $pixel)))
        ;; Merge the run into each channel's (sum, m2); channel c's run values at
        ;; acc + 48 * (c / 4) + 4 * (c % 4) (+ 16 the mean, + 32 the squared deviations).
        (local.set $c (i32.const 0))
        (block $done
          (loop $chan
            (br_if $done (i32.ge_u (local.get $c) (local.get $C)))
            (local.set $f
              (i32.add (local.get $acc)
                (i32.add (i32.mul (i32.shr_u (local.get $c) (i32.const 2)) (i32.const 48))
                  (i32.shl (i32.and (local.get $c) (i32.const 3)) (i32.const 2)))))
            (local.set $sb (f64.promote_f32 (f32.load (local.get $f))))
            (local.set $d
              (f64.sub (f64.div (local.get $sb) (local.get $nb))
                (f64.promote_f32 (f32.load offset=16 (local.get $f)))))
            (local.set $qb
              (f64.max (f64.const 0)
                (f64.sub (f64.promote_f32 (f32.load offset=32 (local.get $f)))
                  (f64.mul (local.get $nb) (f64.mul (local.get $d) (local.get $d))))))
            (local.set $p (i32.shl (local.get $c) (i32.const 3)))
            (local.set $s (f64.load (i32.add (local.get $o1) (local.get $p))))
            (if (f64.eq (local.get $n) (f64.const 0))
              (then (f64.store (i32.add (local.get $o2) (local.get $p)) (local.get $qb)))
              (else
                (local.set $d
                  (f64.sub (f64.div (local.get $sb) (local.get $nb)) (f64.div (local.get $s) (local.get $n))))
                (f64.store (i32.add (local.get $o2) (local.get $p))
                  (f64.add
                    (f64.add (f64.load (i32.add (local.get $o2) (local.get $p))) (local.get $qb))
                    (f64.div (f64.mul (f64.mul (local.get $d) (local.get $d))
                      (f64.mul (local.get $n) (local.get $nb)))
                      (f64.add (local.get $n) (local.get $nb)))))))
            (f64.store (i32.add (local.get $o1) (local.get $p)) (f64.add (local.get $s) (local.get $sb)))
            (local.set $c (i32.add (local.get $c) (i32.const 1)))
            (br $chan)))
        (local.set $n (f64.add (local.get $n) (local.get $nb)))
        (local.set $q (i32.add (local.get $q) (local.get $len)))
        (br $run))))

  ;; Sums of one item, pixels: per channel c, sum(dy) at o1 + 8c and sum(dy * (x - mean[c]))
  ;; at o2 + 8c (float64), with the float32 means at k; `acc` holds 3C float32 of scratch,
  ;; interleaved per four channels as bn_stats_pix's (48 bytes each: the run's two sums and
  ;; a copy of the means).
  (func (export "bn_sums_pix")
    (param $dy i32) (param $x i32) (param $C i32) (param $dt i32) (param $pix i32) (param $k i32)
    (param $o1 i32) (param $o2 i32) (param $acc i32)
    (local $q i32) (local $len i32) (local $j i32) (local $c i32) (local $p i32) (local $r i32)
    (local $es i32) (local $ps i32) (local $a i32) (local $accEnd i32)
    (local $e v128) (local $d v128) (local $e2 v128) (local $d2 v128) (local $m v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $ps (i32.shl (local.get $C) (call $shift (local.get $dt))))
    (local.set $accEnd (i32.add (local.get $acc) (i32.mul (local.get $C) (i32.const 12))))
    (call $bn_zero64 (local.get $o1) (local.get $C))
    (call $bn_zero64 (local.get $o2) (local.get $C))
    ;; The means beside the run sums.
    (local.set $a (local.get $acc))
    (local.set $p (local.get $k))
    (loop $vec
      (v128.store offset=32 (local.get $a) (v128.load (local.get $p)))
      (local.set $p (i32.add (local.get $p) (i32.const 16)))
      (local.set $a (i32.add (local.get $a) (i32.const 48)))
      (br_if $vec (i32.lt_u (local.get $a) (local.get $accEnd))))
    (block $runsDone
      (loop $run
        (br_if $runsDone (i32.ge_u (local.get $q) (local.get $pix)))
        (local.set $len (i32.sub (local.get $pix) (local.get $q)))
        (if (i32.gt_u (local.get $len) (i32.const 128)) (then (local.set $len (i32.const 128))))
        (local.set $a (local.get $acc))
        (loop $vec
          (v128.store (local.get $a) (v128.const i64x2 0 0))
          (v128.store offset=16 (local.get $a) (v128.const i64x2 0 0))
          (local.set $a (i32.add (local.get $a) (i32.const 48)))
          (br_if $vec (i32.lt_u (local.get $a) (local.get $accEnd))))
        (local.set $j (i32.const 0))
        (local.set $p (i32.add (local.get $dy) (i32.mul (local.get $q) (local.get $ps))))
        (local.set $r (i32.add (local.get $x) (i32.mul (local.get $q) (local.get $ps))))
        (block $done
          (loop $pixel
            (br_if $done (i32.ge_u (local.get $j) (local.get $len)))
            (local.set $a (local.get $acc))
            ;; Two pixels a step when there are two: their terms added at once.
            (if (i32.lt_u (i32.add (local.get $j) (i32.const 1)) (local.get $len))
              (then
                (loop $vec2
                  (local.set $m (v128.load offset=32 (local.get $a)))
                  (local.set $e (call $ld4 (local.get $p) (local.get $dt)))
                  (local.set $d (f32x4.sub (call $ld4 (local.get $r) (local.get $dt)) (local.get $m)))
                  (local.set $e2 (call $ld4 (i32.add (local.get $p) (local.get $ps)) (local.get $dt)))
                  (local.set $d2
                    (f32x4.sub (call $ld4 (i32.add (local.get $r) (local.get $ps)) (local.get $dt))
                      (local.get $m)))
                  (v128.store (local.get $a)
                    (f32x4.add (v128.load (local.get $a)) (f32x4.add (local.get $e) (local.get $e2))))
                  (v128.store offset=16 (local.get $a)
                    (f32x4.add (v128.load offset=16 (local.get $a))
                      (f32x4.add (f32x4.mul (local.get $e) (local.get $d))
                        (f32x4.mul (local.get $e2) (local.get $d2)))))
                  (local.set $p (i32.add (local.get $p) (local.get $es)))
                  (local.set $r (i32.add (local.get $r) (local.get $es)))
                  (local.set $a (i32.add (local.get $a) (i32.const 48)))
                  (br_if $vec2 (i32.lt_u (local.get $a) (local.get $accEnd))))
                (local.set $p (i32.add (local.get $p) (local.get $ps)))
                (local.set $r (i32.add (local.get $r) (local.get $ps)))
                (local.set $j (i32.add (local.get $j) (i32.const 2)))
                (br $pixel)))
            (loop $vec
              (local.set $e (call $ld4 (local.get $p) (local.get $dt)))
              (local.set $d
                (f32x4.sub (call $ld4 (local.get $r) (local.get $dt)) (v128.load offset=32 (local.get $a))))
              (v128.store (local.get $a) (f32x4.add (v128.load (local.get $a)) (local.get $e)))
              (v128.store offset=16 (local.get $a)
                (f32x4.add (v128.load offset=16 (local.get $a)) (f32x4.mul (local.get $e) (local.get $d))))
              (local.set $p (i32.add (local.get $p) (local.get $es)))
              (local.set $r (i32.add (local.get $r) (local.get $es)))
              (local.set $a (i32.add (local.get $a) (i32.const 48)))
              (br_if $vec (i32.lt_u (local.get $a) (local.get $accEnd))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $pixel)))
        ;; Add the run's float32 sums to the float64 outputs, two channels at a time (channel
        ;; c's at acc + 48 * (c / 4) + 4 * (c % 4), the second sum 16 bytes on).
        (local.set $c (i32.const 0))
        (local.set $p (i32.const 0))
        (local.set $a (local.get $acc))
        (loop $vec
          (v128.store (i32.add (local.get $o1) (local.get $p))
            (f64x2.add (v128.load (i32.add (local.get $o1) (local.get $p)))
              (f64x2.promote_low_f32x4 (v128.load64_zero (local.get $a)))))
          (v128.store (i32.add (local.get $o2) (local.get $p))
            (f64x2.add (v128.load (i32.add (local.get $o2) (local.get $p)))
              (f64x2.promote_low_f32x4 (v128.load64_zero offset=16 (local.get $a)))))
          (v128.store offset=16 (i32.add (local.get $o1) (local.get $p))
            (f64x2.add (v128.load offset=16 (i32.add (local.get $o1) (local.get $p)))
              (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (local.get $a)))))
          (v128.store offset=16 (i32.add (local.get $o2) (local.get $p))
            (f64x2.add (v128.load offset=16 (i32.add (local.get $o2) (local.get $p)))
              (f64x2.promote_low_f32x4 (v128.load64_zero offset=24 (local.get $a)))))
          (local.set $p (i32.add (local.get $p) (i32.const 32)))
          (local.set $a (i32.add (local.get $a) (i32.const 48)))
          (br_if $vec (i32.lt_u (local.get $a) (local.get $accEnd))))
        (local.set $q (i32.add (local.get $q) (local.get $len)))
        (br $run))))

  ;; A write of kind `op` over one item, pixels: the float32 constants interleaved per four
  ;; channels at k (channels 4i..4i+3: k0 at k + 64i, k1 at + 16, k2 at + 32, k3 at + 48).
  ;; Two pixels a step (their constants loaded once), the constants' pointer back at k at
  ;; each pair: immediate offsets from moving pointers, as the rows' write has. This write is
  ;; bound by its instruction count: per-channel arrays at k + 4jC, indexed per vector, cost
  ;; it twice the rows' time per element.
  (func $bn_write_pix
    (param $op i32) (param $dy i32) (param $x i32) (param $o i32) (param $C i32) (param $dt i32)
    (param $pix i32) (param $k i32)
    (local $j i32) (local $es i32) (local $ps i32) (local $kEnd i32) (local $kp i32)
    (local $e v128) (local $v v128) (local $e2 v128) (local $v2 v128)
    (local $k0 v128) (local $k1 v128) (local $k2 v128) (local $k3 v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $ps (i32.shl (local.get $C) (call $shift (local.get $dt))))
    (local.set $kEnd (i32.add (local.get $k) (i32.shl (local.get $C) (i32.const 4))))
    (block $done
      (loop $pixel
        (br_if $done (i32.ge_u (local.get $j) (local.get $pix)))
        (local.set $kp (local.get $k))
        (if (i32.lt_u (i32.add (local.get $j) (i32.const 1)) (local.get $pix))
          (then
            (loop $vec2
              (local.set $k0 (v128.load (local.get $kp)))
              (local.set $k1 (v128.load offset=16 (local.get $kp)))
              (local.set $k2 (v128.load offset=32 (local.get $kp)))
              (if (i32.eq (local.get $op) (i32.const 1))
                (then (local.set $k3 (v128.load offset=48 (local.get $kp)))))
              (if (i32.ne (local.get $op) (i32.const 0))
                (then
                  (local.set $e (call $ld4 (local.get $dy) (local.get $dt)))
                  (local.set $e2 (call $ld4 (i32.add (local.get $dy) (local.get $ps)) (local.get $dt)))))
              (if (i32.ne (local.get $op) (i32.const 2))
                (then
                  (local.set $v (call $ld4 (local.get $x) (local.get $dt)))
                  (local.set $v2 (call $ld4 (i32.add (local.get $x) (local.get $ps)) (local.get $dt)))))
              (call $rf_st4 (local.get $o) (local.get $dt)
                (call $bn_value (local.get $op) (local.get $e) (local.get $v) (local.get $k0)
                  (local.get $k1) (local.get $k2) (local.get $k3)))
              (call $rf_st4 (i32.add (local.get $o) (local.get $ps)) (local.get $dt)
                (call $bn_value (local.get $op) (local.get $e2) (local.get $v2) (local.get $k0)
                  (local.get $k1) (local.get $k2) (local.get $k3)))
              (local.set $dy (i32.add (local.get $dy) (local.get $es)))
              (local.set $x (i32.add (local.get $x) (local.get $es)))
              (local.set $o (i32.add (local.get $o) (local.get $es)))
              (local.set $kp (i32.add (local.get $kp) (i32.const 64)))
              (br_if $vec2 (i32.lt_u (local.get $kp) (local.get $kEnd))))
            ;; Past the pair's second pixel.
            (local.set $dy (i32.add (local.get $dy) (local.get $ps)))
            (local.set $x (i32.add (local.get $x) (local.get $ps)))
            (local.set $o (i32.add (local.get $o) (local.get $ps)))
            (local.set $j (i32.add (local.get $j) (i32.const 2)))
            (br $pixel)))
        (loop $vec
          (if (i32.ne (local.get $op) (i32.const 0))
            (then (local.set $e (call $ld4 (local.get $dy) (local.get $dt)))))
          (if (i32.ne (local.get $op) (i32.const 2))
            (then (local.set $v (call $ld4 (local.get $x) (local.get $dt)))))
          (call $rf_st4 (local.get $o) (local.get $dt)
            (call $bn_value (local.get $op) (local.get $e) (local.get $v)
              (v128.load (local.get $kp)) (v128.load offset=16 (local.get $kp))
              (v128.load offset=32 (local.get $kp)) (v128.load offset=48 (local.get $kp))))
          (local.set $dy (i32.add (local.get $dy) (local.get $es)))
          (local.set $x (i32.add (local.get $x) (local.get $es)))
          (local.set $o (i32.add (local.get $o) (local.get $es)))
          (local.set $kp (i32.add (local.get $kp) (i32.const 64)))
          (br_if $vec (i32.lt_u (local.get $kp) (local.get $kEnd))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $pixel))))

  (func (export "bn_norm_pix")
    (param $x i32) (param $o i32) (param $C i32) (param $dt i32) (param $pix i32) (param $k i32)
    (call $bn_write_pix (i32.const 0) (local.get $x) (local.get $x) (local.get $o) (local.get $C)
      (local.get $dt) (local.get $pix) (local.get $k)))

  (func (export "bn_grad_pix")
    (param $dy i32) (param $x i32) (param $o i32) (param $C i32) (param $dt i32) (param $pix i32)
    (param $k i32)
    (call $bn_write_pix (i32.const 1) (local.get $dy) (local.get $x) (local.get $o) (local.get $C)
      (local.get $dt) (local.get $pix) (local.get $k)))

  (func (export "bn_scale_pix")
    (param $dy i32) (param $o i32) (param $C i32) (param $dt i32) (param $pix i32) (param $k i32)
    (call $bn_write_pix (i32.const 2) (local.get $dy) (local.get $dy) (local.get $o) (local.get $C)
      (local.get $dt) (local.get $pix) (local.get $k)))
)
