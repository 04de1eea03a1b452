;; The pixel kernels' writes (normalize, gradient, scale): functions spliced into kernels.wat's module by the build
;; (scripts/build_wasm.ts KERNEL_WAT_PATHS, in that order, before every other pass), so
;; they use its codecs and get its dispatch by `$dt` and its inlining. kernels.wat's header
;; states the conventions (addresses, dtypes, association of sums, slack).

(module
  ;; The per-channel constants of the pixel writes are packed by vectors of four channels
  ;; (packConstants in ../kernels/wasm_instance.ts): for channels 4v..4v+3, constant k's
  ;; four float64 lanes are at cst + 32 (count v + k), so one vector's constants are one run
  ;; read at fixed offsets (separate arrays, each read at cst + k cs 8 + 8 c, made these
  ;; kernels much slower than the row kernels).
  ;;
  ;; When C is a multiple of 4 (no vector runs into the next pixel), the writes take pixels
  ;; two at a time: each vector's constants are loaded once for both, and the two pixels'
  ;; chains are independent. Every element is still read before it is written (the same
  ;; vector of the same pixel), so out may be x or dy.

  ;; out = x * scale[c] + shift[c] (cst: scale, shift, packed; see formulas.ts).
  (func (export "pix_normalize")
    (param $x i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $cst i32)
    (local $sh i32) (local $rb i32) (local $es i32) (local $cb i32)
    (local $p i32) (local $pend i32) (local $a i32) (local $aend i32)
    (local $px i32) (local $po i32)
    (local $v v128) (local $v1 v128) (local $r0 v128) (local $r1 v128)
    (local $k0 v128) (local $k1 v128)
    (local.set $sh (call $shift (local.get $dt)))
    (local.set $rb (i32.shl (local.get $C) (local.get $sh)))
    (local.set $es (i32.shl (i32.const 4) (local.get $sh)))
    (local.set $cb (i32.shl (local.get $cs) (i32.const 3)))
    ;; Scaled float16: the constants that multiply scaled values (see above).
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (call $scalePacked (local.get $cst) (local.get $cs) (i32.const 2) (i32.const 0)
          (f64.const 0x1p112))))
    (local.set $aend (i32.add (local.get $cst) (i32.shl (local.get $cb) (i32.const 1))))
    (local.set $pend (call $pairEnd (local.get $P) (local.get $C)))
    (block $done
      (loop $pair
        (br_if $done (i32.ge_s (local.get $p) (local.get $pend)))
        (local.set $px (i32.add (local.get $x) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $po (i32.add (local.get $out) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $a (local.get $cst))
        (block $cdone
          (loop $channels
            (br_if $cdone (i32.ge_u (local.get $a) (local.get $aend)))
            (local.set $v (call $ld4 (local.get $px) (local.get $dt)))
            (local.set $v1 (call $ld4 (i32.add (local.get $px) (local.get $rb)) (local.get $dt)))
            (local.set $k0 (v128.load (local.get $a)))
            (local.set $k1 (v128.load offset=32 (local.get $a)))
            (local.set $r0
              (call $normK (call $lo (local.get $v)) (local.get $k0) (local.get $k1)))
            (local.set $r1
              (call $normK (call $lo (local.get $v1)) (local.get $k0) (local.get $k1)))
            (local.set $k0 (v128.load offset=16 (local.get $a)))
            (local.set $k1 (v128.load offset=48 (local.get $a)))
            (call $st4x2 (local.get $po) (i32.add (local.get $po) (local.get $rb)) (local.get $dt)
              (local.get $r0)
              (call $normK (call $hi2 (local.get $v) (local.get $px) (local.get $dt))
                (local.get $k0) (local.get $k1))
              (local.get $r1)
              (call $normK
                (call $hi2 (local.get $v1) (i32.add (local.get $px) (local.get $rb))
                  (local.get $dt)) (local.get $k0) (local.get $k1)))
            (local.set $px (i32.add (local.get $px) (local.get $es)))
            (local.set $po (i32.add (local.get $po) (local.get $es)))
            (local.set $a (i32.add (local.get $a) (i32.const 64)))
            (br $channels)))
        (local.set $p (i32.add (local.get $p) (i32.const 2)))
        (br $pair)))
    (block $done
      (loop $pixel
        (br_if $done (i32.ge_s (local.get $p) (local.get $P)))
        (local.set $px (i32.add (local.get $x) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $po (i32.add (local.get $out) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $a (local.get $cst))
        (block $cdone
          (loop $channels
            (br_if $cdone (i32.ge_u (local.get $a) (local.get $aend)))
            (local.set $v (call $ld4 (local.get $px) (local.get $dt)))
            (call $st4 (local.get $po) (local.get $dt)
              (call $norm (call $lo (local.get $v)) (local.get $a))
              (call $norm (call $hi2 (local.get $v) (local.get $px) (local.get $dt))
                (i32.add (local.get $a) (i32.const 16))))
            (local.set $px (i32.add (local.get $px) (local.get $es)))
            (local.set $po (i32.add (local.get $po) (local.get $es)))
            (local.set $a (i32.add (local.get $a) (i32.const 64)))
            (br $channels)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $pixel)))
    ;; Scaled float16: the constants back.
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (call $scalePacked (local.get $cst) (local.get $cs) (i32.const 2) (i32.const 0)
          (f64.const 0x1p-112)))))

  (func $norm (param $x v128) (param $a i32) (result v128)
    (call $normK (local.get $x)
      (v128.load (local.get $a))
      (v128.load offset=32 (local.get $a))))

  ;; x * k0 + k1.
  (func $normK (param $x v128) (param $k0 v128) (param $k1 v128) (result v128)
    (f64x2.add (f64x2.mul (local.get $x) (local.get $k0)) (local.get $k1)))

  ;; The end of the pixels taken two at a time: P rounded down to even when C is a multiple
  ;; of 4, else 0 (a pixel's last vector would run into the next one).
  (func $pairEnd (param $P i32) (param $C i32) (result i32)
    (select (i32.and (local.get $P) (i32.const -2)) (i32.const 0)
      (i32.eqz (i32.and (local.get $C) (i32.const 3)))))

  ;; out = dy * a[c] + (x * b[c] + c[c]) (cst: a, b, c, packed; see formulas.ts).
  (func (export "pix_gradient")
    (param $dy i32) (param $x i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32)
    (param $dt i32) (param $cst i32)
    (local $sh i32) (local $rb i32) (local $es i32) (local $cb i32)
    (local $p i32) (local $pend i32) (local $a i32) (local $aend i32)
    (local $pd i32) (local $px i32) (local $po i32)
    (local $v v128) (local $w v128) (local $v1 v128) (local $w1 v128)
    (local $r0 v128) (local $r1 v128)
    (local $k0 v128) (local $k1 v128) (local $k2 v128)
    (local.set $sh (call $shift (local.get $dt)))
    (local.set $rb (i32.shl (local.get $C) (local.get $sh)))
    (local.set $es (i32.shl (i32.const 4) (local.get $sh)))
    (local.set $cb (i32.shl (local.get $cs) (i32.const 3)))
    ;; Scaled float16: the constants that multiply scaled values (see above).
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (call $scalePacked (local.get $cst) (local.get $cs) (i32.const 3) (i32.const 0)
          (f64.const 0x1p112))
        (call $scalePacked (local.get $cst) (local.get $cs) (i32.const 3) (i32.const 1)
          (f64.const 0x1p112))))
    (local.set $aend (i32.add (local.get $cst) (i32.mul (local.get $cb) (i32.const 3))))
    (local.set $pend (call $pairEnd (local.get $P) (local.get $C)))
    (block $done
      (loop $pair
        (br_if $done (i32.ge_s (local.get $p) (local.get $pend)))
        (local.set $pd (i32.add (local.get $dy) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $px (i32.add (local.get $x) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $po (i32.add (local.get $out) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $a (local.get $cst))
        (block $cdone
          (loop $channels
            (br_if $cdone (i32.ge_u (local.get $a) (local.get $aend)))
            (local.set $v (call $ld4 (local.get $pd) (local.get $dt)))
            (local.set $w (call $ld4 (local.get $px) (local.get $dt)))
            (local.set $v1 (call $ld4 (i32.add (local.get $pd) (local.get $rb)) (local.get $dt)))
            (local.set $w1 (call $ld4 (i32.add (local.get $px) (local.get $rb)) (local.get $dt)))
            (local.set $k0 (v128.load (local.get $a)))
            (local.set $k1 (v128.load offset=32 (local.get $a)))
            (local.set $k2 (v128.load offset=64 (local.get $a)))
            (local.set $r0 (call $grad (call $lo (local.get $v)) (call $lo (local.get $w))
              (local.get $k0) (local.get $k1) (local.get $k2)))
            (local.set $r1 (call $grad (call $lo (local.get $v1)) (call $lo (local.get $w1))
              (local.get $k0) (local.get $k1) (local.get $k2)))
            (local.set $k0 (v128.load offset=16 (local.get $a)))
            (local.set $k1 (v128.load offset=48 (local.get $a)))
            (local.set $k2 (v128.load offset=80 (local.get $a)))
            (call $st4x2 (local.get $po) (i32.add (local.get $po) (local.get $rb)) (local.get $dt)
              (local.get $r0)
              (call $grad (call $hi2 (local.get $v) (local.get $pd) (local.get $dt))
                (call $hi2 (local.get $w) (local.get $px) (local.get $dt))
                (local.get $k0) (local.get $k1) (local.get $k2))
              (local.get $r1)
              (call $grad
                (call $hi2 (local.get $v1) (i32.add (local.get $pd) (local.get $rb))
                  (local.get $dt)) (call $hi2 (local.get $w1) (i32.add (local.get $px)
                    (local.get $rb)) (local.get $dt))
                (local.get $k0) (local.get $k1) (local.get $k2)))
            (local.set $pd (i32.add (local.get $pd) (local.get $es)))
            (local.set $px (i32.add (local.get $px) (local.get $es)))
            (local.set $po (i32.add (local.get $po) (local.get $es)))
            (local.set $a (i32.add (local.get $a) (i32.const 96)))
            (br $channels)))
        (local.set $p (i32.add (local.get $p) (i32.const 2)))
        (br $pair)))
    (block $done
      (loop $pixel
        (br_if $done (i32.ge_s (local.get $p) (local.get $P)))
        (local.set $pd (i32.add (local.get $dy) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $px (i32.add (local.get $x) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $po (i32.add (local.get $out) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $a (local.get $cst))
        (block $cdone
          (loop $channels
            (br_if $cdone (i32.ge_u (local.get $a) (local.get $aend)))
            (local.set $v (call $ld4 (local.get $pd) (local.get $dt)))
            (local.set $w (call $ld4 (local.get $px) (local.get $dt)))
            (call $st4 (local.get $po) (local.get $dt)
              (call $gradAt (call $lo (local.get $v)) (call $lo (local.get $w)) (local.get $a))
              (call $gradAt (call $hi2 (local.get $v) (local.get $pd) (local.get $dt))
                (call $hi2 (local.get $w) (local.get $px) (local.get $dt))
                (i32.add (local.get $a) (i32.const 16))))
            (local.set $pd (i32.add (local.get $pd) (local.get $es)))
            (local.set $px (i32.add (local.get $px) (local.get $es)))
            (local.set $po (i32.add (local.get $po) (local.get $es)))
            (local.set $a (i32.add (local.get $a) (i32.const 96)))
            (br $channels)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $pixel)))
    ;; Scaled float16: the constants back.
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (call $scalePacked (local.get $cst) (local.get $cs) (i32.const 3) (i32.const 0)
          (f64.const 0x1p-112))
        (call $scalePacked (local.get $cst) (local.get $cs) (i32.const 3) (i32.const 1)
          (f64.const 0x1p-112)))))

  (func $gradAt (param $d v128) (param $x v128) (param $a i32) (result v128)
    (call $grad (local.get $d) (local.get $x)
      (v128.load (local.get $a))
      (v128.load offset=32 (local.get $a))
      (v128.load offset=64 (local.get $a))))

  ;; out = dy * scale[c] (cst: scale).
  (func (export "pix_scale")
    (param $dy i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $cst i32)
    (local $sh i32) (local $rb i32) (local $es i32) (local $cb i32)
    (local $p i32) (local $a i32) (local $aend i32) (local $pd i32) (local $po i32)
    (local $v v128)
    (local.set $sh (call $shift (local.get $dt)))
    (local.set $rb (i32.shl (local.get $C) (local.get $sh)))
    (local.set $es (i32.shl (i32.const 4) (local.get $sh)))
    (local.set $cb (i32.shl (local.get $cs) (i32.const 3)))
    ;; Scaled float16: the constants that multiply scaled values (see above).
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (call $scalePacked (local.get $cst) (local.get $cs) (i32.const 1) (i32.const 0)
          (f64.const 0x1p112))))
    (local.set $aend (i32.add (local.get $cst) (local.get $cb)))
    (block $done
      (loop $pixel
        (br_if $done (i32.ge_s (local.get $p) (local.get $P)))
        (local.set $pd (i32.add (local.get $dy) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $po (i32.add (local.get $out) (i32.mul (local.get $p) (local.get $rb))))
        (local.set $a (local.get $cst))
        (block $cdone
          (loop $channels
            (br_if $cdone (i32.ge_u (local.get $a) (local.get $aend)))
            (local.set $v (call $ld4 (local.get $pd) (local.get $dt)))
            (call $st4 (local.get $po) (local.get $dt)
              (f64x2.mul (call $lo (local.get $v)) (v128.load (local.get $a)))
              (f64x2.mul (call $hi2 (local.get $v) (local.get $pd) (local.get $dt))
                (v128.load offset=16 (local.get $a))))
            (local.set $pd (i32.add (local.get $pd) (local.get $es)))
            (local.set $po (i32.add (local.get $po) (local.get $es)))
            (local.set $a (i32.add (local.get $a) (i32.const 32)))
            (br $channels)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $pixel)))
    ;; Scaled float16: the constants back.
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (call $scalePacked (local.get $cst) (local.get $cs) (i32.const 1) (i32.const 0)
          (f64.const 0x1p-112)))))
)
