;; The float16 write of bench/float16_floor.wat with the WebAssembly FP16 proposal's
;; conversions (hardware F16C on x86): f32x4.promote_low_f16x8 and f16x8.demote_f32x4_zero.
;; Neither npm:wabt 1.0.37 nor npm:binaryen 123 knows them, so this text uses i16x8.abs and
;; i16x8.neg in their places (same stack types, two-byte opcodes like theirs) and
;; bench/float16_floor.ts rewrites those opcodes: 0xfd 0x80 0x01 -> 0xfd 0xcb 0x02 (0x14b)
;; and 0xfd 0x81 0x01 -> 0xfd 0xc9 0x02 (0x149), the numbers in V8's
;; src/wasm/wasm-opcodes.h (F32x4PromoteLowF16x8, F16x8DemoteF32x4Zero).
(module
  (import "env" "memory" (memory 4 65536 shared))

  ;; float16 in and out, float32 arithmetic, one rounding by the hardware conversion.
  (func (export "float16_fp16") (param $x i32) (param $out i32) (param $n i32)
    (param $s f64) (param $t f64)
    (local $S v128)
    (local $T v128)
    (local.set $S (f32x4.splat (f32.demote_f64 (local.get $s))))
    (local.set $T (f32x4.splat (f32.demote_f64 (local.get $t))))
    (loop $next
      (v128.store64_lane 0 (local.get $out)
        (i16x8.neg ;; f16x8.demote_f32x4_zero
          (f32x4.add
            (f32x4.mul
              (i16x8.abs (v128.load64_zero (local.get $x))) ;; f32x4.promote_low_f16x8
              (local.get $S))
            (local.get $T))))
      (local.set $x (i32.add (local.get $x) (i32.const 8)))
      (local.set $out (i32.add (local.get $out) (i32.const 8)))
      (br_if $next (i32.gt_s (local.tee $n (i32.sub (local.get $n) (i32.const 4))) (i32.const 0)))))
)
