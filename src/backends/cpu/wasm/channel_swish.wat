;; The activation of the GroupNorm write (kind 3 of channel_norms.wat's $bn_value, the "swish"
;; stage of kernels/channel_stages.ts): aclnnGroupNormSilu, aclnnGroupNormSiluV2 and
;; aclnnGroupNormSwish normalize, then apply y = g / (1 + exp(-s * g)) in float32 (s = 1 for
;; SiLU), as CANN's kernels do it: Muls(-s), Exp, Adds(1), Div (hicann/ops-nn e5c3fa9
;; norm/group_norm_silu/op_kernel/group_norm_silu_b16.h:374-381; norm/group_norm_swish/op_kernel/
;; group_norm_swish_base.h:270-282: the numerator is g, not s * g). One pass over the data, the
;; activation in the registers of the normalize write: no second pass as a composite would take.
;; Spliced into kernels.wat's module after channel_pixels.wat (scripts/build_wasm.ts).
;;
;; WebAssembly SIMD has no exp: $cs_exp4 is the Cephes expf scheme, vectorised. Contract, for
;; every float32 x (tests/cpu/wasm_exp.test.ts checks it against Math.exp rounded to float32):
;; - x in [-87.33, 88.72] (a normal result): relative error at most 2^-22 (2 ulp);
;; - x above 88.7228 (exp overflows float32) and +inf: +inf; x in (-103.97, -87.33) (a subnormal
;;   result): absolute error at most 2^-149 (one subnormal ulp); x below -103.973 and -inf: +0;
;; - NaN: NaN.
;; Method: n = nearest(x * log2(e)) on x clamped to [-104, 89] (the 1.5 * 2^23 rounding trick,
;; which also gives n as an integer); r = x - n * ln2 with ln2 split
;; in two (Cody-Waite: n * 0.693359375 is exact for |n| <= 2^9), |r| <= ln2 / 2; e^r =
;; 1 + r + r^2 * P(r), P of degree 5 (Cephes expf.c coefficients, error < 1 ulp on that range,
;; evaluated by Estrin's scheme);
;; then times 2^n as 2^(n >> 1) * 2^(n - (n >> 1)), two exact powers of two (each a normal
;; float32 for n in [-150, 129]), so that results near overflow and the subnormals round once.
(module
  (func $cs_exp4 (param $x v128) (result v128)
    (local $n v128) (local $r v128) (local $p v128) (local $k v128) (local $h v128)
    ;; pmax/pmin (one instruction each) keep a NaN x: it is their first operand.
    (local.set $x
      (f32x4.pmin (f32x4.pmax (local.get $x) (v128.const f32x4 -104 -104 -104 -104))
        (v128.const f32x4 89 89 89 89)))
    ;; n = nearest(x * log2(e)) by adding and taking away 1.5 * 2^23 (|x * log2(e)| < 2^22),
    ;; whose sum also holds n as an integer in its low bits (k below).
    (local.set $k
      (f32x4.add (f32x4.mul (local.get $x) (v128.const f32x4 1.44269504088896341 1.44269504088896341 1.44269504088896341 1.44269504088896341))
        (v128.const f32x4 12582912 12582912 12582912 12582912)))
    (local.set $n (f32x4.sub (local.get $k) (v128.const f32x4 12582912 12582912 12582912 12582912)))
    (local.set $k (i32x4.sub (local.get $k) (v128.const i32x4 0x4b400000 0x4b400000 0x4b400000 0x4b400000)))
    (local.set $r
      (f32x4.sub
        (f32x4.sub (local.get $x) (f32x4.mul (local.get $n) (v128.const f32x4 0.693359375 0.693359375 0.693359375 0.693359375)))
        (f32x4.mul (local.get $n) (v128.const f32x4 -2.12194440e-4 -2.12194440e-4 -2.12194440e-4 -2.12194440e-4))))
    ;; P(r) by Estrin's scheme (a shorter dependency chain than Horner's: the loops calling
    ;; this are bound by its latency): P = (a0 + a1 r) + r^2 ((a2 + a3 r) + r^2 (a4 + a5 r)).
    (local.set $h (f32x4.mul (local.get $r) (local.get $r)))
    (local.set $p
      (f32x4.add
        (f32x4.add (v128.const f32x4 5.0000001201e-1 5.0000001201e-1 5.0000001201e-1 5.0000001201e-1)
          (f32x4.mul (local.get $r) (v128.const f32x4 1.6666665459e-1 1.6666665459e-1 1.6666665459e-1 1.6666665459e-1)))
        (f32x4.mul (local.get $h)
          (f32x4.add
            (f32x4.add (v128.const f32x4 4.1665795894e-2 4.1665795894e-2 4.1665795894e-2 4.1665795894e-2)
              (f32x4.mul (local.get $r) (v128.const f32x4 8.3334519073e-3 8.3334519073e-3 8.3334519073e-3 8.3334519073e-3)))
            (f32x4.mul (local.get $h)
              (f32x4.add (v128.const f32x4 1.3981999507e-3 1.3981999507e-3 1.3981999507e-3 1.3981999507e-3)
                (f32x4.mul (local.get $r) (v128.const f32x4 1.9875691500e-4 1.9875691500e-4 1.9875691500e-4 1.9875691500e-4))))))))
    (local.set $p
      (f32x4.add (f32x4.add (f32x4.mul (local.get $p) (local.get $h)) (local.get $r))
        (v128.const f32x4 1 1 1 1)))
    ;; 2^h * 2^(k - h), h = k >> 1 (arithmetic), as float32 exponent fields (a NaN x leaves
    ;; p NaN, whatever k is).
    (local.set $h (i32x4.shr_s (local.get $k) (i32.const 1)))
    (f32x4.mul
      (f32x4.mul (local.get $p)
        (i32x4.shl (i32x4.add (local.get $h) (v128.const i32x4 127 127 127 127)) (i32.const 23)))
      (i32x4.shl
        (i32x4.add (i32x4.sub (local.get $k) (local.get $h)) (v128.const i32x4 127 127 127 127))
        (i32.const 23))))

  ;; g / (1 + exp(g * kneg)), kneg = -swishScale: CANN's Muls(-s), Exp, Adds(1), Div.
  (func $cs_swish4 (param $g v128) (param $kneg v128) (result v128)
    (f32x4.div (local.get $g)
      (f32x4.add (v128.const f32x4 1 1 1 1)
        (call $cs_exp4 (f32x4.mul (local.get $g) (local.get $kneg))))))

  ;; The swish write over one item, rows: y = swish((x - k0) * k1 + k2) with k3 = -swishScale.
  (func (export "bn_swish_rows")
    (param $x i32) (param $xs i32) (param $o i32) (param $os i32) (param $inner i32)
    (param $dt i32) (param $rows i32) (param $k0 f64) (param $k1 f64) (param $k2 f64) (param $k3 f64)
    (call $bn_write_rows (i32.const 3) (local.get $x) (local.get $xs) (local.get $x)
      (local.get $xs) (local.get $o) (local.get $os) (local.get $inner) (local.get $dt)
      (local.get $rows) (local.get $k0) (local.get $k1) (local.get $k2) (local.get $k3)))

  ;; The swish write over one item, pixels (constants as bn_norm_pix's, k3 = -swishScale).
  (func (export "bn_swish_pix")
    (param $x i32) (param $o i32) (param $C i32) (param $dt i32) (param $pix i32) (param $k i32)
    (call $bn_write_pix (i32.const 3) (local.get $x) (local.get $x) (local.get $o) (local.get $C)
      (local.get $dt) (local.get $pix) (local.get $k)))

  ;; Test export: exp of `n` float32 at byte address p, in place (n a multiple of 4).
  (func (export "cs_exp_f32") (param $p i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n) (i32.const 2))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (v128.store (local.get $p) (call $cs_exp4 (v128.load (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $next))))
)
