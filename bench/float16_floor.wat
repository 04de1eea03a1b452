;; Lower bounds for a float16 write in WebAssembly SIMD (bench/float16_floor.ts): the same
;; affine write as the library's row_normalize, y = x * s + t, but in float32 arithmetic
;; (fewer operations than the library's float64, so a bound for it), over four elements per
;; step. Each kernel takes (x, out, n, s, t), n a multiple of 4, byte addresses into the
;; imported memory; the vector constants become loads (scripts/build_wasm.ts
;; constantsToMemory), as in the library.
(module
  (import "env" "memory" (memory 4 65536 shared))

  ;; Four float16 elements at p as float32 lanes, exactly (Inf and NaN included): the
  ;; library's exact decode (kernels.wat $ld4, dt 3).
  (func $decode (param $p i32) (result v128)
    (local $h v128)
    (local.set $h (v128.load16x4_s (local.get $p)))
    (v128.or
      (f32x4.mul
        (v128.and (i32x4.shl (local.get $h) (i32.const 13))
          (v128.const i32x4 0x8fffe000 0x8fffe000 0x8fffe000 0x8fffe000))
        (v128.const f32x4 0x1p112 0x1p112 0x1p112 0x1p112))
      (v128.and
        (i32x4.gt_s (v128.and (local.get $h) (v128.const i32x4 0x7fff 0x7fff 0x7fff 0x7fff))
          (v128.const i32x4 0x7bff 0x7bff 0x7bff 0x7bff))
        (v128.const i32x4 0x7f800000 0x7f800000 0x7f800000 0x7f800000))))

  ;; The float16 bits (low half of each lane) of four float32 values w, rounded once,
  ;; branch-free. Normal results rebias and round
  ;; on the bits; below 2^-14 a float32 addition to 0.5 rounds at the subnormal spacing
  ;; 2^-24 (and gives 0 for 0); from 65520 up the rounded bits reach 0x7c00 (Inf) and are
  ;; clamped there; NaN becomes 0x7e00; the sign goes back last. (Measured slower than the
  ;; library's: its fast path leaves the rare lanes to a branch.)
  (func $encode (param $w v128) (result v128)
    (local $a v128)
    (local.set $a
      (v128.and (local.get $w) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))
    (v128.or
      (v128.and (i32x4.shr_u (local.get $w) (i32.const 16))
        (v128.const i32x4 0x8000 0x8000 0x8000 0x8000))
      (v128.bitselect
        (v128.const i32x4 0x7e00 0x7e00 0x7e00 0x7e00)
        (i32x4.min_u
          (v128.const i32x4 0x7c00 0x7c00 0x7c00 0x7c00)
          (v128.bitselect
            (i32x4.sub
              (f32x4.add (local.get $a) (v128.const f32x4 0.5 0.5 0.5 0.5))
              (v128.const i32x4 0x3f000000 0x3f000000 0x3f000000 0x3f000000))
            (call $round (local.get $a))
            (i32x4.lt_s (local.get $a)
              (v128.const i32x4 0x38800000 0x38800000 0x38800000 0x38800000))))
        (i32x4.gt_s (local.get $a)
          (v128.const i32x4 0x7f800000 0x7f800000 0x7f800000 0x7f800000)))))

  ;; The rebias (exponent 127 to 15) and round to nearest even of float32 magnitude bits a:
  ;; right for normal float16 results only.
  (func $round (param $a v128) (result v128)
    (i32x4.shr_u
      (i32x4.add
        (i32x4.add (local.get $a)
          (v128.const i32x4 0xc8000fff 0xc8000fff 0xc8000fff 0xc8000fff))
        (v128.and (i32x4.shr_u (local.get $a) (i32.const 13)) (v128.const i32x4 1 1 1 1)))
      (i32.const 13)))

  ;; float16 in and out, float32 arithmetic and the conversion above: a correct float16 write.
  (func (export "float16_float32_math") (param $x i32) (param $out i32) (param $n i32)
    (param $s f64) (param $t f64)
    (local $S v128)
    (local $T v128)
    (local $r v128)
    (local.set $S (f32x4.splat (f32.demote_f64 (local.get $s))))
    (local.set $T (f32x4.splat (f32.demote_f64 (local.get $t))))
    (loop $next
      (local.set $r
        (call $encode
          (f32x4.add (f32x4.mul (call $decode (local.get $x)) (local.get $S)) (local.get $T))))
      (v128.store64_lane 0 (local.get $out) (i16x8.narrow_i32x4_u (local.get $r) (local.get $r)))
      (local.set $x (i32.add (local.get $x) (i32.const 8)))
      (local.set $out (i32.add (local.get $out) (i32.const 8)))
      (br_if $next (i32.gt_s (local.tee $n (i32.sub (local.get $n) (i32.const 4))) (i32.const 0)))))

  ;; float16 in and out, only the sign and $round: wrong for zero, subnormal, overflowing
  ;; and non-finite results, so a bound even below a correct conversion.
  (func (export "float16_rebias_only") (param $x i32) (param $out i32) (param $n i32)
    (param $s f64) (param $t f64)
    (local $S v128)
    (local $T v128)
    (local $w v128)
    (local $r v128)
    (local.set $S (f32x4.splat (f32.demote_f64 (local.get $s))))
    (local.set $T (f32x4.splat (f32.demote_f64 (local.get $t))))
    (loop $next
      (local.set $w
        (f32x4.add (f32x4.mul (call $decode (local.get $x)) (local.get $S)) (local.get $T)))
      (local.set $r
        (v128.or
          (v128.and (i32x4.shr_u (local.get $w) (i32.const 16))
            (v128.const i32x4 0x8000 0x8000 0x8000 0x8000))
          (call $round
            (v128.and (local.get $w)
              (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))))
      (v128.store64_lane 0 (local.get $out) (i16x8.narrow_i32x4_u (local.get $r) (local.get $r)))
      (local.set $x (i32.add (local.get $x) (i32.const 8)))
      (local.set $out (i32.add (local.get $out) (i32.const 8)))
      (br_if $next (i32.gt_s (local.tee $n (i32.sub (local.get $n) (i32.const 4))) (i32.const 0)))))

  ;; float16 in, float32 out: the decode and the arithmetic without any float16 rounding.
  (func (export "float16_no_encode") (param $x i32) (param $out i32) (param $n i32)
    (param $s f64) (param $t f64)
    (local $S v128)
    (local $T v128)
    (local.set $S (f32x4.splat (f32.demote_f64 (local.get $s))))
    (local.set $T (f32x4.splat (f32.demote_f64 (local.get $t))))
    (loop $next
      (v128.store (local.get $out)
        (f32x4.add (f32x4.mul (call $decode (local.get $x)) (local.get $S)) (local.get $T)))
      (local.set $x (i32.add (local.get $x) (i32.const 8)))
      (local.set $out (i32.add (local.get $out) (i32.const 16)))
      (br_if $next (i32.gt_s (local.tee $n (i32.sub (local.get $n) (i32.const 4))) (i32.const 0)))))
)
