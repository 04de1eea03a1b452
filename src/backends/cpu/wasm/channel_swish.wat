;; The activation of the GroupNorm write (kind 3 of channel_norms.wat's $bn_value, the "swish"
;; stage of kernels/channel_stages.ts): aclnnGroupNormSilu, aclnnGroupNormSiluV2 and
;; aclnnGroupNormSwish normalize, then apply y = g / (1 + exp(-s * g)) in float32 (s = 1 for
;; SiLU), as CANN's kernels do it: Muls(-s), Exp, Adds(1), Div (hicann/ops-nn e5c3fa9
;; norm/group_norm_silu/op_kernel/group_norm_silu_b16.h:374-381; norm/group_norm_swish/op_kernel/
;; group_norm_swish_base.h:270-282: the numerator is g, not s * g). One pass over the data, the
;; activation in the registers of the normalize write: no second pass as a composite would take.
;; Spliced into kernels.wat's module after channel_pixels.wat (scripts/build_wasm.ts).
;;
;; WebAssembly SIMD has no exp. Both activations divide by d = 1 + exp(t) (here and
;; channel_swish_grad.wat), so the helper is $cs_one_plus_exp4: 1 + exp(t), rounded once from
;; exp(t) computed by Cody and Waite's range reduction and a polynomial, vectorised. Contract,
;; for every float32 t (tests/cpu/wasm_exp.test.ts checks it against 1 + Math.exp(t)):
;; - relative error at most 2^-22 (2 ulp) of 1 + exp(t), where that is finite;
;; - +inf where exp(t) overflows float32 (t above 88.7228, and +inf): as CANN's Exp then Adds
;;   give, so that g / d is a signed zero there;
;; - 1 for t below -86.5 and -inf (exp(t) < 2^-124 is far below 1's half ulp, 2^-24);
;; - NaN for NaN, whatever its payload.
;; Method: t clamped to [-86.5, 89] (pmax/pmin keep a NaN: it is their first operand);
;; n = nearest(t * log2(e)) by adding 1.5 * 2^23 - 1 (|t * log2(e)| < 2^22), which also leaves
;; n - 1 as an integer in the sum's low bits (k below); r = t - n * ln2 with ln2 split in two
;; (Cody-Waite: n * 0.693359375 is exact for |n| <= 2^9), |r| <= ln2 / 2; 2 e^r = 2 + r (2 +
;; r Q'(r)) by Horner's scheme, Q' twice the degree-4 minimax fit of (e^r - 1 - r) / r^2 in
;; relative error (scripts/fit_exp_polynomial.ts: 0.03 ulp), whose doubled coefficients are
;; exact; then 1 + exp(t) = 2 e^r * 2^(n-1) + 1 in one multiply-add, where 2^(n-1) (n in
;; [-125, 128]) is a normal float32 built from k's bits: the product is exact or overflows to
;; +inf as IEEE arithmetic does (a NaN e^r stays NaN), so fused or not it rounds once.
;; The multiply-adds are f32x4.relaxed_madd: fused on an engine and machine with FMA (V8 on
;; x64 with FMA3, arm64), separate roundings elsewhere; one machine always gives the same
;; bits, both are within the contract (worst 0.99 ulp fused and 1.00 unfused over 2^25
;; float32 t of both signs, a script of the ninth session). The swish write takes 0.71 ns per
;; element where Cephes's degree-7 polynomial by Estrin's scheme with two scaling multiplies
;; took 0.81, the same without fusing 1.12, and the exp of the general contract (subnormal
;; results, no fusing) 1.24 (bench/RESULTS.md, fifth and ninth sessions).
(module
  (func $cs_one_plus_exp4 (param $t v128) (result v128)
    (local $x v128) (local $n v128) (local $r v128) (local $p v128) (local $k v128)
    (local.set $x
      (f32x4.pmin (f32x4.pmax (local.get $t) (v128.const f32x4 -86.5 -86.5 -86.5 -86.5))
        (v128.const f32x4 89 89 89 89)))
    (local.set $k
      (f32x4.relaxed_madd (local.get $x)
        (v128.const f32x4 1.44269504088896341 1.44269504088896341 1.44269504088896341 1.44269504088896341)
        (v128.const f32x4 12582911 12582911 12582911 12582911)))
    (local.set $n (f32x4.sub (local.get $k) (v128.const f32x4 12582911 12582911 12582911 12582911)))
    ;; r = (t - n * 0.693359375) + n * 2.12194440e-4.
    (local.set $r
      (f32x4.relaxed_madd (local.get $n)
        (v128.const f32x4 2.12194440e-4 2.12194440e-4 2.12194440e-4 2.12194440e-4)
        (f32x4.relaxed_madd (local.get $n)
          (v128.const f32x4 -0.693359375 -0.693359375 -0.693359375 -0.693359375) (local.get $x))))
    ;; 2 e^r = 2 + r (2 + r Q'(r)), Q' = 2 Q (Horner).
    (local.set $p
      (f32x4.relaxed_madd (local.get $r)
        (v128.const f32x4 2.7629225515e-3 2.7629225515e-3 2.7629225515e-3 2.7629225515e-3)
        (v128.const f32x4 1.6737420112e-2 1.6737420112e-2 1.6737420112e-2 1.6737420112e-2)))
    (local.set $p
      (f32x4.relaxed_madd (local.get $r)
        (local.get $p)
        (v128.const f32x4 8.3336777985e-2 8.3336777985e-2 8.3336777985e-2 8.3336777985e-2)))
    (local.set $p
      (f32x4.relaxed_madd (local.get $r)
        (local.get $p)
        (v128.const f32x4 3.3333042264e-1 3.3333042264e-1 3.3333042264e-1 3.3333042264e-1)))
    (local.set $p
      (f32x4.relaxed_madd (local.get $r)
        (local.get $p)
        (v128.const f32x4 9.9999988079e-1 9.9999988079e-1 9.9999988079e-1 9.9999988079e-1)))
    (local.set $p (f32x4.relaxed_madd (local.get $r) (local.get $p) (v128.const f32x4 2 2 2 2)))
    (local.set $p (f32x4.relaxed_madd (local.get $r) (local.get $p) (v128.const f32x4 2 2 2 2)))
    ;; 2 e^r * 2^(n-1) + 1: k's bits are those of 1.5 * 2^23 plus n - 1, whose low nine bits
    ;; shifted left by 23 are (n - 1) << 23: 2^(n-1) once the bias 127 << 23 is added.
    (f32x4.relaxed_madd (local.get $p)
      (i32x4.add (i32x4.shl (local.get $k) (i32.const 23))
        (v128.const i32x4 0x3f800000 0x3f800000 0x3f800000 0x3f800000))
      (v128.const f32x4 1 1 1 1)))

  ;; g / (1 + exp(g * kneg)), kneg = -swishScale: CANN's Muls(-s), Exp, Adds(1), Div.
  (func $cs_swish4 (param $g v128) (param $kneg v128) (result v128)
    (f32x4.div (local.get $g)
      (call $cs_one_plus_exp4 (f32x4.mul (local.get $g) (local.get $kneg)))))

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
    (call $bn_write_pix_scanned (i32.const 3) (local.get $x) (local.get $x) (local.get $o)
      (local.get $C) (local.get $dt) (local.get $pix) (local.get $k)))

  ;; Test export: 1 + exp of `n` float32 at byte address p, in place (n a multiple of 4).
  (func (export "cs_one_plus_exp_f32") (param $p i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n) (i32.const 2))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (v128.store (local.get $p) (call $cs_one_plus_exp4 (v128.load (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $next))))
)
