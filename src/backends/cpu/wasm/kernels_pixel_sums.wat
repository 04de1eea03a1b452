;; The pixel kernels' reductions (sums and statistics over P pixels of C channels): functions spliced into kernels.wat's module by the build
;; (scripts/build_wasm.ts KERNEL_WAT_PATHS, in that order, before every other pass), so
;; they use its codecs and get its dispatch by `$dt` and its inlining. kernels.wat's header
;; states the conventions (addresses, dtypes, association of sums, slack).

(module
  ;; ---------------------------------------------------------------------------------
  ;; Pixel kernels: P pixels of C channels (pixel stride C elements), per-channel float64
  ;; arrays of cs = C rounded up to 4 at byte address acc or cst (array j at + j * 8 cs).

  ;; Per-channel sums of four pixels into acc (sums), acc + cb (dots), means at acc + 2 cb.
  (func $sum4 (param $a i32) (param $cb i32)
    (param $d0 v128) (param $d1 v128) (param $d2 v128) (param $d3 v128)
    (param $x0 v128) (param $x1 v128) (param $x2 v128) (param $x3 v128)
    (local $m v128)
    (local $b i32)
    (local.set $b (i32.add (local.get $a) (local.get $cb)))
    (local.set $m (v128.load (i32.add (local.get $b) (local.get $cb))))
    (v128.store (local.get $a)
      (f64x2.add (v128.load (local.get $a))
        (f64x2.add
          (f64x2.add (local.get $d0) (local.get $d1))
          (f64x2.add (local.get $d2) (local.get $d3)))))
    (v128.store (local.get $b)
      (f64x2.add (v128.load (local.get $b))
        (f64x2.add
          (f64x2.add
            (f64x2.mul (local.get $d0) (f64x2.sub (local.get $x0) (local.get $m)))
            (f64x2.mul (local.get $d1) (f64x2.sub (local.get $x1) (local.get $m))))
          (f64x2.add
            (f64x2.mul (local.get $d2) (f64x2.sub (local.get $x2) (local.get $m)))
            (f64x2.mul (local.get $d3) (f64x2.sub (local.get $x3) (local.get $m))))))))

  ;; The same for one pixel.
  (func $sum1 (param $a i32) (param $cb i32) (param $d v128) (param $x v128)
    (local $b i32)
    (local.set $b (i32.add (local.get $a) (local.get $cb)))
    (v128.store (local.get $a) (f64x2.add (v128.load (local.get $a)) (local.get $d)))
    (v128.store (local.get $b)
      (f64x2.add (v128.load (local.get $b))
        (f64x2.mul (local.get $d)
          (f64x2.sub (local.get $x) (v128.load (i32.add (local.get $b) (local.get $cb))))))))

  ;; acc[c] += sum(dy), acc[cs + c] += sum(dy * (x - acc[2 cs + c])) per channel c.
  (func (export "pix_sums")
    (param $dy i32) (param $x i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $acc i32)
    (local $sh i32) (local $rb i32) (local $es i32) (local $cb i32)
    (local $p i32) (local $a i32) (local $aend i32) (local $pd i32) (local $px i32)
    (local $d0 v128) (local $d1 v128) (local $d2 v128) (local $d3 v128)
    (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128)
    (local.set $sh (call $shift (local.get $dt)))
    (local.set $rb (i32.shl (local.get $C) (local.get $sh)))
    (local.set $es (i32.shl (i32.const 4) (local.get $sh)))
    (local.set $cb (i32.shl (local.get $cs) (i32.const 3)))
    (local.set $aend (i32.add (local.get $acc) (local.get $cb)))
    ;; Scaled float16: the accumulators and means meet scaled values (see above).
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then (call $scaleMoments (local.get $acc) (local.get $cs) (f64.const 0x1p-112))))
    (block $done
      (loop $group
        (br_if $done (i32.gt_s (i32.add (local.get $p) (i32.const 4)) (local.get $P)))
        (local.set $pd (i32.add (local.get $dy) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $px (i32.add (local.get $x) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $a (local.get $acc))
        (block $cdone
          (loop $channels
            (br_if $cdone (i32.ge_u (local.get $a) (local.get $aend)))
            (local.set $d0 (call $ld4 (local.get $pd) (local.get $dt)))
            (local.set $d1 (call $ld4 (i32.add (local.get $pd) (local.get $rb)) (local.get $dt)))
            (local.set $d2
              (call $ld4 (i32.add (local.get $pd) (i32.shl (local.get $rb) (i32.const 1)))
                (local.get $dt)))
            (local.set $d3
              (call $ld4 (i32.add (local.get $pd) (i32.mul (local.get $rb) (i32.const 3)))
                (local.get $dt)))
            (local.set $x0 (call $ld4 (local.get $px) (local.get $dt)))
            (local.set $x1 (call $ld4 (i32.add (local.get $px) (local.get $rb)) (local.get $dt)))
            (local.set $x2
              (call $ld4 (i32.add (local.get $px) (i32.shl (local.get $rb) (i32.const 1)))
                (local.get $dt)))
            (local.set $x3
              (call $ld4 (i32.add (local.get $px) (i32.mul (local.get $rb) (i32.const 3)))
                (local.get $dt)))
            (call $sum4 (local.get $a) (local.get $cb)
              (call $lo (local.get $d0)) (call $lo (local.get $d1))
              (call $lo (local.get $d2)) (call $lo (local.get $d3))
              (call $lo (local.get $x0)) (call $lo (local.get $x1))
              (call $lo (local.get $x2)) (call $lo (local.get $x3)))
            (call $sum4 (i32.add (local.get $a) (i32.const 16)) (local.get $cb)
              (call $hi2 (local.get $d0) (local.get $pd) (local.get $dt))
              (call $hi2 (local.get $d1) (i32.add (local.get $pd) (local.get $rb)) (local.get $dt))
              (call $hi2 (local.get $d2)
                (i32.add (local.get $pd) (i32.shl (local.get $rb) (i32.const 1))) (local.get $dt))
              (call $hi2 (local.get $d3)
                (i32.add (local.get $pd) (i32.mul (local.get $rb) (i32.const 3))) (local.get $dt))
              (call $hi2 (local.get $x0) (local.get $px) (local.get $dt))
              (call $hi2 (local.get $x1) (i32.add (local.get $px) (local.get $rb)) (local.get $dt))
              (call $hi2 (local.get $x2)
                (i32.add (local.get $px) (i32.shl (local.get $rb) (i32.const 1))) (local.get $dt))
              (call $hi2 (local.get $x3)
                (i32.add (local.get $px) (i32.mul (local.get $rb) (i32.const 3))) (local.get $dt)))
            (local.set $pd (i32.add (local.get $pd) (local.get $es)))
            (local.set $px (i32.add (local.get $px) (local.get $es)))
            (local.set $a (i32.add (local.get $a) (i32.const 32)))
            (br $channels)))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (br $group)))
    (block $done
      (loop $pixel
        (br_if $done (i32.ge_s (local.get $p) (local.get $P)))
        (local.set $pd (i32.add (local.get $dy) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $px (i32.add (local.get $x) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $a (local.get $acc))
        (block $cdone
          (loop $channels
            (br_if $cdone (i32.ge_u (local.get $a) (local.get $aend)))
            (local.set $d0 (call $ld4 (local.get $pd) (local.get $dt)))
            (local.set $x0 (call $ld4 (local.get $px) (local.get $dt)))
            (call $sum1 (local.get $a) (local.get $cb)
              (call $lo (local.get $d0)) (call $lo (local.get $x0)))
            (call $sum1 (i32.add (local.get $a) (i32.const 16)) (local.get $cb)
              (call $hi2 (local.get $d0) (local.get $pd) (local.get $dt))
              (call $hi2 (local.get $x0) (local.get $px) (local.get $dt)))
            (local.set $pd (i32.add (local.get $pd) (local.get $es)))
            (local.set $px (i32.add (local.get $px) (local.get $es)))
            (local.set $a (i32.add (local.get $a) (i32.const 32)))
            (br $channels)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $pixel)))
    ;; Scaled float16: back to the values' scale.
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then (call $scaleMoments (local.get $acc) (local.get $cs) (f64.const 0x1p112)))))

  ;; Per-channel statistics of P > 0 pixels, overwritten: acc[c] = sum(x), acc[cs + c] =
  ;; sum((x - acc[2 cs + c])^2) with acc[2 cs + c] = acc[c] / P (two passes).
  (func (export "pix_stats")
    (param $x i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32) (param $acc i32)
    (local $sh i32) (local $rb i32) (local $es i32) (local $cb i32) (local $pass i32)
    (local $p i32) (local $a i32) (local $aend i32) (local $px i32)
    (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128)
    (local $count v128)
    (local.set $sh (call $shift (local.get $dt)))
    (local.set $rb (i32.shl (local.get $C) (local.get $sh)))
    (local.set $es (i32.shl (i32.const 4) (local.get $sh)))
    (local.set $cb (i32.shl (local.get $cs) (i32.const 3)))
    (local.set $aend (i32.add (local.get $acc) (local.get $cb)))
    (local.set $count (f64x2.splat (f64.convert_i32_u (local.get $P))))
    ;; pass 0: sums; pass 1: squared deviations from the means.
    (block $passes
      (loop $pass
        (br_if $passes (i32.gt_u (local.get $pass) (i32.const 1)))
        (local.set $a (i32.add (local.get $acc) (i32.mul (local.get $pass) (local.get $cb))))
        (block $zeroed
          (loop $zero
            (br_if $zeroed
              (i32.ge_u (local.get $a)
                (i32.add (local.get $aend) (i32.mul (local.get $pass) (local.get $cb)))))
            (v128.store (local.get $a) (v128.const i64x2 0 0))
            (local.set $a (i32.add (local.get $a) (i32.const 16)))
            (br $zero)))
        (local.set $p (i32.const 0))
        (block $done
          (loop $group
            (br_if $done (i32.gt_s (i32.add (local.get $p) (i32.const 4)) (local.get $P)))
            (local.set $px (i32.add (local.get $x) (i32.mul (local.get $p) (local.get $rb))))
            (local.set $a (local.get $acc))
            (block $cdone
              (loop $channels
                (br_if $cdone (i32.ge_u (local.get $a) (local.get $aend)))
                (local.set $x0 (call $ld4 (local.get $px) (local.get $dt)))
                (local.set $x1
                  (call $ld4 (i32.add (local.get $px) (local.get $rb)) (local.get $dt)))
                (local.set $x2
                  (call $ld4 (i32.add (local.get $px) (i32.shl (local.get $rb) (i32.const 1)))
                    (local.get $dt)))
                (local.set $x3
                  (call $ld4 (i32.add (local.get $px) (i32.mul (local.get $rb) (i32.const 3)))
                    (local.get $dt)))
                (call $stat4 (local.get $a) (local.get $cb) (local.get $pass)
                  (call $lo (local.get $x0)) (call $lo (local.get $x1))
                  (call $lo (local.get $x2)) (call $lo (local.get $x3)))
                (call $stat4 (i32.add (local.get $a) (i32.const 16)) (local.get $cb)
                  (local.get $pass)
                  (call $hi (local.get $x0)) (call $hi (local.get $x1))
                  (call $hi (local.get $x2)) (call $hi (local.get $x3)))
                (local.set $px (i32.add (local.get $px) (local.get $es)))
                (local.set $a (i32.add (local.get $a) (i32.const 32)))
                (br $channels)))
            (local.set $p (i32.add (local.get $p) (i32.const 4)))
            (br $group)))
        (block $done
          (loop $pixel
            (br_if $done (i32.ge_s (local.get $p) (local.get $P)))
            (local.set $px (i32.add (local.get $x) (i32.mul (local.get $p) (local.get $rb))))
            (local.set $a (local.get $acc))
            (block $cdone
              (loop $channels
                (br_if $cdone (i32.ge_u (local.get $a) (local.get $aend)))
                (local.set $x0 (call $ld4 (local.get $px) (local.get $dt)))
                (call $stat1 (local.get $a) (local.get $cb) (local.get $pass)
                  (call $lo (local.get $x0)))
                (call $stat1 (i32.add (local.get $a) (i32.const 16)) (local.get $cb)
                  (local.get $pass) (call $hi (local.get $x0)))
                (local.set $px (i32.add (local.get $px) (local.get $es)))
                (local.set $a (i32.add (local.get $a) (i32.const 32)))
                (br $channels)))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br $pixel)))
        (if (i32.eqz (local.get $pass))
          (then
            (local.set $a (local.get $acc))
            (block $meaned
              (loop $mean
                (br_if $meaned (i32.ge_u (local.get $a) (local.get $aend)))
                (v128.store
                  (i32.add (local.get $a) (i32.shl (local.get $cb) (i32.const 1)))
                  (f64x2.div (v128.load (local.get $a)) (local.get $count)))
                (local.set $a (i32.add (local.get $a) (i32.const 16)))
                (br $mean)))))
        (local.set $pass (i32.add (local.get $pass) (i32.const 1)))
        (br $pass)))
    ;; Scaled float16: back to the values' scale.
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then (call $scaleMoments (local.get $acc) (local.get $cs) (f64.const 0x1p112)))))

  ;; Pass 0: acc[c] += (x0 + x1) + (x2 + x3). Pass 1, with a = x - mean: acc[cs + c] +=
  ;; (a0 a0 + a1 a1) + (a2 a2 + a3 a3).
  (func $stat4 (param $a i32) (param $cb i32) (param $pass i32)
    (param $x0 v128) (param $x1 v128) (param $x2 v128) (param $x3 v128)
    (local $m v128)
    (if (i32.eqz (local.get $pass))
      (then
        (v128.store (local.get $a)
          (f64x2.add (v128.load (local.get $a))
            (f64x2.add
              (f64x2.add (local.get $x0) (local.get $x1))
              (f64x2.add (local.get $x2) (local.get $x3))))))
      (else
        (local.set $m (v128.load (i32.add (local.get $a) (i32.shl (local.get $cb) (i32.const 1)))))
        (local.set $x0 (f64x2.sub (local.get $x0) (local.get $m)))
        (local.set $x1 (f64x2.sub (local.get $x1) (local.get $m)))
        (local.set $x2 (f64x2.sub (local.get $x2) (local.get $m)))
        (local.set $x3 (f64x2.sub (local.get $x3) (local.get $m)))
        (local.set $a (i32.add (local.get $a) (local.get $cb)))
        (v128.store (local.get $a)
          (f64x2.add (v128.load (local.get $a))
            (f64x2.add
              (f64x2.add
                (f64x2.mul (local.get $x0) (local.get $x0))
                (f64x2.mul (local.get $x1) (local.get $x1)))
              (f64x2.add
                (f64x2.mul (local.get $x2) (local.get $x2))
                (f64x2.mul (local.get $x3) (local.get $x3)))))))))

  ;; The same for one pixel.
  (func $stat1 (param $a i32) (param $cb i32) (param $pass i32) (param $x v128)
    (if (i32.eqz (local.get $pass))
      (then (v128.store (local.get $a) (f64x2.add (v128.load (local.get $a)) (local.get $x))))
      (else
        (local.set $x
          (f64x2.sub (local.get $x)
            (v128.load (i32.add (local.get $a) (i32.shl (local.get $cb) (i32.const 1))))))
        (local.set $a (i32.add (local.get $a) (local.get $cb)))
        (v128.store (local.get $a)
          (f64x2.add (v128.load (local.get $a)) (f64x2.mul (local.get $x) (local.get $x)))))))
)
