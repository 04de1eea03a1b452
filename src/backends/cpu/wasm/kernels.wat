;; WebAssembly SIMD kernels of the CPU backend (built by `deno task build:wasm` into
;; kernels_wasm.ts, and with the float16 conversions of kernels_fp16.wat, for engines with
;; the FP16 proposal, into kernels_fp16_wasm.ts; kernels_module.ts picks one). The module
;; imports its memory (shared, so that threads can share it).
;; Each thread instantiates it once, on the host heap (src/tensor/host_heap.ts), where
;; the drivers in ../kernels/wasm_kernels.ts run the kernels on the tensors in place, or on
;; blocks of them staged in the thread's region of the heap (../kernels/wasm_instance.ts).
;; Every address below is a byte address into that memory; the vector constants sit at
;; byte 64, in the heap's first page.
;;
;; This file holds the module's header, memory and codecs; the build splices in the rest of
;; its functions from kernels_scaled16.wat, kernels_rows.wat, kernels_pixel_sums.wat and
;; kernels_pixel_writes.wat (then the row norms' row_norms.wat, row_norms_grad.wat), in that
;; order, and rewrites the whole text before assembling it: each export
;; with a `$dt` parameter becomes a dispatcher over three copies specialised to dt 0, 1, 2;
;; non-zero `v128.const`s become loads from a table at byte 64 (a data segment); Binaryen
;; then inlines every helper below into the kernels. So helpers may stay small functions
;; and constants stay where they are used, at no cost in the loops.
;;
;; Data: `dt` is the element type of the blocks: 0 float32, 1 float16, 2 bfloat16 (raw bits);
;; inside the module, float16 has two codes: 1, the scaled path, and 3, the exact path (see
;; "Scaled float16" below; the build's dispatcher picks one per call, or runs the exact one
;; again after a scaled sum that met an Inf or NaN; both give the same bits). Values are
;; decoded exactly to float32 lanes (float16 on the scaled path: times 2^-112), then promoted
;; to float64: every formula is evaluated in float64 operation for operation as in
;; ../kernels/formulas.ts (wasm does not fuse multiply-adds), and each output is rounded
;; once to its dtype (float16/bfloat16: round to odd to float32, then to nearest even, which
;; equals one rounding from float64).
;; Sums use the association of the TypeScript kernels exactly (row_kernels.ts,
;; pixel_kernels.ts), so both give the same bits:
;; - rows (row_sums, row_stats): eight chains, element j of the block into chain j mod 8,
;;   combined as ((s0 + s2) + (s4 + s6)) + ((s1 + s3) + (s5 + s7)), then the n mod 8 tail
;;   elements added in order;
;; - pixels: per channel, four pixels at a time as (v0 + v1) + (v2 + v3), then the tail
;;   pixels one at a time.
;;
;; Pixel blocks hold P pixels of C channels each (packed, pixel stride C); per-channel
;; float64 arrays are cs = C rounded up to 4 long. A pixel is processed as cs / 4 vectors:
;; the last one may run into the next pixel (or past the block), whose lanes only reach the
;; padding of the per-channel arrays (reductions) or are rewritten by the next pixel
;; (writes, done pixel by pixel in order). So blocks need 16 bytes of slack after their end.
;; Row writes also process whole vectors past n (into the slack of the output block).

(module
  (import "env" "memory" (memory 4 65536 shared))

  ;; ---------------------------------------------------------------------------------
  ;; Codecs

  ;; Four elements at byte address p as float32 lanes (exact).
  ;; float16: h sign-extended and shifted left by 13 has the sign in bit 31 (and copies of it
  ;; in bits 28-30, masked off) and exponent and mantissa in bits 13-27: read as a float32
  ;; that is the value times 2^-112 (subnormals included), so one multiply by 2^112 rebiases
  ;; it, sign and all; Inf/NaN (exponent 31) then get an all-ones exponent with their
  ;; mantissa kept (faster than masking the sign separately: bench/RESULTS.md, "Why the
  ;; constants are what they are").
  ;; bfloat16: the top half of a float32.
  ;; Scaled float16 (dt 1): the same bits without the multiply and the Inf/NaN fix, that is
  ;; the value times 2^-112 for every finite float16 (see "Scaled float16").
  (func $ld4 (param $p i32) (param $dt i32) (result v128)
    (if (result v128) (i32.eqz (local.get $dt))
      (then (v128.load (local.get $p)))
      (else
        (if (result v128) (i32.eq (local.get $dt) (i32.const 2))
          (then (i32x4.shl (v128.load16x4_u (local.get $p)) (i32.const 16)))
          (else
            (if (result v128) (i32.eq (local.get $dt) (i32.const 1))
              (then
                (v128.and
                  (i32x4.shl (v128.load16x4_s (local.get $p)) (i32.const 13))
                  (v128.const i32x4 0x8fffe000 0x8fffe000 0x8fffe000 0x8fffe000)))
              (else (call $f16x4 (local.get $p)))))))))

  ;; The exact float16 decode of $ld4 (dt 3): four float16 at byte address p as float32
  ;; lanes, Inf and NaN included (a NaN keeps its sign and mantissa, so a signalling NaN
  ;; stays signalling). The FP16 build replaces it (kernels_fp16.wat).
  (func $f16x4 (param $p i32) (result v128)
    (local $h v128)
    (local.set $h (v128.load16x4_s (local.get $p)))
    (v128.or
      (f32x4.mul
        (v128.and
          (i32x4.shl (local.get $h) (i32.const 13))
          (v128.const i32x4 0x8fffe000 0x8fffe000 0x8fffe000 0x8fffe000))
        (v128.const f32x4 0x1p112 0x1p112 0x1p112 0x1p112))
      (v128.and
        (i32x4.gt_s
          (v128.and (local.get $h) (v128.const i32x4 0x7fff 0x7fff 0x7fff 0x7fff))
          (v128.const i32x4 0x7bff 0x7bff 0x7bff 0x7bff))
        (v128.const i32x4 0x7f800000 0x7f800000 0x7f800000 0x7f800000))))

  ;; Lanes 0, 1 of a float32x4 as float64x2.
  (func $lo (param $v v128) (result v128)
    (f64x2.promote_low_f32x4 (local.get $v)))

  ;; Lanes 2, 3 of a float32x4 as float64x2.
  (func $hi (param $v v128) (result v128)
    (f64x2.promote_low_f32x4
      (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $v) (local.get $v))))

  ;; Lanes 2, 3 of the four elements v read at byte address p, as float64x2: float32 loads
  ;; them again as 8 bytes at p + 8 instead of shuffling v (faster for the row kernels and
  ;; pixel sums; pix_stats keeps $hi); the 16-bit types take them from the decoded v.
  (func $hi2 (param $v v128) (param $p i32) (param $dt i32) (result v128)
    (if (result v128) (i32.eqz (local.get $dt))
      (then (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (local.get $p))))
      (else (call $hi (local.get $v)))))

  ;; The float32 bits of four float64 values (lo, hi) rounded to odd: the nearest-even
  ;; float32, minus one ulp when that rounded away from zero, with the last bit set when it
  ;; was inexact. Rounding this once more to a format at least two bits shorter gives the
  ;; same result as rounding the float64 value directly.
  (func $odd4 (param $lo v128) (param $hi v128) (result v128)
    (local $fa v128)
    (local $fb v128)
    (local $ba v128)
    (local $bb v128)
    (local.set $fa (f32x4.demote_f64x2_zero (local.get $lo)))
    (local.set $fb (f32x4.demote_f64x2_zero (local.get $hi)))
    (local.set $ba (f64x2.promote_low_f32x4 (local.get $fa)))
    (local.set $bb (f64x2.promote_low_f32x4 (local.get $fb)))
    (v128.or
      (i32x4.add
        (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $fa) (local.get $fb))
        (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27
          (f64x2.gt (f64x2.abs (local.get $ba)) (f64x2.abs (local.get $lo)))
          (f64x2.gt (f64x2.abs (local.get $bb)) (f64x2.abs (local.get $hi)))))
      (v128.and
        (v128.const i32x4 1 1 1 1)
        (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27
          (f64x2.ne (local.get $ba) (local.get $lo))
          (f64x2.ne (local.get $bb) (local.get $hi))))))

  ;; Stores four float64 values (lo, hi) at byte address p, each rounded once to dt.
  ;; float32: nearest even (the demotion). bfloat16: nearest even from the round-to-odd
  ;; bits; NaN keeps its sign and top payload bits, made quiet. float16: the round-to-odd
  ;; bits rebiased (normal results), or added to 0.5 so that the float32 addition rounds at
  ;; the float16 subnormal spacing 2^-24 (results below 2^-14), Inf from 65520 up, NaN as
  ;; 0x7e00 with its sign (as V8's Float16Array stores it).
  (func $st4 (param $p i32) (param $dt i32) (param $lo v128) (param $hi v128)
    (local $w v128)
    (local $r v128)
    (local.set $w (call $demote4 (local.get $lo) (local.get $hi)))
    (if (i32.eqz (local.get $dt))
      (then (v128.store (local.get $p) (local.get $w)) (return)))
    (v128.store64_lane 0 (local.get $p)
      (if (result v128) (v128.any_true (call $inexact (local.get $dt) (local.get $w)))
        (then
          (local.set $r (call $exact (local.get $dt) (local.get $lo) (local.get $hi)))
          (i16x8.narrow_i32x4_u (local.get $r) (local.get $r)))
        (else (call $near4 (local.get $dt) (local.get $w))))))

  ;; Two $st4s (at p0 and p1) with one test for the exact conversion, which then takes both
  ;; vectors: the test and its branch cost about a third of a float16 write, so pairs
  ;; write faster (figures in bench/RESULTS.md).
  (func $st4x2 (param $p0 i32) (param $p1 i32) (param $dt i32)
    (param $lo0 v128) (param $hi0 v128) (param $lo1 v128) (param $hi1 v128)
    (local $w0 v128)
    (local $w1 v128)
    (local $r v128)
    (local.set $w0 (call $demote4 (local.get $lo0) (local.get $hi0)))
    (local.set $w1 (call $demote4 (local.get $lo1) (local.get $hi1)))
    (if (i32.eqz (local.get $dt))
      (then
        (v128.store (local.get $p0) (local.get $w0))
        (v128.store (local.get $p1) (local.get $w1))
        (return)))
    (local.set $r
      (if (result v128)
        (v128.any_true
          (v128.or
            (call $inexact (local.get $dt) (local.get $w0))
            (call $inexact (local.get $dt) (local.get $w1))))
        (then
          (i16x8.narrow_i32x4_u
            (call $exact (local.get $dt) (local.get $lo0) (local.get $hi0))
            (call $exact (local.get $dt) (local.get $lo1) (local.get $hi1))))
        (else (call $near8 (local.get $dt) (local.get $w0) (local.get $w1)))))
    (v128.store64_lane 0 (local.get $p0) (local.get $r))
    (v128.store64_lane 1 (local.get $p1) (local.get $r)))

  ;; The nearest-even float32 bits of four float64 values (lo, hi).
  (func $demote4 (param $lo v128) (param $hi v128) (result v128)
    (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
      (f32x4.demote_f64x2_zero (local.get $lo))
      (f32x4.demote_f64x2_zero (local.get $hi))))

  ;; Lanes whose nearest-even float32 bits w may not round once more to dt (1 or 2) as the
  ;; float64 value would: rounding those once more equals one rounding of the float64 value
  ;; unless the first rounding landed on a tie of the target format (low bits 0x8000 for
  ;; bfloat16, 0x1000 for float16: a tie is representable in float32, so an inexact value
  ;; that rounds onto it lay on one side of it), or on Inf/NaN, or (float16) on a non-zero
  ;; subnormal, rounded at the 2^-24 spacing below, or on a value that overflows to Inf.
  ;; Such vectors take $exact (same results as the TypeScript stores); the others need only
  ;; $near, which is much cheaper than $exact (most vectors take it).
  (func $inexact (param $dt i32) (param $w v128) (result v128)
    (local $a v128)
    (local.set $a
      (v128.and (local.get $w) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))
    (if (result v128) (i32.eq (local.get $dt) (i32.const 2))
      (then
        (v128.or
          (i32x4.gt_s (local.get $a)
            (v128.const i32x4 0x7f7fffff 0x7f7fffff 0x7f7fffff 0x7f7fffff))
          (i32x4.eq
            (v128.and (local.get $w) (v128.const i32x4 0xffff 0xffff 0xffff 0xffff))
            (v128.const i32x4 0x8000 0x8000 0x8000 0x8000))))
      (else
        ;; float16: a tie, or a non-zero |w| outside [2^-14, 65520) (subnormal, overflow,
        ;; Inf, NaN): a - 2^-14's bits compared unsigned, written as a signed compare of
        ;; those bits plus 2^31 (SSE has no unsigned compare: V8 emits four instructions
        ;; for i32x4.gt_u, one for gt_s).
        (v128.or
          (i32x4.eq
            (v128.and (local.get $w) (v128.const i32x4 0x1fff 0x1fff 0x1fff 0x1fff))
            (v128.const i32x4 0x1000 0x1000 0x1000 0x1000))
          (v128.andnot
            (i32x4.gt_s
              (i32x4.add (local.get $a)
                (v128.const i32x4 0x47800000 0x47800000 0x47800000 0x47800000))
              (v128.const i32x4 0x8effefff 0x8effefff 0x8effefff 0x8effefff))
            (i32x4.eq (local.get $a) (v128.const i64x2 0 0)))))))

  ;; dt's bits of four nearest-even float32 bits w for which $inexact is false, as 16-bit
  ;; lanes 0-3 (lanes 4-7 unspecified).
  (func $near4 (param $dt i32) (param $w v128) (result v128)
    (local $r v128)
    (if (result v128) (i32.eq (local.get $dt) (i32.const 2))
      (then
        (local.set $r (call $near (local.get $dt) (local.get $w)))
        (i16x8.narrow_i32x4_u (local.get $r) (local.get $r)))
      (else (call $near16x4 (local.get $w)))))

  ;; The same for eight (w0, w1), as 16-bit lanes (w0's in lanes 0-3, w1's in 4-7).
  (func $near8 (param $dt i32) (param $w0 v128) (param $w1 v128) (result v128)
    (if (result v128) (i32.eq (local.get $dt) (i32.const 2))
      (then
        (i16x8.narrow_i32x4_u
          (call $near (local.get $dt) (local.get $w0))
          (call $near (local.get $dt) (local.get $w1))))
      (else (call $near16x8 (local.get $w0) (local.get $w1)))))

  ;; $near4 and $near8 for float16. The FP16 build replaces both (kernels_fp16.wat).
  (func $near16x4 (param $w v128) (result v128)
    (local $r v128)
    (local.set $r (call $near (i32.const 1) (local.get $w)))
    (i16x8.narrow_i32x4_u (local.get $r) (local.get $r)))

  (func $near16x8 (param $w0 v128) (param $w1 v128) (result v128)
    (i16x8.narrow_i32x4_u
      (call $near (i32.const 1) (local.get $w0))
      (call $near (i32.const 1) (local.get $w1))))

  ;; dt's bits (in the low half of each lane) of four nearest-even float32 bits w for which
  ;; $inexact is false: finite, not on a tie, and (float16) zero or normal below the
  ;; overflow threshold, so only the rounding shift remains.
  (func $near (param $dt i32) (param $w v128) (result v128)
    (local $a v128)
    (if (result v128) (i32.eq (local.get $dt) (i32.const 2))
      (then
        (i32x4.shr_u
          (i32x4.add
            (i32x4.add (local.get $w) (v128.const i32x4 0x7fff 0x7fff 0x7fff 0x7fff))
            (v128.and
              (i32x4.shr_u (local.get $w) (i32.const 16))
              (v128.const i32x4 1 1 1 1)))
          (i32.const 16)))
      (else
        (local.set $a
          (v128.and (local.get $w)
            (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))
        (v128.or
          (v128.and
            (i32x4.shr_u (local.get $w) (i32.const 16))
            (v128.const i32x4 0x8000 0x8000 0x8000 0x8000))
          ;; Rebias and round; a zero lane's sum is negative and clamps to 0.
          (i32x4.shr_u
            (i32x4.max_s
              (i32x4.add
                (i32x4.add
                  (local.get $a)
                  (v128.const i32x4 0xc8000fff 0xc8000fff 0xc8000fff 0xc8000fff))
                (v128.and
                  (i32x4.shr_u (local.get $a) (i32.const 13))
                  (v128.const i32x4 1 1 1 1)))
              (v128.const i64x2 0 0))
            (i32.const 13))))))

  ;; dt's bits of four float64 values (lo, hi) rounded once to dt, for any value: from
  ;; their round-to-odd bits.
  (func $exact (param $dt i32) (param $lo v128) (param $hi v128) (result v128)
    (local $w v128)
    (local.set $w (call $odd4 (local.get $lo) (local.get $hi)))
    (call $bits4 (local.get $dt) (local.get $w)
      (v128.and (local.get $w)
        (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))

  ;; dt's bits of four results given as round-to-odd float32 bits w (|w| = a; see $exact)
  ;; rounded once more to dt (1 or 2), for any value: nearest even with NaN kept quiet
  ;; (bfloat16); normal, subnormal (at the 2^-24 spacing, through a float32 addition), Inf
  ;; from 65520 up and NaN as 0x7e00 (float16). Its rounding shifts repeat $near's on
  ;; purpose: sharing them moved float16 pixel gradients from 1.80 to 1.93 ns per element.
  (func $bits4 (param $dt i32) (param $w v128) (param $a v128) (result v128)
    (local $r v128)
    (if (i32.eq (local.get $dt) (i32.const 2))
      (then
        (local.set $r
          (v128.bitselect
            (v128.or
              (i32x4.shr_u (local.get $w) (i32.const 16))
              (v128.const i32x4 0x40 0x40 0x40 0x40))
            (i32x4.shr_u
              (i32x4.add
                (i32x4.add (local.get $w) (v128.const i32x4 0x7fff 0x7fff 0x7fff 0x7fff))
                (v128.and
                  (i32x4.shr_u (local.get $w) (i32.const 16))
                  (v128.const i32x4 1 1 1 1)))
              (i32.const 16))
            (i32x4.gt_s (local.get $a)
              (v128.const i32x4 0x7f800000 0x7f800000 0x7f800000 0x7f800000)))))
      (else
        (local.set $r
          (v128.or
            (v128.and
              (i32x4.shr_u (local.get $w) (i32.const 16))
              (v128.const i32x4 0x8000 0x8000 0x8000 0x8000))
            (v128.bitselect
              (v128.const i32x4 0x7e00 0x7e00 0x7e00 0x7e00)
              (v128.bitselect
                (v128.const i32x4 0x7c00 0x7c00 0x7c00 0x7c00)
                (v128.bitselect
                  (i32x4.sub
                    (f32x4.add (local.get $a) (v128.const f32x4 0.5 0.5 0.5 0.5))
                    (v128.const i32x4 0x3f000000 0x3f000000 0x3f000000 0x3f000000))
                  (i32x4.shr_u
                    (i32x4.add
                      (i32x4.add
                        (local.get $a)
                        (v128.const i32x4 0xc8000fff 0xc8000fff 0xc8000fff 0xc8000fff))
                      (v128.and
                        (i32x4.shr_u (local.get $a) (i32.const 13))
                        (v128.const i32x4 1 1 1 1)))
                    (i32.const 13))
                  (i32x4.lt_s (local.get $a)
                    (v128.const i32x4 0x38800000 0x38800000 0x38800000 0x38800000)))
                (i32x4.ge_s (local.get $a)
                  (v128.const i32x4 0x477ff000 0x477ff000 0x477ff000 0x477ff000)))
              (i32x4.gt_s (local.get $a)
                (v128.const i32x4 0x7f800000 0x7f800000 0x7f800000 0x7f800000)))))))
    (local.get $r))

  ;; log2 of the element size of dt.
  (func $shift (param $dt i32) (result i32)
    (i32.add (i32.const 1) (i32.eqz (local.get $dt))))

  ;; Element j of a block as float64.
  (func $elem (param $p i32) (param $j i32) (param $dt i32) (result f64)
    (f64.promote_f32
      (f32x4.extract_lane 0
        (call $ld4
          (i32.add (local.get $p) (i32.shl (local.get $j) (call $shift (local.get $dt))))
          (local.get $dt)))))

  ;; Tests: n elements at src decoded to float32 at dst; n float64 at src encoded to dt at
  ;; dst (n a multiple of 4), four at a time or, with $pairs, mostly eight.
  (func (export "decode") (param $src i32) (param $dst i32) (param $n i32) (param $dt i32)
    (local $i i32)
    (local $es i32)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (v128.store (local.get $dst) (call $ld4 (local.get $src) (local.get $dt)))
        (local.set $src (i32.add (local.get $src) (local.get $es)))
        (local.set $dst (i32.add (local.get $dst) (i32.const 16)))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $next))))

  (func (export "encode") (param $src i32) (param $dst i32) (param $n i32) (param $dt i32)
    (param $pairs i32)
    (local $i i32)
    (local $es i32)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    ;; With $pairs, eight values at a time through $st4x2 (the vectors the kernels write in
    ;; pairs), then the last four through $st4.
    (block $done
      (loop $pair
        (br_if $done (i32.or (i32.eqz (local.get $pairs))
          (i32.gt_u (i32.add (local.get $i) (i32.const 8)) (local.get $n))))
        (call $st4x2 (local.get $dst) (i32.add (local.get $dst) (local.get $es)) (local.get $dt)
          (v128.load (local.get $src))
          (v128.load offset=16 (local.get $src))
          (v128.load offset=32 (local.get $src))
          (v128.load offset=48 (local.get $src)))
        (local.set $src (i32.add (local.get $src) (i32.const 64)))
        (local.set $dst (i32.add (local.get $dst) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (call $st4 (local.get $dst) (local.get $dt)
          (v128.load (local.get $src))
          (v128.load offset=16 (local.get $src)))
        (local.set $src (i32.add (local.get $src) (i32.const 32)))
        (local.set $dst (i32.add (local.get $dst) (local.get $es)))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $next))))
)
