;; The FP16 build of the kernels (kernels_fp16_wasm.ts): kernels.wat with each function
;; below in place of kernels.wat's function of the same name (scripts/build_wasm.ts), for
;; engines that have the WebAssembly FP16 proposal's conversions f32x4.promote_low_f16x8
;; and f16x8.demote_f32x4_zero (one instruction each on x64 with F16C: vcvtph2ps, vcvtps2ph).
;; These are the kernels' float16 conversions: every float16 load of a kernel goes through
;; $ld4 to $f16x4, every float16 store through $bits4 to $f16bits4 or through $bits8 to
;; $f16bits8 (or, in a write that computes no NaN, $f16x4_finite, $f16bits4_finite and
;; $f16bits8_finite); $finite_first says that no pass loads as finite first here (and so that
;; no kernel keeps values to save conversions: kernels.wat $keeps_float16). Everything else,
;; the arithmetic and the sums' association, is kernels.wat's.
;;
;; It gives the bits of the baseline build for every input:
;; - $f16x4: every float16 is a float32, so the conversion is exact. Only a signalling NaN
;;   differs: it comes out quiet (with its sign and payload). The kernels never store a
;;   loaded element without arithmetic on it, and x64's float32 arithmetic makes a
;;   signalling NaN quiet with the same payload in both builds, so only the `decode` test
;;   export shows the difference (tests/cpu/wasm_fp16.test.ts pins it).
;; - $f16bits4: kernels.wat's $f16bits4 rounds each float32 lane once to nearest even,
;;   subnormal results at the 2^-24 spacing, Inf from 65520 up: that is IEEE 754's
;;   conversion, which f16x8.demote_f32x4_zero is (V8 on x64: vcvtps2ph with rounding
;;   control 0, nearest even). Only NaN differs: the conversion keeps the top nine payload
;;   bits below the quiet bit it sets, so a NaN comes out as 0x7e00-0x7fff or 0xfe00-0xffff,
;;   where kernels.wat writes 0x7e00 or 0xfe00 (its sign, no payload). Two minimums of the
;;   16-bit lanes fix that: unsigned with 0xfe00 takes the negative NaNs to 0xfe00 and leaves
;;   every other pattern (all below 0xfe00); then signed with 0x7e00 takes the positive NaNs
;;   (0x7e00-0x7fff, the largest signed values) to 0x7e00 and leaves the rest (the finite and
;;   infinite ones are at most 0x7c00, the negative ones are negative). Measured side by
;;   side (bench/RESULTS.md, 2026-11-29; float16 over float32, geometric mean over the
;;   kernels, one thread): 1.27x this way, 1.41x with the NaN lanes replaced before the
;;   conversion (a compare and a select of float32 lanes), 1.16x for the conversion alone
;;   (which differs on NaN payloads).
;;
;; wabt 1.0.37 and Binaryen 123 know neither conversion, so the text below writes
;; i16x8.abs in place of f32x4.promote_low_f16x8 and i16x8.neg in place of
;; f16x8.demote_f32x4_zero (the same stack types), which kernels.wat never uses; after
;; Binaryen, the build rewrites those opcodes (0xfd 0x80 -> 0xfd 0x14b and 0xfd 0x81 ->
;; 0xfd 0x149: the FP16 proposal's binary format, as in V8's src/wasm/wasm-opcodes.h,
;; F32x4PromoteLowF16x8 and F16x8DemoteF32x4Zero), walking the instructions
;; (scripts/wasm_opcodes.ts) so that no immediate or data byte is touched.
(module
  ;; Four float16 at byte address p as float32 lanes: f32x4.promote_low_f16x8.
  (func $f16x4 (param $p i32) (result v128)
    (i16x8.abs (v128.load64_zero (local.get $p))))

  ;; Four finite float16 (a write of code 4): f32x4.promote_low_f16x8, as $f16x4.
  (func $f16x4_finite (param $p i32) (result v128)
    (i16x8.abs (v128.load64_zero (local.get $p))))

  ;; The float16 bits of four float32 lanes v that are not NaN (a write of code 4: kernels.wat
  ;; $bits4): f16x8.demote_f32x4_zero alone.
  (func $f16bits4_finite (param $v v128) (result v128)
    (i16x8.neg (local.get $v)))

  ;; The float16 bits of four float32 lanes v (lanes 0-3): f16x8.demote_f32x4_zero,
  ;; its NaNs then made 0x7e00 or 0xfe00 (see above).
  (func $f16bits4 (param $v v128) (result v128)
    (i16x8.min_s
      (i16x8.min_u
        (i16x8.neg (local.get $v))
        (v128.const i32x4 0xfe00fe00 0xfe00fe00 0xfe00fe00 0xfe00fe00))
      (v128.const i32x4 0x7e007e00 0x7e007e00 0x7e007e00 0x7e007e00)))

  ;; $f16bits4_finite of a and b in eight lanes: two conversions, their low halves combined.
  (func $f16bits8_finite (param $a v128) (param $b v128) (result v128)
    (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
      (i16x8.neg (local.get $a))
      (i16x8.neg (local.get $b))))

  ;; Loads as finite (code 5) save nothing here: the conversion takes Inf and NaN as it takes
  ;; any value, so no first pass tries them and no kernel keeps values to save conversions
  ;; (kernels.wat $finite_first, $keeps_float16).
  (func $finite_first (param $dt i32) (result i32)
    (i32.const 0))

  ;; $f16bits4 of a and b in eight lanes: the two conversions combined, then one NaN fix for
  ;; all eight (see above).
  (func $f16bits8 (param $a v128) (param $b v128) (result v128)
    (i16x8.min_s
      (i16x8.min_u
        (call $f16bits8_finite (local.get $a) (local.get $b))
        (v128.const i32x4 0xfe00fe00 0xfe00fe00 0xfe00fe00 0xfe00fe00))
      (v128.const i32x4 0x7e007e00 0x7e007e00 0x7e007e00 0x7e007e00)))
)
