;; The inner loops of bn_stats_pix (channel_pixels.wat) over channels-last pixels. Each
;; vector's terms are added in a fixed order (two pixels a step, their terms added at once, then
;; a last single pixel), whichever loop runs: the block loops hold a block of channel vectors'
;; running sums in registers while they walk the block's column down the pixels (`len`
;; pixels, `ps` bytes apart; the block's `es`-byte vectors side by side in each), for pixels
;; of up to a line; wider pixels take the sums in memory order, with the running sums in the
;; scratch ($px_sums_in_order). One pass sums the differences from the run's pivots
;; ($px_pivot: the mean of its first 8 pixels) and their squares, so that float32 lanes do not
;; drift on data far from zero; a vector whose pivots are far from the run's means takes its
;; squares again about those ($px_stats_run). bn_stats_pix's scratch holds 64 bytes per four
;; channels: the sums, the centre the squares were taken about (the pivots, or the float32
;; means), the squares, the pivots.
;; Spliced before channel_pixels.wat.
(module
  ;; The pivot of one vector's run (len pixels from p, ps bytes apart): the mean of its first 8
  ;; pixels, summed in float32 as a tree (8 equal values give their value exactly), or its first
  ;; pixel in a shorter run; row_sums.wat's $rf_pivot4 rule. Its distance from the run's mean is
  ;; then about a third of a deviation, so that its squares stand (see $px_stats_run).
  (func $px_pivot (param $p i32) (param $len i32) (param $ps i32) (param $dt i32) (result v128)
    (local $ps2 i32) (local $ps4 i32)
    (if (i32.lt_u (local.get $len) (i32.const 8))
      (then (return (call $rf_pivot4 (call $ld4 (local.get $p) (local.get $dt))))))
    (local.set $ps2 (i32.shl (local.get $ps) (i32.const 1)))
    (local.set $ps4 (i32.shl (local.get $ps) (i32.const 2)))
    (call $rf_pivot4
      (f32x4.mul
        (f32x4.add
          (f32x4.add
            (f32x4.add (call $ld4 (local.get $p) (local.get $dt))
              (call $ld4 (i32.add (local.get $p) (local.get $ps)) (local.get $dt)))
            (f32x4.add (call $ld4 (i32.add (local.get $p) (local.get $ps2)) (local.get $dt))
              (call $ld4 (i32.add (i32.add (local.get $p) (local.get $ps2)) (local.get $ps))
                (local.get $dt))))
          (f32x4.add
            (f32x4.add (call $ld4 (i32.add (local.get $p) (local.get $ps4)) (local.get $dt))
              (call $ld4 (i32.add (i32.add (local.get $p) (local.get $ps4)) (local.get $ps))
                (local.get $dt)))
            (f32x4.add
              (call $ld4 (i32.add (i32.add (local.get $p) (local.get $ps4)) (local.get $ps2))
                (local.get $dt))
              (call $ld4
                (i32.add (i32.add (i32.add (local.get $p) (local.get $ps4)) (local.get $ps2))
                  (local.get $ps))
                (local.get $dt)))))
        (v128.const f32x4 0.125 0.125 0.125 0.125))))

  ;; Statistics, one pass, four vectors at p: their sums over the run about their pivots
  ;; ($px_pivot) at a, a + 64, a + 128 and a + 192, the sums of the squares of those
  ;; differences 32 bytes after each, the pivots 48 bytes after each.
  (func $px_sums4
    (param $p i32) (param $len i32) (param $ps i32) (param $es i32) (param $dt i32) (param $a i32)
    (local $j i32) (local $q i32) (local $es2 i32) (local $es3 i32) (local $d v128) (local $e v128)
    (local $s0 v128) (local $s1 v128) (local $s2 v128) (local $s3 v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128)
    (local $v0 v128) (local $v1 v128) (local $v2 v128) (local $v3 v128)
    (local.set $es2 (i32.shl (local.get $es) (i32.const 1)))
    (local.set $es3 (i32.add (local.get $es2) (local.get $es)))
    (local.set $v0 (call $px_pivot (local.get $p) (local.get $len) (local.get $ps) (local.get $dt)))
    (local.set $v1 (call $px_pivot (i32.add (local.get $p) (local.get $es)) (local.get $len)
      (local.get $ps) (local.get $dt)))
    (local.set $v2 (call $px_pivot (i32.add (local.get $p) (local.get $es2)) (local.get $len)
      (local.get $ps) (local.get $dt)))
    (local.set $v3 (call $px_pivot (i32.add (local.get $p) (local.get $es3)) (local.get $len)
      (local.get $ps) (local.get $dt)))
    (local.set $q (i32.add (local.get $p) (local.get $ps)))
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.ge_u (i32.add (local.get $j) (i32.const 1)) (local.get $len)))
        (local.set $d (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $v0)))
        (local.set $e (f32x4.sub (call $ld4 (local.get $q) (local.get $dt)) (local.get $v0)))
        (local.set $s0 (f32x4.add (local.get $s0) (f32x4.add (local.get $d) (local.get $e))))
        (local.set $t0 (f32x4.add (local.get $t0) (call $px_sq2 (local.get $d) (local.get $e))))
        (local.set $d
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt))
            (local.get $v1)))
        (local.set $e
          (f32x4.sub (call $ld4 (i32.add (local.get $q) (local.get $es)) (local.get $dt))
            (local.get $v1)))
        (local.set $s1 (f32x4.add (local.get $s1) (f32x4.add (local.get $d) (local.get $e))))
        (local.set $t1 (f32x4.add (local.get $t1) (call $px_sq2 (local.get $d) (local.get $e))))
        (local.set $d
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es2)) (local.get $dt))
            (local.get $v2)))
        (local.set $e
          (f32x4.sub (call $ld4 (i32.add (local.get $q) (local.get $es2)) (local.get $dt))
            (local.get $v2)))
        (local.set $s2 (f32x4.add (local.get $s2) (f32x4.add (local.get $d) (local.get $e))))
        (local.set $t2 (f32x4.add (local.get $t2) (call $px_sq2 (local.get $d) (local.get $e))))
        (local.set $d
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es3)) (local.get $dt))
            (local.get $v3)))
        (local.set $e
          (f32x4.sub (call $ld4 (i32.add (local.get $q) (local.get $es3)) (local.get $dt))
            (local.get $v3)))
        (local.set $s3 (f32x4.add (local.get $s3) (f32x4.add (local.get $d) (local.get $e))))
        (local.set $t3 (f32x4.add (local.get $t3) (call $px_sq2 (local.get $d) (local.get $e))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $ps) (i32.const 1))))
        (local.set $q (i32.add (local.get $q) (i32.shl (local.get $ps) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 2)))
        (br $pair)))
    (if (i32.lt_u (local.get $j) (local.get $len))
      (then
        (local.set $d (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $v0)))
        (local.set $s0 (f32x4.add (local.get $s0) (local.get $d)))
        (local.set $t0 (f32x4.add (local.get $t0) (f32x4.mul (local.get $d) (local.get $d))))
        (local.set $d
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt))
            (local.get $v1)))
        (local.set $s1 (f32x4.add (local.get $s1) (local.get $d)))
        (local.set $t1 (f32x4.add (local.get $t1) (f32x4.mul (local.get $d) (local.get $d))))
        (local.set $d
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es2)) (local.get $dt))
            (local.get $v2)))
        (local.set $s2 (f32x4.add (local.get $s2) (local.get $d)))
        (local.set $t2 (f32x4.add (local.get $t2) (f32x4.mul (local.get $d) (local.get $d))))
        (local.set $d
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $es3)) (local.get $dt))
            (local.get $v3)))
        (local.set $s3 (f32x4.add (local.get $s3) (local.get $d)))
        (local.set $t3 (f32x4.add (local.get $t3) (f32x4.mul (local.get $d) (local.get $d))))))
    (v128.store (local.get $a) (local.get $s0))
    (v128.store offset=64 (local.get $a) (local.get $s1))
    (v128.store offset=128 (local.get $a) (local.get $s2))
    (v128.store offset=192 (local.get $a) (local.get $s3))
    (v128.store offset=32 (local.get $a) (local.get $t0))
    (v128.store offset=96 (local.get $a) (local.get $t1))
    (v128.store offset=160 (local.get $a) (local.get $t2))
    (v128.store offset=224 (local.get $a) (local.get $t3))
    (v128.store offset=48 (local.get $a) (local.get $v0))
    (v128.store offset=112 (local.get $a) (local.get $v1))
    (v128.store offset=176 (local.get $a) (local.get $v2))
    (v128.store offset=240 (local.get $a) (local.get $v3)))

  ;; Statistics, one pass, one vector at p (the last one to three of a block): as $px_sums4.
  (func $px_sums1
    (param $p i32) (param $len i32) (param $ps i32) (param $dt i32) (param $a i32)
    (local $j i32) (local $d v128) (local $e v128) (local $s0 v128) (local $t0 v128)
    (local $v0 v128)
    (local.set $v0 (call $px_pivot (local.get $p) (local.get $len) (local.get $ps) (local.get $dt)))
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.ge_u (i32.add (local.get $j) (i32.const 1)) (local.get $len)))
        (local.set $d (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $v0)))
        (local.set $e
          (f32x4.sub (call $ld4 (i32.add (local.get $p) (local.get $ps)) (local.get $dt))
            (local.get $v0)))
        (local.set $s0 (f32x4.add (local.get $s0) (f32x4.add (local.get $d) (local.get $e))))
        (local.set $t0 (f32x4.add (local.get $t0) (call $px_sq2 (local.get $d) (local.get $e))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $ps) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 2)))
        (br $pair)))
    (if (i32.lt_u (local.get $j) (local.get $len))
      (then
        (local.set $d (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $v0)))
        (local.set $s0 (f32x4.add (local.get $s0) (local.get $d)))
        (local.set $t0 (f32x4.add (local.get $t0) (f32x4.mul (local.get $d) (local.get $d))))))
    (v128.store (local.get $a) (local.get $s0))
    (v128.store offset=32 (local.get $a) (local.get $t0))
    (v128.store offset=48 (local.get $a) (local.get $v0)))

  ;; Statistics, one pass, in memory order: the same sums as $px_sums4 and $px_sums1 for every
  ;; vector of the run, added in the same order (each vector's pixels two at a time, their
  ;; terms added at once, then a last single pixel), so the same bits; but a pixel's vectors
  ;; side by side, with the running sums in the scratch, two pixels a step, or four (`four` 1:
  ;; two pairs, each to the sums in turn). Over pixels wider than a line, the block loops' walk
  ;; down a column is a stride that the hardware does not fetch ahead of: from memory, two
  ;; pixels a step run fastest (their two streams, against four), in the caches four (fewer
  ;; loads and stores of the sums); both ahead of the block loops there (bench/RESULTS.md,
  ;; twentieth session).
  (func $px_sums_in_order
    (param $p i32) (param $len i32) (param $ps i32) (param $es i32) (param $dt i32)
    (param $acc i32) (param $accEnd i32) (param $four i32)
    (local $j i32) (local $a i32) (local $r i32) (local $ps2 i32) (local $ps3 i32)
    (local $m v128) (local $d v128) (local $e v128) (local $f v128) (local $g v128)
    (local.set $ps2 (i32.shl (local.get $ps) (i32.const 1)))
    (local.set $ps3 (i32.add (local.get $ps2) (local.get $ps)))
    ;; The pivots, and the sums from zero.
    (local.set $a (local.get $acc))
    (local.set $r (local.get $p))
    (loop $vec
      (v128.store offset=48 (local.get $a)
        (call $px_pivot (local.get $r) (local.get $len) (local.get $ps) (local.get $dt)))
      (v128.store (local.get $a) (v128.const i64x2 0 0))
      (v128.store offset=32 (local.get $a) (v128.const i64x2 0 0))
      (local.set $r (i32.add (local.get $r) (local.get $es)))
      (local.set $a (i32.add (local.get $a) (i32.const 64)))
      (br_if $vec (i32.lt_u (local.get $a) (local.get $accEnd))))
    (block $done
      (loop $pixel
        (br_if $done (i32.ge_u (i32.add (local.get $j) (i32.const 1)) (local.get $len)))
        (local.set $a (local.get $acc))
        (local.set $r (local.get $p))
        (if (i32.and (local.get $four)
              (i32.lt_u (i32.add (local.get $j) (i32.const 3)) (local.get $len)))
          (then
            ;; Two pairs: each pair's terms added at once, the pairs to the sums in turn.
            (loop $vec4
              (local.set $m (v128.load offset=48 (local.get $a)))
              (local.set $d (f32x4.sub (call $ld4 (local.get $r) (local.get $dt)) (local.get $m)))
              (local.set $e
                (f32x4.sub (call $ld4 (i32.add (local.get $r) (local.get $ps)) (local.get $dt))
                  (local.get $m)))
              (local.set $f
                (f32x4.sub (call $ld4 (i32.add (local.get $r) (local.get $ps2)) (local.get $dt))
                  (local.get $m)))
              (local.set $g
                (f32x4.sub (call $ld4 (i32.add (local.get $r) (local.get $ps3)) (local.get $dt))
                  (local.get $m)))
              (v128.store (local.get $a)
                (f32x4.add
                  (f32x4.add (v128.load (local.get $a)) (f32x4.add (local.get $d) (local.get $e)))
                  (f32x4.add (local.get $f) (local.get $g))))
              (v128.store offset=32 (local.get $a)
                (f32x4.add
                  (f32x4.add (v128.load offset=32 (local.get $a))
                    (call $px_sq2 (local.get $d) (local.get $e)))
                  (call $px_sq2 (local.get $f) (local.get $g))))
              (local.set $r (i32.add (local.get $r) (local.get $es)))
              (local.set $a (i32.add (local.get $a) (i32.const 64)))
              (br_if $vec4 (i32.lt_u (local.get $a) (local.get $accEnd))))
            (local.set $p (i32.add (local.get $p) (i32.shl (local.get $ps) (i32.const 2))))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $pixel)))
        (loop $vec2
          (local.set $m (v128.load offset=48 (local.get $a)))
          (local.set $d (f32x4.sub (call $ld4 (local.get $r) (local.get $dt)) (local.get $m)))
          (local.set $e
            (f32x4.sub (call $ld4 (i32.add (local.get $r) (local.get $ps)) (local.get $dt))
              (local.get $m)))
          (v128.store (local.get $a)
            (f32x4.add (v128.load (local.get $a)) (f32x4.add (local.get $d) (local.get $e))))
          (v128.store offset=32 (local.get $a)
            (f32x4.add (v128.load offset=32 (local.get $a))
              (call $px_sq2 (local.get $d) (local.get $e))))
          (local.set $r (i32.add (local.get $r) (local.get $es)))
          (local.set $a (i32.add (local.get $a) (i32.const 64)))
          (br_if $vec2 (i32.lt_u (local.get $a) (local.get $accEnd))))
        (local.set $p (i32.add (local.get $p) (local.get $ps2)))
        (local.set $j (i32.add (local.get $j) (i32.const 2)))
        (br $pixel)))
    (if (i32.lt_u (local.get $j) (local.get $len))
      (then
        (local.set $a (local.get $acc))
        (loop $vec
          (local.set $d
            (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (v128.load offset=48 (local.get $a))))
          (v128.store (local.get $a) (f32x4.add (v128.load (local.get $a)) (local.get $d)))
          (v128.store offset=32 (local.get $a)
            (f32x4.add (v128.load offset=32 (local.get $a)) (f32x4.mul (local.get $d) (local.get $d))))
          (local.set $p (i32.add (local.get $p) (local.get $es)))
          (local.set $a (i32.add (local.get $a) (i32.const 64)))
          (br_if $vec (i32.lt_u (local.get $a) (local.get $accEnd)))))))

  ;; d * d + e * e (two pixels' squared deviations, added at once).
  (func $px_sq2 (param $d v128) (param $e v128) (result v128)
    (f32x4.add (f32x4.mul (local.get $d) (local.get $d)) (f32x4.mul (local.get $e) (local.get $e))))

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

  ;; bn_stats_pix over one run: `len` pixels at x (byte address of the run's first), C
  ;; channels (a multiple of 4) of `es`-byte vectors, `ps` bytes a pixel; the scratch at acc
  ;; (64 bytes per four channels: sums about the pivots, the centre of the squares, the
  ;; squares, the pivots). A pivot is at most 4 deviations from its run's mean (sqrt(len / 8),
  ;; or sqrt(len) in a run of fewer than 8 pixels), so squares about it err up to 17 times more
  ;; than squares about the mean; a vector keeps them only where every lane's pivot is within
  ;; one deviation (twice the error at most). Pixels of up to four vectors (a line of float32)
  ;; take the block loops, whose walk down the run is then in memory order. Wider float32 ones
  ;; take the sums in memory order, four pixels a step where the caller expects the data in the
  ;; caches (`cached` 1), else two; from memory with pixels of 512 bytes or more, and 16-bit
  ;; data (whose conversions the block loops take better: bfloat16 1.06-1.19x slower in memory
  ;; order in the caches), the block loops, after a read of the run's lines in order from
  ;; memory.
  (func $px_stats_run
    (param $x i32) (param $len i32) (param $C i32) (param $ps i32) (param $es i32) (param $dt i32)
    (param $acc i32) (param $cached i32)
    (local $v i32) (local $nv i32) (local $a i32) (local $accEnd i32)
    (local $n v128) (local $d v128) (local $t v128) (local $q v128)
    (local.set $nv (i32.shr_u (local.get $C) (i32.const 2)))
    (local.set $accEnd (i32.add (local.get $acc) (i32.mul (local.get $nv) (i32.const 64))))
    (if (i32.gt_u (local.get $nv) (i32.const 4))
      (then
        (if (i32.and (i32.eqz (local.get $dt))
              (i32.or (local.get $cached) (i32.lt_u (local.get $ps) (i32.const 512))))
          (then
            (call $px_sums_in_order (local.get $x) (local.get $len) (local.get $ps)
              (local.get $es) (local.get $dt) (local.get $acc) (local.get $accEnd)
              (local.get $cached))
            (local.set $v (local.get $nv)))
          (else
            ;; From memory (float32 pixels of 512 bytes or more, or 16-bit ones), the run's
            ;; lines in order first (the value read is stored in the scratch, which the sums
            ;; overwrite), then the block loops on the caches: float32's sums in memory order
            ;; ran 1.4-1.7x slower on such pixels.
            (if (i32.eqz (local.get $cached))
              (then
                (i32.store (local.get $acc)
                  (call $px_touch (local.get $x)
                    (i32.mul (local.get $len) (local.get $ps))))))))))
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
    ;; Each vector's squares stand where its pivots are within a deviation of the run's means
    ;; (every lane: len d^2 <= q - len d^2, d = sum / len, the squares q finite): the merge
    ;; (channel_pixels.wat) recentres them on the mean from the pivots at +16. Else the run's
    ;; float32 means go to +16 and its squares are taken again about them ($px_squares1).
    (local.set $a (local.get $acc))
    (local.set $v (i32.const 0))
    (local.set $n (f32x4.splat (f32.convert_i32_u (local.get $len))))
    (loop $vec
      (local.set $d (f32x4.div (v128.load (local.get $a)) (local.get $n)))
      (local.set $t (f32x4.mul (local.get $n) (f32x4.mul (local.get $d) (local.get $d))))
      (local.set $q (v128.load offset=32 (local.get $a)))
      (if (i32x4.all_true
            (v128.and (f32x4.le (f32x4.add (local.get $t) (local.get $t)) (local.get $q))
              (f32x4.le (local.get $q)
                (v128.const f32x4 3.4028234e38 3.4028234e38 3.4028234e38 3.4028234e38))))
        (then (v128.store offset=16 (local.get $a) (v128.load offset=48 (local.get $a))))
        (else
          (v128.store offset=16 (local.get $a)
            (f32x4.add (v128.load offset=48 (local.get $a)) (local.get $d)))
          (call $px_squares1 (i32.add (local.get $x) (i32.mul (local.get $v) (local.get $es)))
            (local.get $len) (local.get $ps) (local.get $dt) (local.get $a))))
      (local.set $a (i32.add (local.get $a) (i32.const 64)))
      (local.set $v (i32.add (local.get $v) (i32.const 1)))
      (br_if $vec (i32.lt_u (local.get $a) (local.get $accEnd)))))

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
