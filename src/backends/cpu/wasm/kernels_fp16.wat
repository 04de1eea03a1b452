;; The FP16 build of the kernels (kernels_fp16_wasm.ts): kernels.wat with each function
;; below in place of kernels.wat's function of the same name (scripts/build_wasm.ts), for
;; engines that have the WebAssembly FP16 proposal's conversions f32x4.promote_low_f16x8
;; and f16x8.demote_f32x4_zero (one instruction each on x64 with F16C). Everything else,
;; the arithmetic, the sums' association and the tests that choose the exact conversion,
;; is kernels.wat's. The build also sends every float16 call to the exact path (dt 3): its
;; decode is now one instruction, so the scaled path (dt 1), its Inf/NaN checks and its
;; rescaling would only cost time.
;;
;; It gives the bits of the baseline build for every input:
;; - $f16x4: every float16 is a float32, so the conversion is exact. Only a signalling NaN
;;   differs: it comes out quiet (with its sign and payload), which the kernels' promotion
;;   to float64 makes it in both builds (only the `decode` test export shows float32 lanes).
;; - $near16x4, $near16x8 only see the lanes that $inexact lets through: finite, zero or
;;   normal below 65520, and not on a float16 tie. For those, rounding the nearest-even
;;   float32 w to nearest even again gives the float64 value rounded once (double rounding
;;   can only go wrong when the first rounding lands on a tie of the second), which is what
;;   f16x8.demote_f32x4_zero does (V8 on x64: vcvtps2ph with rounding control 0, nearest
;;   even). Every other lane still takes $exact (round to odd, then the integer
;;   conversion), as before.
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

  ;; The float16 bits of four float32 lanes w (lanes 0-3): f16x8.demote_f32x4_zero.
  (func $near16x4 (param $w v128) (result v128)
    (i16x8.neg (local.get $w)))

  ;; The same for w0 (lanes 0-3) and w1 (lanes 4-7).
  (func $near16x8 (param $w0 v128) (param $w1 v128) (result v128)
    (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
      (i16x8.neg (local.get $w0))
      (i16x8.neg (local.get $w1))))
)
