;; The inner loops of bn_stats_pix (channel_pixels.wat) over channels-last pixels, a block
;; of channel vectors at a time: each vector's running sums stay in registers while the loop
;; walks the block's column down the pixels (`len` pixels, `ps` bytes apart; the block's
;; `es`-byte vectors side by side in each), instead of being loaded and stored in memory for
;; every vector of every pixel. Each vector's terms are added in a fixed order (two pixels a
;; step, their terms added at once, then a last single pixel). The sums are of the differences
;; from the run's first pixel (its pivots, row_norms.wat's $rf_pivot4, as $rf_mean64 takes
;; them), so that float32 lanes do not drift on data far from zero. bn_stats_pix's scratch
;; holds 64 bytes per four channels: the sums, the means, the squared deviations, the pivots.
;; Spliced before channel_pixels.wat.
(module
  ;; Statistics, pass 1, four vectors at p: their sums over the run about their pivots, at a,
  ;; a + 64, a + 128 and a + 192, the pivots 48 bytes after each.
  (func $px_sums4
    (param $p i32) (param $len i32) (param $ps i32) (param $es i32) (param $dt i32) (param $a i32)
    (local $j i32) (local $q i32) (local $es2 i32) (local $es3 i32)
    (local $s0 v128) (local $s1 v128) (local $s2 v128) (local $s3 v128)
    (local $v0 v128) (local $v1 v128) (local $v2 v128) (local $v3 v128)
    (local.set $es2 (i32.shl (local.get $es) (i32.const 1)))
    (local.set $es3 (i32.add (local.get $es2) (local.get $es)))
    (local.set $v0 (call $rf_pivot4 (call $ld4 (local.get $p) (local.get $dt))))
    (local.set $v1 (call $rf_pivot4 (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt))))
    (local.set $v2 (call $rf_pivot4 (call $ld4 (i32.add (local.get $p) (local.get $es2)) (local.get $dt))))
    (local.set $v3 (call $rf_pivot4 (call $ld4 (i32.add (local.get $p) (local.get $es3)) (local.get $dt))))
    (local.set $q (i32.add (local.get $p) (local.get $ps)))
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.ge_u (i32.add (local.get $j) (i32.const 1)) (local.get $len)))
        (local.set $s0 (f32x4.add (local.get $s0)
          (f32x4.add (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $v0))
            (f32x4.sub (call $ld4 (local.get $q) (local.get $dt)) (local.get $v0)))))
        (local.set $s1 (f32x4.add (local.get $s1)
          (f32x4.add
            (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt))
              (local.get $v1))
            (f32x4.sub (call $ld4 (i32.add (local.get $q) (local.get $es)) (local.get $dt))
              (local.get $v1)))))
        (local.set $s2 (f32x4.add (local.get $s2)
          (f32x4.add
            (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es2)) (local.get $dt))
              (local.get $v2))
            (f32x4.sub (call $ld4 (i32.add (local.get $q) (local.get $es2)) (local.get $dt))
              (local.get $v2)))))
        (local.set $s3 (f32x4.add (local.get $s3)
          (f32x4.add
            (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es3)) (local.get $dt))
              (local.get $v3))
            (f32x4.sub (call $ld4 (i32.add (local.get $q) (local.get $es3)) (local.get $dt))
              (local.get $v3)))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $ps) (i32.const 1))))
        (local.set $q (i32.add (local.get $q) (i32.shl (local.get $ps) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 2)))
        (br $pair)))
    (if (i32.lt_u (local.get $j) (local.get $len))
      (then
        (local.set $s0 (f32x4.add (local.get $s0)
          (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $v0))))
        (local.set $s1 (f32x4.add (local.get $s1)
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt))
            (local.get $v1))))
        (local.set $s2 (f32x4.add (local.get $s2)
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es2)) (local.get $dt))
            (local.get $v2))))
        (local.set $s3 (f32x4.add (local.get $s3)
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es3)) (local.get $dt))
            (local.get $v3))))))
    (v128.store (local.get $a) (local.get $s0))
    (v128.store offset=64 (local.get $a) (local.get $s1))
    (v128.store offset=128 (local.get $a) (local.get $s2))
    (v128.store offset=192 (local.get $a) (local.get $s3))
    (v128.store offset=48 (local.get $a) (local.get $v0))
    (v128.store offset=112 (local.get $a) (local.get $v1))
    (v128.store offset=176 (local.get $a) (local.get $v2))
    (v128.store offset=240 (local.get $a) (local.get $v3)))

  ;; Statistics, pass 1, one vector at p (the last one to three of a block): its sum about its
  ;; pivot at a, the pivot at a + 48.
  (func $px_sums1
    (param $p i32) (param $len i32) (param $ps i32) (param $dt i32) (param $a i32)
    (local $j i32) (local $s0 v128) (local $v0 v128)
    (local.set $v0 (call $rf_pivot4 (call $ld4 (local.get $p) (local.get $dt))))
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.ge_u (i32.add (local.get $j) (i32.const 1)) (local.get $len)))
        (local.set $s0 (f32x4.add (local.get $s0)
          (f32x4.add (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $v0))
            (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $ps)) (local.get $dt))
              (local.get $v0)))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $ps) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 2)))
        (br $pair)))
    (if (i32.lt_u (local.get $j) (local.get $len))
      (then (local.set $s0 (f32x4.add (local.get $s0)
        (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $v0))))))
    (v128.store (local.get $a) (local.get $s0))
    (v128.store offset=48 (local.get $a) (local.get $v0)))

  ;; d * d + e * e (two pixels' squared deviations, added at once).
  (func $px_sq2 (param $d v128) (param $e v128) (result v128)
    (f32x4.add (f32x4.mul (local.get $d) (local.get $d)) (f32x4.mul (local.get $e) (local.get $e))))

  ;; Statistics, pass 2, four vectors at p: the squared deviations from the run's means (at
  ;; a + 16 + 64i), summed at a + 32 + 64i.
  (func $px_squares4
    (param $p i32) (param $len i32) (param $ps i32) (param $es i32) (param $dt i32) (param $a i32)
    (local $j i32) (local $q i32) (local $es2 i32) (local $es3 i32) (local $d v128) (local $e v128)
    (local $m0 v128) (local $m1 v128) (local $m2 v128) (local $m3 v128)
    (local $s0 v128) (local $s1 v128) (local $s2 v128) (local $s3 v128)
    (local.set $m0 (v128.load offset=16 (local.get $a)))
    (local.set $m1 (v128.load offset=80 (local.get $a)))
    (local.set $m2 (v128.load offset=144 (local.get $a)))
    (local.set $m3 (v128.load offset=208 (local.get $a)))
    (local.set $es2 (i32.shl (local.get $es) (i32.const 1)))
    (local.set $es3 (i32.add (local.get $es2) (local.get $es)))
    (local.set $q (i32.add (local.get $p) (local.get $ps)))
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.ge_u (i32.add (local.get $j) (i32.const 1)) (local.get $len)))
        (local.set $d (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $m0)))
        (local.set $e (f32x4.sub (call $ld4 (local.get $q) (local.get $dt)) (local.get $m0)))
        (local.set $s0 (f32x4.add (local.get $s0)
          (call $px_sq2 (local.get $d) (local.get $e))))
        (local.set $d
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt))
            (local.get $m1)))
        (local.set $e
          (f32x4.sub (call $ld4 (i32.add (local.get $q) (local.get $es)) (local.get $dt))
            (local.get $m1)))
        (local.set $s1 (f32x4.add (local.get $s1)
          (call $px_sq2 (local.get $d) (local.get $e))))
        (local.set $d (f32x4.sub
          (call $ld4 (i32.add (local.get $p) (local.get $es2)) (local.get $dt))
          (local.get $m2)))
        (local.set $e (f32x4.sub
          (call $ld4 (i32.add (local.get $q) (local.get $es2)) (local.get $dt))
          (local.get $m2)))
        (local.set $s2 (f32x4.add (local.get $s2)
          (call $px_sq2 (local.get $d) (local.get $e))))
        (local.set $d (f32x4.sub
          (call $ld4 (i32.add (local.get $p) (local.get $es3)) (local.get $dt))
          (local.get $m3)))
        (local.set $e (f32x4.sub
          (call $ld4 (i32.add (local.get $q) (local.get $es3)) (local.get $dt))
          (local.get $m3)))
        (local.set $s3 (f32x4.add (local.get $s3)
          (call $px_sq2 (local.get $d) (local.get $e))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $ps) (i32.const 1))))
        (local.set $q (i32.add (local.get $q) (i32.shl (local.get $ps) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 2)))
        (br $pair)))
    (if (i32.lt_u (local.get $j) (local.get $len))
      (then
        (local.set $d (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $m0)))
        (local.set $s0 (f32x4.add (local.get $s0) (f32x4.mul (local.get $d) (local.get $d))))
        (local.set $d
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt))
            (local.get $m1)))
        (local.set $s1 (f32x4.add (local.get $s1) (f32x4.mul (local.get $d) (local.get $d))))
        (local.set $d (f32x4.sub
          (call $ld4 (i32.add (local.get $p) (local.get $es2)) (local.get $dt))
          (local.get $m2)))
        (local.set $s2 (f32x4.add (local.get $s2) (f32x4.mul (local.get $d) (local.get $d))))
        (local.set $d (f32x4.sub
          (call $ld4 (i32.add (local.get $p) (local.get $es3)) (local.get $dt))
          (local.get $m3)))
        (local.set $s3 (f32x4.add (local.get $s3) (f32x4.mul (local.get $d) (local.get $d))))))
    (v128.store offset=32 (local.get $a) (local.get $s0))
    (v128.store offset=96 (local.get $a) (local.get $s1))
    (v128.store offset=160 (local.get $a) (local.get $s2))
    (v128.store offset=224 (local.get $a) (local.get $s3)))

  ;; Statistics, pass 2, one vector at p: its squared deviations from the mean at a + 16,
  ;; summed at a + 32.
  (func $px_squares1
    (param $p i32) (param $len i32) (param $ps i32) (param $dt i32) (param $a i32)
    (local $j i32) (local $d v128) (local $e v128) (local $m0 v128) (local $s0 v128)
    (local.set $m0 (v128.load offset=16 (local.get $a)))
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.ge_u (i32.add (local.get $j) (i32.const 1)) (local.get $len)))
        (local.set $d (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $m0)))
        (local.set $e
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $ps)) (local.get $dt))
            (local.get $m0)))
        (local.set $s0 (f32x4.add (local.get $s0)
          (call $px_sq2 (local.get $d) (local.get $e))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $ps) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 2)))
        (br $pair)))
    (if (i32.lt_u (local.get $j) (local.get $len))
      (then
        (local.set $d (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $m0)))
        (local.set $s0 (f32x4.add (local.get $s0) (f32x4.mul (local.get $d) (local.get $d))))))
    (v128.store offset=32 (local.get $a) (local.get $s0)))

  ;; Both passes of bn_stats_pix over one run: `len` pixels at x (byte address of the run's
  ;; first), C channels (a multiple of 4) of `es`-byte vectors, `ps` bytes a pixel; the
  ;; scratch at acc (64 bytes per four channels: sums about the pivots, means, squared
  ;; deviations, pivots). The means are pivot + sum / len, in float32.
  (func $px_stats_run
    (param $x i32) (param $len i32) (param $C i32) (param $ps i32) (param $es i32) (param $dt i32)
    (param $acc i32) (param $cached i32)
    (local $v i32) (local $nv i32) (local $a i32) (local $accEnd i32)
    (local.set $nv (i32.shr_u (local.get $C) (i32.const 2)))
    ;; Unless the caller expects the data in the caches, the run's lines in order first (the
    ;; value read is stored in the scratch, which the sums overwrite): from memory, the block
    ;; loops' column order alone ran 10-80% slower; in the caches, the reads cost a tenth.
    (if (i32.eqz (local.get $cached))
      (then
        (i32.store (local.get $acc)
          (call $px_touch (local.get $x) (i32.mul (local.get $len) (local.get $ps))))))
    (local.set $accEnd (i32.add (local.get $acc) (i32.mul (local.get $nv) (i32.const 64))))
    (block $blocks
      (loop $block
        (br_if $blocks (i32.gt_u (i32.add (local.get $v) (i32.const 4)) (local.get $nv)))
        (call $px_sums4 (i32.add (local.get $x) (i32.mul (local.get $v) (local.get $es)))
          (local.get $len) (local.get $ps) (local.get $es) (local.get $dt)
          (i32.add (local.get $acc) (i32.mul (local.get $v) (i32.const 64))))
        (local.set $v (i32.add (local.get $v) (i32.const 4)))
        (br $block)))
    (block $ones
      (loop $one
        (br_if $ones (i32.ge_u (local.get $v) (local.get $nv)))
        (call $px_sums1 (i32.add (local.get $x) (i32.mul (local.get $v) (local.get $es)))
          (local.get $len) (local.get $ps) (local.get $dt)
          (i32.add (local.get $acc) (i32.mul (local.get $v) (i32.const 64))))
        (local.set $v (i32.add (local.get $v) (i32.const 1)))
        (br $one)))
    ;; The run's float32 means.
    (local.set $a (local.get $acc))
    (loop $vec
      (v128.store offset=16 (local.get $a)
        (f32x4.add (v128.load offset=48 (local.get $a))
          (f32x4.div (v128.load (local.get $a)) (f32x4.splat (f32.convert_i32_u (local.get $len))))))
      (local.set $a (i32.add (local.get $a) (i32.const 64)))
      (br_if $vec (i32.lt_u (local.get $a) (local.get $accEnd))))
    (local.set $v (i32.const 0))
    (block $blocks
      (loop $block
        (br_if $blocks (i32.gt_u (i32.add (local.get $v) (i32.const 4)) (local.get $nv)))
        (call $px_squares4 (i32.add (local.get $x) (i32.mul (local.get $v) (local.get $es)))
          (local.get $len) (local.get $ps) (local.get $es) (local.get $dt)
          (i32.add (local.get $acc) (i32.mul (local.get $v) (i32.const 64))))
        (local.set $v (i32.add (local.get $v) (i32.const 4)))
        (br $block)))
    (block $ones
      (loop $one
        (br_if $ones (i32.ge_u (local.get $v) (local.get $nv)))
        (call $px_squares1 (i32.add (local.get $x) (i32.mul (local.get $v) (local.get $es)))
          (local.get $len) (local.get $ps) (local.get $dt)
          (i32.add (local.get $acc) (i32.mul (local.get $v) (i32.const 64))))
        (local.set $v (i32.add (local.get $v) (i32.const 1)))
        (br $one))))

  ;; The OR of one word of each 64-byte line of [p, p + bytes), read in order: a run's lines
  ;; come into the cache by the hardware's sequential prefetch before the block loops read
  ;; them a column at a time, a stride it does not follow from memory. The caller stores the
  ;; result (V8 drops loads whose values go unused).
  (func $px_touch (param $p i32) (param $bytes i32) (result i32)
    (local $end i32) (local $t i32)
    (local.set $end (i32.add (local.get $p) (local.get $bytes)))
    (block $done
      (loop $line
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $t (i32.or (local.get $t) (i32.load (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br $line)))
    (local.get $t))
)
