;; The BatchNorm family's kernels over dense channels-last pixels (src/backends/cpu/kernels/
;; channel_stages.ts drives them): per-channel statistics, sums and writes of `pix` consecutive
;; pixels of C channels each (C a multiple of 4), with the numerics of channel_norms.wat, whose
;; helpers ($bn_value, $bn_zero64) and row_sums.wat's they use. Spliced after channel_norms.wat.
(module
  ;; Statistics of one item, pixels: per channel c, the sum at o1 + 8c and the m2 about the
  ;; item's mean at o2 + 8c (float64); `acc` holds 4C float32 of scratch, interleaved per four
  ;; channels (64 bytes each: run sums about the run's pivots, the centre of the run's squares,
  ;; the squares, the pivots: channel_pixel_blocks.wat), which
  ;; channel_pixel_blocks.wat's loops fill per run of up to 128 pixels (float32 within a run,
  ;; merged into float64 across runs). `cached` 1: the caller expects the data in the caches
  ;; (the same bits; kernels/channel_stages.ts CACHED_CALL_MAX_BYTES).
  ;; float16 is taken first with its elements loaded as finite (code 5), and again with the
  ;; full loads only when a channel's moments leave room for an Inf or a NaN read so: every
  ;; element lies within sqrt(m2) of its channel's mean (row_sums.wat $rf_moments says why).
  (func (export "bn_stats_pix")
    (param $x i32) (param $C i32) (param $dt i32) (param $pix i32) (param $o1 i32) (param $o2 i32)
    (param $acc i32) (param $cached i32)
    (local $c i32) (local $n f64)
    (if (call $finite_first (local.get $dt))
      (then
        (call $bn_stats_pix_as (local.get $x) (local.get $C) (i32.const 5) (local.get $pix)
          (local.get $o1) (local.get $o2) (local.get $acc) (local.get $cached))
        (local.set $n (f64.convert_i32_u (local.get $pix)))
        (block $special
          (loop $chan
            (br_if $special
              (f64.ge
                (f64.add
                  (f64.abs (f64.div (f64.load (local.get $o1)) (local.get $n)))
                  (f64.sqrt (f64.load (local.get $o2))))
                (f64.const 65504)))
            (local.set $o1 (i32.add (local.get $o1) (i32.const 8)))
            (local.set $o2 (i32.add (local.get $o2) (i32.const 8)))
            (local.set $c (i32.add (local.get $c) (i32.const 1)))
            (br_if $chan (i32.lt_u (local.get $c) (local.get $C)))
            (return)))
        (local.set $o1 (i32.sub (local.get $o1) (i32.shl (local.get $c) (i32.const 3))))
        (local.set $o2 (i32.sub (local.get $o2) (i32.shl (local.get $c) (i32.const 3))))))
    (call $bn_stats_pix_as (local.get $x) (local.get $C) (local.get $dt) (local.get $pix)
      (local.get $o1) (local.get $o2) (local.get $acc) (local.get $cached)))

  ;; bn_stats_pix with the elements loaded as code dt.
  (func $bn_stats_pix_as
    (param $x i32) (param $C i32) (param $dt i32) (param $pix i32) (param $o1 i32) (param $o2 i32)
    (param $acc i32) (param $cached i32)
    (local $q i32) (local $len i32) (local $c i32) (local $p i32) (local $es i32) (local $ps i32)
    (local $f i32)
    (local $n f64) (local $nb f64) (local $sb f64) (local $qb f64) (local $d f64) (local $s f64)
    (local $mean f64)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $ps (i32.shl (local.get $C) (call $shift (local.get $dt))))
    (call $bn_zero64 (local.get $o1) (local.get $C))
    (call $bn_zero64 (local.get $o2) (local.get $C))
    (block $runsDone
      (loop $run
        (br_if $runsDone (i32.ge_u (local.get $q) (local.get $pix)))
        (local.set $len (i32.sub (local.get $pix) (local.get $q)))
        (if (i32.gt_u (local.get $len) (i32.const 128)) (then (local.set $len (i32.const 128))))
        (local.set $nb (f64.convert_i32_u (local.get $len)))
        ;; The run's per-channel sums, float32 means and squared deviations from them
        ;; (channel_pixel_blocks.wat, a block of channels at a time).
        (call $px_stats_run (i32.add (local.get $x) (i32.mul (local.get $q) (local.get $ps)))
          (local.get $len) (local.get $C) (local.get $ps) (local.get $es) (local.get $dt)
          (local.get $acc) (local.get $cached))
        ;; Merge the run into each channel's (sum, m2); channel c's run values at
        ;; acc + 64 * (c / 4) + 4 * (c % 4) (the sum about the pivot, + 16 the centre of the
        ;; squares: the pivot, or the run's float32 mean, + 32 the squares, + 48 the pivot).
        (local.set $c (i32.const 0))
        (block $done
          (loop $chan
            (br_if $done (i32.ge_u (local.get $c) (local.get $C)))
            (local.set $f
              (i32.add (local.get $acc)
                (i32.add (i32.mul (i32.shr_u (local.get $c) (i32.const 2)) (i32.const 64))
                  (i32.shl (i32.and (local.get $c) (i32.const 3)) (i32.const 2)))))
            (local.set $mean
              (f64.add (f64.promote_f32 (f32.load offset=48 (local.get $f)))
                (f64.div (f64.promote_f32 (f32.load (local.get $f))) (local.get $nb))))
            (local.set $sb (f64.mul (local.get $mean) (local.get $nb)))
            ;; The squared deviations, taken about the centre, recentred on the mean.
            (local.set $qb
              (call $rf_recentre (f64.promote_f32 (f32.load offset=32 (local.get $f))) (local.get $nb)
                (f64.sub (local.get $mean) (f64.promote_f32 (f32.load offset=16 (local.get $f))))))
            (local.set $p (i32.shl (local.get $c) (i32.const 3)))
            (local.set $s (f64.load (i32.add (local.get $o1) (local.get $p))))
            (if (f64.eq (local.get $n) (f64.const 0))
              (then (f64.store (i32.add (local.get $o2) (local.get $p)) (local.get $qb)))
              (else
                (local.set $d (f64.sub (local.get $mean) (f64.div (local.get $s) (local.get $n))))
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
  ;; a copy of the means). `cached` 1: the caller expects the data in the caches, where float32
  ;; data takes four pixels a step where a run has four, with the same bits (faster there,
  ;; slower from memory; kernels/channel_stages.ts CACHED_CALL_MAX_BYTES).
  ;; float16 is summed first with dy and x loaded as finite (code 5), and again with the full
  ;; loads only when the magnitudes' running maximum shows an Inf or a NaN among them (as
  ;; channel_norms.wat $bn_sums_rows_at): the same sums either way.
  (func (export "bn_sums_pix")
    (param $dy i32) (param $x i32) (param $C i32) (param $dt i32) (param $pix i32) (param $k i32)
    (param $o1 i32) (param $o2 i32) (param $acc i32) (param $cached i32)
    (if (call $finite_first (local.get $dt))
      (then
        (call $bn_sums_pix_as (local.get $dy) (local.get $x) (local.get $C) (i32.const 5)
          (local.get $pix) (local.get $k) (local.get $o1) (local.get $o2) (local.get $acc)
          (local.get $cached))
        (if (i32.eqz (global.get $bn_special)) (then (return)))))
    (call $bn_sums_pix_as (local.get $dy) (local.get $x) (local.get $C) (local.get $dt)
      (local.get $pix) (local.get $k) (local.get $o1) (local.get $o2) (local.get $acc)
      (local.get $cached)))

  ;; bn_sums_pix with the elements loaded as code dt; with code 5, $bn_special set ($bn_special_at).
  (func $bn_sums_pix_as
    (param $dy i32) (param $x i32) (param $C i32) (param $dt i32) (param $pix i32) (param $k i32)
    (param $o1 i32) (param $o2 i32) (param $acc i32) (param $cached i32)
    (local $w v128) (local $mx v128)
    (local $q i32) (local $len i32) (local $j i32) (local $c i32) (local $p i32) (local $r i32)
    (local $es i32) (local $ps i32) (local $a i32) (local $accEnd i32)
    (local $e v128) (local $d v128) (local $e2 v128) (local $d2 v128) (local $m v128)
    (local $e3 v128) (local $d3 v128) (local $e4 v128) (local $d4 v128)
    (local $ps2 i32) (local $ps3 i32)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $ps (i32.shl (local.get $C) (call $shift (local.get $dt))))
    (local.set $ps2 (i32.shl (local.get $ps) (i32.const 1)))
    (local.set $ps3 (i32.add (local.get $ps2) (local.get $ps)))
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
            ;; Four pixels a step when there are four: two pairs, each pair's terms added at
            ;; once and the pairs to the run's sums in turn (the bits of two steps of two), with
            ;; one load and store of each sum per four pixels.
            (if (i32.and (i32.and (local.get $cached) (i32.eqz (local.get $dt)))
                  (i32.lt_u (i32.add (local.get $j) (i32.const 3)) (local.get $len)))
              (then
                (loop $vec4
                  (local.set $m (v128.load offset=32 (local.get $a)))
                  (local.set $e (call $ld4 (local.get $p) (local.get $dt)))
                  (local.set $e2 (call $ld4 (i32.add (local.get $p) (local.get $ps)) (local.get $dt)))
                  (local.set $e3 (call $ld4 (i32.add (local.get $p) (local.get $ps2)) (local.get $dt)))
                  (local.set $e4 (call $ld4 (i32.add (local.get $p) (local.get $ps3)) (local.get $dt)))
                  (v128.store (local.get $a)
                    (f32x4.add
                      (f32x4.add (v128.load (local.get $a)) (f32x4.add (local.get $e) (local.get $e2)))
                      (f32x4.add (local.get $e3) (local.get $e4))))
                  (local.set $w (call $ld4 (local.get $r) (local.get $dt)))
                  (local.set $mx (call $bn_peak (local.get $dt) (local.get $mx) (local.get $e) (local.get $w)))
                  (local.set $d (f32x4.sub (local.get $w) (local.get $m)))
                  (local.set $w (call $ld4 (i32.add (local.get $r) (local.get $ps)) (local.get $dt)))
                  (local.set $mx (call $bn_peak (local.get $dt) (local.get $mx) (local.get $e2) (local.get $w)))
                  (local.set $d2 (f32x4.sub (local.get $w) (local.get $m)))
                  (local.set $w (call $ld4 (i32.add (local.get $r) (local.get $ps2)) (local.get $dt)))
                  (local.set $mx (call $bn_peak (local.get $dt) (local.get $mx) (local.get $e3) (local.get $w)))
                  (local.set $d3 (f32x4.sub (local.get $w) (local.get $m)))
                  (local.set $w (call $ld4 (i32.add (local.get $r) (local.get $ps3)) (local.get $dt)))
                  (local.set $mx (call $bn_peak (local.get $dt) (local.get $mx) (local.get $e4) (local.get $w)))
                  (local.set $d4 (f32x4.sub (local.get $w) (local.get $m)))
                  (v128.store offset=16 (local.get $a)
                    (f32x4.add
                      (f32x4.add (v128.load offset=16 (local.get $a))
                        (f32x4.add (f32x4.mul (local.get $e) (local.get $d))
                          (f32x4.mul (local.get $e2) (local.get $d2))))
                      (f32x4.add (f32x4.mul (local.get $e3) (local.get $d3))
                        (f32x4.mul (local.get $e4) (local.get $d4)))))
                  (local.set $p (i32.add (local.get $p) (local.get $es)))
                  (local.set $r (i32.add (local.get $r) (local.get $es)))
                  (local.set $a (i32.add (local.get $a) (i32.const 48)))
                  (br_if $vec4 (i32.lt_u (local.get $a) (local.get $accEnd))))
                (local.set $p (i32.add (local.get $p) (local.get $ps3)))
                (local.set $r (i32.add (local.get $r) (local.get $ps3)))
                (local.set $j (i32.add (local.get $j) (i32.const 4)))
                (br $pixel)))
            ;; Two pixels a step when there are two: their terms added at once.
            (if (i32.lt_u (i32.add (local.get $j) (i32.const 1)) (local.get $len))
              (then
                (loop $vec2
                  (local.set $m (v128.load offset=32 (local.get $a)))
                  (local.set $e (call $ld4 (local.get $p) (local.get $dt)))
                  (local.set $w (call $ld4 (local.get $r) (local.get $dt)))
                  (local.set $mx (call $bn_peak (local.get $dt) (local.get $mx) (local.get $e) (local.get $w)))
                  (local.set $d (f32x4.sub (local.get $w) (local.get $m)))
                  (local.set $e2 (call $ld4 (i32.add (local.get $p) (local.get $ps)) (local.get $dt)))
                  (local.set $w (call $ld4 (i32.add (local.get $r) (local.get $ps)) (local.get $dt)))
                  (local.set $mx (call $bn_peak (local.get $dt) (local.get $mx) (local.get $e2) (local.get $w)))
                  (local.set $d2 (f32x4.sub (local.get $w) (local.get $m)))
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
              (local.set $w (call $ld4 (local.get $r) (local.get $dt)))
              (local.set $mx (call $bn_peak (local.get $dt) (local.get $mx) (local.get $e) (local.get $w)))
              (local.set $d (f32x4.sub (local.get $w) (v128.load offset=32 (local.get $a))))
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
        (br $run)))
    (call $bn_special_at (local.get $dt) (local.get $mx)))

  ;; A write of kind `op` over one item, pixels: the float32 constants interleaved per four
  ;; channels at k (channels 4i..4i+3: k0 at k + 64i, k1 at + 16, k2 at + 32, k3 at + 48).
  ;; Two pixels a step (their constants loaded once), the constants' pointer back at k at
  ;; each pair: immediate offsets from moving pointers, as the rows' write has. This write is
  ;; bound by its instruction count: per-channel arrays at k + 4jC, indexed per vector, cost
  ;; it twice the rows' time per element. Loads as ldt (5: float16 known finite), stores as dt.
  (func $bn_write_pix
    (param $op i32) (param $dy i32) (param $x i32) (param $o i32) (param $C i32) (param $ldt i32)
    (param $dt i32) (param $pix i32) (param $k i32)
    (local $j i32) (local $es i32) (local $ps i32) (local $ps2 i32) (local $ps3 i32)
    (local $kEnd i32) (local $kp i32)
    (local $e v128) (local $v v128) (local $e2 v128) (local $v2 v128)
    (local $e3 v128) (local $v3 v128) (local $e4 v128) (local $v4 v128)
    (local $k0 v128) (local $k1 v128) (local $k2 v128) (local $k3 v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $ps (i32.shl (local.get $C) (call $shift (local.get $dt))))
    (local.set $ps2 (i32.shl (local.get $ps) (i32.const 1)))
    (local.set $ps3 (i32.add (local.get $ps2) (local.get $ps)))
    (local.set $kEnd (i32.add (local.get $k) (i32.shl (local.get $C) (i32.const 4))))
    (block $done
      (loop $pixel
        (br_if $done (i32.ge_u (local.get $j) (local.get $pix)))
        (local.set $kp (local.get $k))
        ;; 16-bit data: four pixels a step when there are four (their conversions, not memory,
        ;; bound these writes). float32 keeps two: four write streams to memory the caches no
        ;; longer hold made its calls 10-50% slower (bench/RESULTS.md, thirteenth session).
        (if (i32.and (i32.ne (local.get $dt) (i32.const 0))
              (i32.lt_u (i32.add (local.get $j) (i32.const 3)) (local.get $pix)))
          (then
            (loop $vec4
              (local.set $k0 (v128.load (local.get $kp)))
              (local.set $k1 (v128.load offset=16 (local.get $kp)))
              (local.set $k2 (v128.load offset=32 (local.get $kp)))
              (if (i32.and (local.get $op) (i32.const 1))
                (then (local.set $k3 (v128.load offset=48 (local.get $kp)))))
              (if (i32.lt_u (i32.sub (local.get $op) (i32.const 1)) (i32.const 2))
                (then
                  (local.set $e (call $ld4 (local.get $dy) (local.get $ldt)))
                  (local.set $e2 (call $ld4 (i32.add (local.get $dy) (local.get $ps)) (local.get $ldt)))
                  (local.set $e3 (call $ld4 (i32.add (local.get $dy) (local.get $ps2)) (local.get $ldt)))
                  (local.set $e4 (call $ld4 (i32.add (local.get $dy) (local.get $ps3)) (local.get $ldt)))))
              (if (i32.ne (local.get $op) (i32.const 2))
                (then
                  (local.set $v (call $ld4 (local.get $x) (local.get $ldt)))
                  (local.set $v2 (call $ld4 (i32.add (local.get $x) (local.get $ps)) (local.get $ldt)))
                  (local.set $v3 (call $ld4 (i32.add (local.get $x) (local.get $ps2)) (local.get $ldt)))
                  (local.set $v4 (call $ld4 (i32.add (local.get $x) (local.get $ps3)) (local.get $ldt)))))
              (call $rf_st4 (local.get $o) (local.get $dt)
                (call $bn_value (local.get $op) (local.get $e) (local.get $v) (local.get $k0)
                  (local.get $k1) (local.get $k2) (local.get $k3)))
              (call $rf_st4 (i32.add (local.get $o) (local.get $ps)) (local.get $dt)
                (call $bn_value (local.get $op) (local.get $e2) (local.get $v2) (local.get $k0)
                  (local.get $k1) (local.get $k2) (local.get $k3)))
              (call $rf_st4 (i32.add (local.get $o) (local.get $ps2)) (local.get $dt)
                (call $bn_value (local.get $op) (local.get $e3) (local.get $v3) (local.get $k0)
                  (local.get $k1) (local.get $k2) (local.get $k3)))
              (call $rf_st4 (i32.add (local.get $o) (local.get $ps3)) (local.get $dt)
                (call $bn_value (local.get $op) (local.get $e4) (local.get $v4) (local.get $k0)
                  (local.get $k1) (local.get $k2) (local.get $k3)))
              (local.set $dy (i32.add (local.get $dy) (local.get $es)))
              (local.set $x (i32.add (local.get $x) (local.get $es)))
              (local.set $o (i32.add (local.get $o) (local.get $es)))
              (local.set $kp (i32.add (local.get $kp) (i32.const 64)))
              (br_if $vec4 (i32.lt_u (local.get $kp) (local.get $kEnd))))
            ;; Past the fourth pixel.
            (local.set $dy (i32.add (local.get $dy) (local.get $ps3)))
            (local.set $x (i32.add (local.get $x) (local.get $ps3)))
            (local.set $o (i32.add (local.get $o) (local.get $ps3)))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $pixel)))
        (if (i32.lt_u (i32.add (local.get $j) (i32.const 1)) (local.get $pix))
          (then
            (loop $vec2
              (local.set $k0 (v128.load (local.get $kp)))
              (local.set $k1 (v128.load offset=16 (local.get $kp)))
              (local.set $k2 (v128.load offset=32 (local.get $kp)))
              (if (i32.and (local.get $op) (i32.const 1))
                (then (local.set $k3 (v128.load offset=48 (local.get $kp)))))
              (if (i32.lt_u (i32.sub (local.get $op) (i32.const 1)) (i32.const 2))
                (then
                  (local.set $e (call $ld4 (local.get $dy) (local.get $ldt)))
                  (local.set $e2 (call $ld4 (i32.add (local.get $dy) (local.get $ps)) (local.get $ldt)))))
              (if (i32.ne (local.get $op) (i32.const 2))
                (then
                  (local.set $v (call $ld4 (local.get $x) (local.get $ldt)))
                  (local.set $v2 (call $ld4 (i32.add (local.get $x) (local.get $ps)) (local.get $ldt)))))
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
          (if (i32.lt_u (i32.sub (local.get $op) (i32.const 1)) (i32.const 2))
            (then (local.set $e (call $ld4 (local.get $dy) (local.get $ldt)))))
          (if (i32.ne (local.get $op) (i32.const 2))
            (then (local.set $v (call $ld4 (local.get $x) (local.get $ldt)))))
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

  ;; $bn_write_pix over an item, its float16 data of code 1 loaded as finite (code 5) when none
  ;; of the elements it reads is an Inf or a NaN (kernels.wat $f16_rows_finite, over the item's
  ;; pix x C elements of dy and of x, the same row for the writes that read one): the same bits.
  (func $bn_write_pix_scanned
    (param $op i32) (param $dy i32) (param $x i32) (param $o i32) (param $C i32) (param $dt i32)
    (param $pix i32) (param $k i32)
    (if (call $f16_rows_finite (local.get $dt) (local.get $dy) (local.get $x)
          (i32.mul (local.get $pix) (local.get $C)))
      (then
        (call $bn_write_pix (local.get $op) (local.get $dy) (local.get $x) (local.get $o)
          (local.get $C) (i32.const 5) (local.get $dt) (local.get $pix) (local.get $k)))
      (else
        (call $bn_write_pix (local.get $op) (local.get $dy) (local.get $x) (local.get $o)
          (local.get $C) (local.get $dt) (local.get $dt) (local.get $pix) (local.get $k)))))

  (func (export "bn_norm_pix")
    (param $x i32) (param $o i32) (param $C i32) (param $dt i32) (param $pix i32) (param $k i32)
    (call $bn_write_pix_scanned (i32.const 0) (local.get $x) (local.get $x) (local.get $o)
      (local.get $C) (local.get $dt) (local.get $pix) (local.get $k)))

  (func (export "bn_grad_pix")
    (param $dy i32) (param $x i32) (param $o i32) (param $C i32) (param $dt i32) (param $pix i32)
    (param $k i32)
    (call $bn_write_pix_scanned (i32.const 1) (local.get $dy) (local.get $x) (local.get $o)
      (local.get $C) (local.get $dt) (local.get $pix) (local.get $k)))

  (func (export "bn_scale_pix")
    (param $dy i32) (param $o i32) (param $C i32) (param $dt i32) (param $pix i32) (param $k i32)
    (call $bn_write_pix_scanned (i32.const 2) (local.get $dy) (local.get $dy) (local.get $o)
      (local.get $C) (local.get $dt) (local.get $pix) (local.get $k)))
)
