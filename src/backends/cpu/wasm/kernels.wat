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
;; The build (scripts/build_wasm.ts) rewrites this text before assembling it: each export
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

  ;; ---------------------------------------------------------------------------------
  ;; Scaled float16 (dt 1)
  ;;
  ;; The exact float16 decode ($ld4, dt 3) costs a float32 multiply and four integer
  ;; operations for Inf/NaN per vector, which made float16 sums 1.6x as slow as bfloat16
  ;; (row_stats 0.89 against 0.57 ns per element, one thread). Without them the lanes hold the
  ;; value times 2^-112, and since every kernel is a chain of float64 additions,
  ;; subtractions and multiplications, scaling its inputs by powers of two scales each
  ;; rounded result by the same power, bit for bit, as long as no value leaves the normal
  ;; float64 range. So for dt 1 the kernels scale what meets the decoded values (means and
  ;; accumulators by 2^-112, dot-product accumulators by 2^-224; write constants by 2^112,
  ;; which makes x * k the same product as before) and scale the sums back at the end.
  ;; The dispatcher (scripts/build_wasm.ts) takes this path when `$<kernel>__scaled16` holds:
  ;; - means and accumulators are 0 or at least 2^-200 in magnitude (and finite): with the
  ;;   decoded values multiples of 2^-136, every difference, product and sum then stays a
  ;;   multiple of 2^-500 (squares of differences from a computed mean, of 2^-440): normal
  ;;   float64, where scaling is exact (the means callers pass come from float32, float16
  ;;   or bfloat16 tensors, or from the data: 0 or at least 2^-149);
  ;; - write constants are below 2^900 in magnitude or not finite, so they scale up exactly;
  ;; - (writes) no float16 input of the call is Inf or NaN (exponent 31, which this decode
  ;;   leaves finite); the vectors past the end of a block are not checked, as nothing
  ;;   reads back what they produce.
  ;; Otherwise it runs the exact path (dt 3). The reductions check their inputs after the
  ;; kernel instead: when `$<kernel>__redo16` finds an Inf or NaN, the call runs again on
  ;; the exact path, which rewrites everything the first run wrote (pix_sums, which adds to
  ;; its accumulators, first takes back the copy its predicate kept). The data is then in
  ;; cache, whereas a check before the kernel reads a block from memory that the kernel
  ;; then reads again, without its arithmetic to hide the wait. The writes keep the check
  ;; before (they may write in place, so they could not run again). A check folded into the
  ;; kernels' loops (a running maximum of the decoded lanes) cost more than it saved. The
  ;; figures of these choices are in bench/RESULTS.md ("Why the constants are what they are").
  ;; The scaled path is 10-25% faster per element than the exact one (bench/RESULTS.md).

  ;; Whether the n float16 elements at byte address p hold no Inf or NaN: the largest
  ;; magnitude bits, 32 elements per step in two chains (half the cost of 8 per step), then
  ;; 8, then one at a time.
  (func $finite16 (param $p i32) (param $n i32) (result i32)
    (local $end i32)
    (local $max v128)
    (local $max1 v128)
    (local $mask v128)
    (local.set $mask (v128.const i32x4 0x7fff7fff 0x7fff7fff 0x7fff7fff 0x7fff7fff))
    (local.set $end
      (i32.add (local.get $p) (i32.shl (i32.and (local.get $n) (i32.const -32)) (i32.const 1))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $max
          (i16x8.max_u
            (i16x8.max_u (local.get $max)
              (v128.and (v128.load (local.get $p)) (local.get $mask)))
            (v128.and (v128.load offset=16 (local.get $p)) (local.get $mask))))
        (local.set $max1
          (i16x8.max_u
            (i16x8.max_u (local.get $max1)
              (v128.and (v128.load offset=32 (local.get $p)) (local.get $mask)))
            (v128.and (v128.load offset=48 (local.get $p)) (local.get $mask))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br $next)))
    (local.set $end
      (i32.add (local.get $end) (i32.shl (i32.and (local.get $n) (i32.const 24)) (i32.const 1))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $max
          (i16x8.max_u (local.get $max) (v128.and (v128.load (local.get $p)) (local.get $mask))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $next)))
    (local.set $end
      (i32.add (local.get $end) (i32.shl (i32.and (local.get $n) (i32.const 7)) (i32.const 1))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (if (i32.eq (i32.and (i32.load16_u (local.get $p)) (i32.const 0x7c00)) (i32.const 0x7c00))
          (then (return (i32.const 0))))
        (local.set $p (i32.add (local.get $p) (i32.const 2)))
        (br $next)))
    (i32.eqz (v128.any_true
      (i16x8.gt_u (i16x8.max_u (local.get $max) (local.get $max1))
        (v128.const i32x4 0x7bff7bff 0x7bff7bff 0x7bff7bff 0x7bff7bff)))))

  ;; Whether a mean or accumulator v scales down by 2^-112 or 2^-224 on the scaled path.
  (func $smallOk (param $v f64) (result i32)
    (i32.or (f64.eq (local.get $v) (f64.const 0))
      (i32.and (f64.ge (f64.abs (local.get $v)) (f64.const 0x1p-200))
        (f64.lt (f64.abs (local.get $v)) (f64.const inf)))))

  ;; Whether the n float64 values at byte address a all pass $smallOk.
  (func $smallOkAll (param $a i32) (param $n i32) (result i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $a) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (if (i32.eqz (call $smallOk (f64.load (local.get $a)))) (then (return (i32.const 0))))
        (local.set $a (i32.add (local.get $a) (i32.const 8)))
        (br $next)))
    (i32.const 1))

  ;; Whether a write constant k scales up by 2^112 exactly (below 2^900, or Inf or NaN).
  (func $bigOk (param $k f64) (result i32)
    (i32.eqz
      (i32.and (f64.ge (f64.abs (local.get $k)) (f64.const 0x1p900))
        (f64.lt (f64.abs (local.get $k)) (f64.const inf)))))

  ;; Whether constant k of the packed pixel constants (count per vector, see the pixel
  ;; writes) passes $bigOk for the cs channels.
  (func $bigOkPacked (param $cst i32) (param $cs i32) (param $count i32) (param $k i32)
    (result i32)
    (local $a i32)
    (local $end i32)
    (local $j i32)
    (local.set $a (i32.add (local.get $cst) (i32.shl (local.get $k) (i32.const 5))))
    (local.set $end
      (i32.add (local.get $a) (i32.mul (i32.shl (local.get $cs) (i32.const 3)) (local.get $count))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (local.set $j (i32.const 0))
        (block $lanes
          (loop $lane
            (br_if $lanes (i32.ge_u (local.get $j) (i32.const 32)))
            (if (i32.eqz (call $bigOk (f64.load (i32.add (local.get $a) (local.get $j)))))
              (then (return (i32.const 0))))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $lane)))
        (local.set $a (i32.add (local.get $a) (i32.shl (local.get $count) (i32.const 5))))
        (br $next)))
    (i32.const 1))

  ;; Multiplies the n float64 values at byte address a (n even) by the power of two f.
  (func $scaleAll (param $a i32) (param $n i32) (param $f f64)
    (local $end i32)
    (local $v v128)
    (local.set $v (f64x2.splat (local.get $f)))
    (local.set $end (i32.add (local.get $a) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (v128.store (local.get $a) (f64x2.mul (v128.load (local.get $a)) (local.get $v)))
        (local.set $a (i32.add (local.get $a) (i32.const 16)))
        (br $next))))

  ;; Multiplies the per-channel arrays of the pixel reductions at acc (sums, dots, means;
  ;; cs entries each) by the power of two f, the dots by f * f.
  (func $scaleMoments (param $acc i32) (param $cs i32) (param $f f64)
    (local $cb i32)
    (local.set $cb (i32.shl (local.get $cs) (i32.const 3)))
    (call $scaleAll (local.get $acc) (local.get $cs) (local.get $f))
    (call $scaleAll (i32.add (local.get $acc) (local.get $cb)) (local.get $cs)
      (f64.mul (local.get $f) (local.get $f)))
    (call $scaleAll (i32.add (local.get $acc) (i32.shl (local.get $cb) (i32.const 1)))
      (local.get $cs) (local.get $f)))

  ;; Multiplies constant k of the packed pixel constants by the power of two f.
  (func $scalePacked (param $cst i32) (param $cs i32) (param $count i32) (param $k i32)
    (param $f f64)
    (local $a i32)
    (local $end i32)
    (local $v v128)
    (local.set $v (f64x2.splat (local.get $f)))
    (local.set $a (i32.add (local.get $cst) (i32.shl (local.get $k) (i32.const 5))))
    (local.set $end
      (i32.add (local.get $a) (i32.mul (i32.shl (local.get $cs) (i32.const 3)) (local.get $count))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (v128.store (local.get $a) (f64x2.mul (v128.load (local.get $a)) (local.get $v)))
        (v128.store offset=16 (local.get $a)
          (f64x2.mul (v128.load offset=16 (local.get $a)) (local.get $v)))
        (local.set $a (i32.add (local.get $a) (i32.shl (local.get $count) (i32.const 5))))
        (br $next))))

  ;; Copies n float64 values (n even) from byte address a to b (disjoint).
  (func $copy64 (param $a i32) (param $b i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $a) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (v128.store (local.get $b) (v128.load (local.get $a)))
        (local.set $a (i32.add (local.get $a) (i32.const 16)))
        (local.set $b (i32.add (local.get $b) (i32.const 16)))
        (br $next))))

  ;; The predicates of the scaled path and the redo tests, one each per kernel with a dt
  ;; (same parameters). The reductions check their float16 inputs for Inf and NaN after the
  ;; kernel ($readRedo): a redo rewrites all they wrote. The writes check them before
  ;; ($inputsFinite), as they may write in place.
  (func $readRedo (param $a i32) (param $b i32) (param $count i32) (result i32)
    (i32.eqz (call $inputsFinite (local.get $a) (local.get $b) (local.get $count))))

  ;; Whether count float16 elements at a and at b hold no Inf or NaN (b = a for one input).
  (func $inputsFinite (param $a i32) (param $b i32) (param $count i32) (result i32)
    (if (result i32) (call $finite16 (local.get $a) (local.get $count))
      (then
        (i32.or (i32.eq (local.get $a) (local.get $b))
          (call $finite16 (local.get $b) (local.get $count))))
      (else (i32.const 0))))

  (func $decode__scaled16 (param $src i32) (param $dst i32) (param $n i32) (param $dt i32)
    (result i32)
    ;; The codec tests read the decoded values themselves: always exact.
    (i32.const 0))

  (func $decode__redo16 (param $src i32) (param $dst i32) (param $n i32) (param $dt i32)
    (result i32)
    (i32.const 0))

  (func $encode__scaled16 (param $src i32) (param $dst i32) (param $n i32) (param $dt i32)
    (param $pairs i32) (result i32)
    ;; Encoding decodes nothing.
    (i32.const 0))

  (func $encode__redo16 (param $src i32) (param $dst i32) (param $n i32) (param $dt i32)
    (param $pairs i32) (result i32)
    (i32.const 0))

  (func $row_sums__scaled16
    (param $dy i32) (param $x i32) (param $n i32) (param $dt i32) (param $mean f64)
    (param $res i32) (result i32)
    (call $smallOk (local.get $mean)))

  (func $row_sums__redo16
    (param $dy i32) (param $x i32) (param $n i32) (param $dt i32) (param $mean f64)
    (param $res i32) (result i32)
    (call $readRedo (local.get $dy) (local.get $x) (local.get $n)))

  (func $row_stats__scaled16 (param $x i32) (param $n i32) (param $dt i32) (param $res i32)
    (result i32)
    (i32.const 1))

  (func $row_stats__redo16 (param $x i32) (param $n i32) (param $dt i32) (param $res i32)
    (result i32)
    (call $readRedo (local.get $x) (local.get $x) (local.get $n)))

  (func $row_normalize__scaled16
    (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64) (result i32)
    (i32.and (call $bigOk (local.get $k0)) (call $finite16 (local.get $x) (local.get $n))))

  (func $row_normalize__redo16
    (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64) (result i32)
    (i32.const 0))

  (func $row_gradient__scaled16
    (param $dy i32) (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64) (param $k2 f64) (result i32)
    (i32.and (i32.and (call $bigOk (local.get $k0)) (call $bigOk (local.get $k1)))
      (call $inputsFinite (local.get $dy) (local.get $x) (local.get $n))))

  (func $row_gradient__redo16
    (param $dy i32) (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64) (param $k2 f64) (result i32)
    (i32.const 0))

  (func $row_scale__scaled16
    (param $dy i32) (param $out i32) (param $n i32) (param $dt i32) (param $k0 f64)
    (result i32)
    (i32.and (call $bigOk (local.get $k0)) (call $finite16 (local.get $dy) (local.get $n))))

  (func $row_scale__redo16
    (param $dy i32) (param $out i32) (param $n i32) (param $dt i32) (param $k0 f64)
    (result i32)
    (i32.const 0))

  ;; pix_sums adds to its sums and dots: when the scaled path is taken, they are copied to
  ;; $sumsCopy (the caller leaves room for five arrays), from where a redo takes them back.
  (func $sumsCopy (param $acc i32) (param $cs i32) (result i32)
    ;; The fourth and fifth per-channel arrays (8 cs bytes each).
    (i32.add (local.get $acc) (i32.mul (local.get $cs) (i32.const 24))))

  (func $pix_sums__scaled16
    (param $dy i32) (param $x i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $acc i32) (result i32)
    (local $cb i32)
    (local.set $cb (i32.shl (local.get $cs) (i32.const 3)))
    (if (i32.eqz
          (i32.and (call $smallOkAll (local.get $acc) (local.get $C))
            (i32.and (call $smallOkAll (i32.add (local.get $acc) (local.get $cb)) (local.get $C))
              (call $smallOkAll (i32.add (local.get $acc) (i32.shl (local.get $cb) (i32.const 1)))
                (local.get $C)))))
      (then (return (i32.const 0))))
    (call $copy64 (local.get $acc) (call $sumsCopy (local.get $acc) (local.get $cs))
      (i32.shl (local.get $cs) (i32.const 1)))
    (i32.const 1))

  (func $pix_sums__redo16
    (param $dy i32) (param $x i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $acc i32) (result i32)
    (if (i32.eqz
          (call $readRedo (local.get $dy) (local.get $x) (i32.mul (local.get $P) (local.get $C))))
      (then (return (i32.const 0))))
    (call $copy64 (call $sumsCopy (local.get $acc) (local.get $cs)) (local.get $acc)
      (i32.shl (local.get $cs) (i32.const 1)))
    (i32.const 1))

  (func $pix_stats__scaled16
    (param $x i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32) (param $acc i32)
    (result i32)
    (i32.const 1))

  (func $pix_stats__redo16
    (param $x i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32) (param $acc i32)
    (result i32)
    (call $readRedo (local.get $x) (local.get $x) (i32.mul (local.get $P) (local.get $C))))

  (func $pix_normalize__scaled16
    (param $x i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $cst i32) (result i32)
    (i32.and
      (call $bigOkPacked (local.get $cst) (local.get $cs) (i32.const 2) (i32.const 0))
      (call $finite16 (local.get $x) (i32.mul (local.get $P) (local.get $C)))))

  (func $pix_normalize__redo16
    (param $x i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $cst i32) (result i32)
    (i32.const 0))

  (func $pix_gradient__scaled16
    (param $dy i32) (param $x i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32)
    (param $dt i32) (param $cst i32) (result i32)
    (i32.and
      (i32.and
        (call $bigOkPacked (local.get $cst) (local.get $cs) (i32.const 3) (i32.const 0))
        (call $bigOkPacked (local.get $cst) (local.get $cs) (i32.const 3) (i32.const 1)))
      (call $inputsFinite (local.get $dy) (local.get $x)
        (i32.mul (local.get $P) (local.get $C)))))

  (func $pix_gradient__redo16
    (param $dy i32) (param $x i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32)
    (param $dt i32) (param $cst i32) (result i32)
    (i32.const 0))

  (func $pix_scale__scaled16
    (param $dy i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $cst i32) (result i32)
    (i32.and
      (call $bigOkPacked (local.get $cst) (local.get $cs) (i32.const 1) (i32.const 0))
      (call $finite16 (local.get $dy) (i32.mul (local.get $P) (local.get $C)))))

  (func $pix_scale__redo16
    (param $dy i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $cst i32) (result i32)
    (i32.const 0))

  ;; ---------------------------------------------------------------------------------
  ;; Row kernels: n elements at unit stride, per-row constants as parameters.

  ;; res[0] = sum(dy), res[1] = sum(dy * (x - mean)) over n elements.
  (func (export "row_sums")
    (param $dy i32) (param $x i32) (param $n i32) (param $dt i32) (param $mean f64)
    (param $res i32)
    (local $es i32)
    (local $end i32)
    (local $j i32)
    (local $m v128)
    (local $v v128)
    (local $w v128)
    (local $d v128)
    (local $sa v128) (local $sb v128) (local $sc v128) (local $sd v128)
    (local $ta v128) (local $tb v128) (local $tc v128) (local $td v128)
    (local $sum f64)
    (local $dot f64)
    (local $e f64)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then (local.set $mean (f64.mul (local.get $mean) (f64.const 0x1p-112)))))
    (local.set $m (f64x2.splat (local.get $mean)))
    (local.set $end (i32.and (local.get $n) (i32.const -8)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $end)))
        ;; Each vector of dy and of x is loaded (and decoded) once for both of its halves.
        (local.set $v (call $ld4 (local.get $dy) (local.get $dt)))
        (local.set $w (call $ld4 (local.get $x) (local.get $dt)))
        (local.set $d (call $lo (local.get $v)))
        (local.set $sa (f64x2.add (local.get $sa) (local.get $d)))
        (local.set $ta (f64x2.add (local.get $ta)
          (f64x2.mul (local.get $d) (f64x2.sub (call $lo (local.get $w)) (local.get $m)))))
        (local.set $d (call $hi2 (local.get $v) (local.get $dy) (local.get $dt)))
        (local.set $sb (f64x2.add (local.get $sb) (local.get $d)))
        (local.set $tb (f64x2.add (local.get $tb)
          (f64x2.mul (local.get $d)
            (f64x2.sub (call $hi2 (local.get $w) (local.get $x) (local.get $dt)) (local.get $m)))))
        (local.set $v (call $ld4 (i32.add (local.get $dy) (local.get $es)) (local.get $dt)))
        (local.set $w (call $ld4 (i32.add (local.get $x) (local.get $es)) (local.get $dt)))
        (local.set $d (call $lo (local.get $v)))
        (local.set $sc (f64x2.add (local.get $sc) (local.get $d)))
        (local.set $tc (f64x2.add (local.get $tc)
          (f64x2.mul (local.get $d) (f64x2.sub (call $lo (local.get $w)) (local.get $m)))))
        (local.set $d
          (call $hi2 (local.get $v) (i32.add (local.get $dy) (local.get $es)) (local.get $dt)))
        (local.set $sd (f64x2.add (local.get $sd) (local.get $d)))
        (local.set $td (f64x2.add (local.get $td)
          (f64x2.mul (local.get $d)
            (f64x2.sub
              (call $hi2 (local.get $w) (i32.add (local.get $x) (local.get $es)) (local.get $dt))
              (local.get $m)))))
        (local.set $dy (i32.add (local.get $dy) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $x (i32.add (local.get $x) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $next)))
    (local.set $sa
      (f64x2.add
        (f64x2.add (local.get $sa) (local.get $sb))
        (f64x2.add (local.get $sc) (local.get $sd))))
    (local.set $ta
      (f64x2.add
        (f64x2.add (local.get $ta) (local.get $tb))
        (f64x2.add (local.get $tc) (local.get $td))))
    (local.set $sum
      (f64.add (f64x2.extract_lane 0 (local.get $sa)) (f64x2.extract_lane 1 (local.get $sa))))
    (local.set $dot
      (f64.add (f64x2.extract_lane 0 (local.get $ta)) (f64x2.extract_lane 1 (local.get $ta))))
    (local.set $j (i32.const 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (i32.sub (local.get $n) (local.get $end))))
        (local.set $e (call $elem (local.get $dy) (local.get $j) (local.get $dt)))
        (local.set $sum (f64.add (local.get $sum) (local.get $e)))
        (local.set $dot
          (f64.add (local.get $dot)
            (f64.mul (local.get $e)
              (f64.sub (call $elem (local.get $x) (local.get $j) (local.get $dt))
                (local.get $mean)))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $next)))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (local.set $sum (f64.mul (local.get $sum) (f64.const 0x1p112)))
        (local.set $dot (f64.mul (local.get $dot) (f64.const 0x1p224)))))
    (f64.store (local.get $res) (local.get $sum))
    (f64.store offset=8 (local.get $res) (local.get $dot)))

  ;; res[0] = sum(x), res[1] = sum((x - sum / n)^2) over n > 0 elements (two passes).
  (func (export "row_stats") (param $x i32) (param $n i32) (param $dt i32) (param $res i32)
    (local $es i32)
    (local $end i32)
    (local $j i32)
    (local $p i32)
    (local $v v128)
    (local $m v128)
    (local $d v128)
    (local $sa v128) (local $sb v128) (local $sc v128) (local $sd v128)
    (local $sum f64)
    (local $mean f64)
    (local $e f64)
    (local $t f64)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $end (i32.and (local.get $n) (i32.const -8)))
    (local.set $p (local.get $x))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $end)))
        (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
        (local.set $sa (f64x2.add (local.get $sa) (call $lo (local.get $v))))
        (local.set $sb
          (f64x2.add (local.get $sb) (call $hi2 (local.get $v) (local.get $p) (local.get $dt))))
        (local.set $v (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt)))
        (local.set $sc (f64x2.add (local.get $sc) (call $lo (local.get $v))))
        (local.set $sd
          (f64x2.add (local.get $sd)
            (call $hi2 (local.get $v) (i32.add (local.get $p) (local.get $es)) (local.get $dt))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $next)))
    (local.set $sa
      (f64x2.add
        (f64x2.add (local.get $sa) (local.get $sb))
        (f64x2.add (local.get $sc) (local.get $sd))))
    (local.set $sum
      (f64.add (f64x2.extract_lane 0 (local.get $sa)) (f64x2.extract_lane 1 (local.get $sa))))
    (local.set $j (local.get $end))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $sum
          (f64.add (local.get $sum) (call $elem (local.get $x) (local.get $j) (local.get $dt))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $next)))
    (local.set $mean (f64.div (local.get $sum) (f64.convert_i32_u (local.get $n))))
    (local.set $m (f64x2.splat (local.get $mean)))
    (local.set $sa (v128.const i64x2 0 0))
    (local.set $sb (v128.const i64x2 0 0))
    (local.set $sc (v128.const i64x2 0 0))
    (local.set $sd (v128.const i64x2 0 0))
    (local.set $j (i32.const 0))
    (local.set $p (local.get $x))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $end)))
        (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
        (local.set $d (f64x2.sub (call $lo (local.get $v)) (local.get $m)))
        (local.set $sa (f64x2.add (local.get $sa) (f64x2.mul (local.get $d) (local.get $d))))
        (local.set $d
          (f64x2.sub (call $hi2 (local.get $v) (local.get $p) (local.get $dt)) (local.get $m)))
        (local.set $sb (f64x2.add (local.get $sb) (f64x2.mul (local.get $d) (local.get $d))))
        (local.set $v (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt)))
        (local.set $d (f64x2.sub (call $lo (local.get $v)) (local.get $m)))
        (local.set $sc (f64x2.add (local.get $sc) (f64x2.mul (local.get $d) (local.get $d))))
        (local.set $d
          (f64x2.sub
            (call $hi2 (local.get $v) (i32.add (local.get $p) (local.get $es))
              (local.get $dt)) (local.get $m)))
        (local.set $sd (f64x2.add (local.get $sd) (f64x2.mul (local.get $d) (local.get $d))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $next)))
    (local.set $sa
      (f64x2.add
        (f64x2.add (local.get $sa) (local.get $sb))
        (f64x2.add (local.get $sc) (local.get $sd))))
    (local.set $e
      (f64.add (f64x2.extract_lane 0 (local.get $sa)) (f64x2.extract_lane 1 (local.get $sa))))
    (local.set $j (local.get $end))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $t
          (f64.sub (call $elem (local.get $x) (local.get $j) (local.get $dt)) (local.get $mean)))
        (local.set $e (f64.add (local.get $e) (f64.mul (local.get $t) (local.get $t))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $next)))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (local.set $sum (f64.mul (local.get $sum) (f64.const 0x1p112)))
        (local.set $e (f64.mul (local.get $e) (f64.const 0x1p224)))))
    (f64.store (local.get $res) (local.get $sum))
    (f64.store offset=8 (local.get $res) (local.get $e)))

  ;; out = x * k0 + k1 (see formulas.ts for the folded constants).
  (func (export "row_normalize")
    (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64)
    (local $es i32)
    (local $j i32)
    (local $v v128) (local $v1 v128)
    (local $a v128) (local $b v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then (local.set $k0 (f64.mul (local.get $k0) (f64.const 0x1p112)))))
    (local.set $a (f64x2.splat (local.get $k0)))
    (local.set $b (f64x2.splat (local.get $k1)))
    ;; float16/bfloat16: two vectors at a time while the second starts before n (one test
    ;; for the exact conversion per pair, see $st4x2), then the last one. float32 goes one
    ;; vector at a time (pairs made its row_normalize slower).
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.or (i32.eqz (local.get $dt))
          (i32.ge_s (i32.add (local.get $j) (i32.const 4)) (local.get $n))))
        (local.set $v (call $ld4 (local.get $x) (local.get $dt)))
        (local.set $v1 (call $ld4 (i32.add (local.get $x) (local.get $es)) (local.get $dt)))
        (call $st4x2 (local.get $out) (i32.add (local.get $out) (local.get $es)) (local.get $dt)
          (call $normK (call $lo (local.get $v)) (local.get $a) (local.get $b))
          (call $normK (call $hi2 (local.get $v) (local.get $x) (local.get $dt))
            (local.get $a) (local.get $b))
          (call $normK (call $lo (local.get $v1)) (local.get $a) (local.get $b))
          (call $normK
            (call $hi2 (local.get $v1) (i32.add (local.get $x) (local.get $es)) (local.get $dt))
            (local.get $a) (local.get $b)))
        (local.set $x (i32.add (local.get $x) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $out (i32.add (local.get $out) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $j) (local.get $n)))
        (local.set $v (call $ld4 (local.get $x) (local.get $dt)))
        (call $st4 (local.get $out) (local.get $dt)
          (call $normK (call $lo (local.get $v)) (local.get $a) (local.get $b))
          (call $normK (call $hi2 (local.get $v) (local.get $x) (local.get $dt))
            (local.get $a) (local.get $b)))
        (local.set $x (i32.add (local.get $x) (local.get $es)))
        (local.set $out (i32.add (local.get $out) (local.get $es)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next))))

  ;; out = dy * k0 + (x * k1 + k2) (see formulas.ts for the folded constants).
  (func $grad (param $d v128) (param $x v128) (param $k0 v128) (param $k1 v128)
    (param $k2 v128) (result v128)
    (f64x2.add (f64x2.mul (local.get $d) (local.get $k0))
      (f64x2.add (f64x2.mul (local.get $x) (local.get $k1)) (local.get $k2))))

  (func (export "row_gradient")
    (param $dy i32) (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64) (param $k2 f64)
    (local $es i32)
    (local $j i32)
    (local $v v128) (local $w v128) (local $v1 v128) (local $w1 v128)
    (local $a v128) (local $b v128) (local $c v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (local.set $k0 (f64.mul (local.get $k0) (f64.const 0x1p112)))
        (local.set $k1 (f64.mul (local.get $k1) (f64.const 0x1p112)))))
    (local.set $a (f64x2.splat (local.get $k0)))
    (local.set $b (f64x2.splat (local.get $k1)))
    (local.set $c (f64x2.splat (local.get $k2)))
    ;; float16/bfloat16: two vectors at a time while the second starts before n (one test
    ;; for the exact conversion per pair, see $st4x2), then the last one. float32 goes one
    ;; vector at a time (pairs made its row_normalize slower).
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.or (i32.eqz (local.get $dt))
          (i32.ge_s (i32.add (local.get $j) (i32.const 4)) (local.get $n))))
        (local.set $v (call $ld4 (local.get $dy) (local.get $dt)))
        (local.set $w (call $ld4 (local.get $x) (local.get $dt)))
        (local.set $v1 (call $ld4 (i32.add (local.get $dy) (local.get $es)) (local.get $dt)))
        (local.set $w1 (call $ld4 (i32.add (local.get $x) (local.get $es)) (local.get $dt)))
        (call $st4x2 (local.get $out) (i32.add (local.get $out) (local.get $es)) (local.get $dt)
          (call $grad (call $lo (local.get $v)) (call $lo (local.get $w))
            (local.get $a) (local.get $b) (local.get $c))
          (call $grad (call $hi2 (local.get $v) (local.get $dy) (local.get $dt))
            (call $hi2 (local.get $w) (local.get $x) (local.get $dt))
            (local.get $a) (local.get $b) (local.get $c))
          (call $grad (call $lo (local.get $v1)) (call $lo (local.get $w1))
            (local.get $a) (local.get $b) (local.get $c))
          (call $grad
            (call $hi2 (local.get $v1) (i32.add (local.get $dy) (local.get $es)) (local.get $dt))
            (call $hi2 (local.get $w1) (i32.add (local.get $x) (local.get $es)) (local.get $dt))
            (local.get $a) (local.get $b) (local.get $c)))
        (local.set $dy (i32.add (local.get $dy) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $x (i32.add (local.get $x) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $out (i32.add (local.get $out) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $j) (local.get $n)))
        (local.set $v (call $ld4 (local.get $dy) (local.get $dt)))
        (local.set $w (call $ld4 (local.get $x) (local.get $dt)))
        (call $st4 (local.get $out) (local.get $dt)
          (call $grad (call $lo (local.get $v)) (call $lo (local.get $w))
            (local.get $a) (local.get $b) (local.get $c))
          (call $grad (call $hi2 (local.get $v) (local.get $dy) (local.get $dt))
            (call $hi2 (local.get $w) (local.get $x) (local.get $dt))
            (local.get $a) (local.get $b) (local.get $c)))
        (local.set $dy (i32.add (local.get $dy) (local.get $es)))
        (local.set $x (i32.add (local.get $x) (local.get $es)))
        (local.set $out (i32.add (local.get $out) (local.get $es)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next))))

  ;; out = dy * k0.
  (func (export "row_scale")
    (param $dy i32) (param $out i32) (param $n i32) (param $dt i32) (param $k0 f64)
    (local $es i32)
    (local $j i32)
    (local $v v128) (local $v1 v128)
    (local $a v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then (local.set $k0 (f64.mul (local.get $k0) (f64.const 0x1p112)))))
    (local.set $a (f64x2.splat (local.get $k0)))
    ;; float16/bfloat16: two vectors at a time while the second starts before n (one test
    ;; for the exact conversion per pair, see $st4x2), then the last one. float32 goes one
    ;; vector at a time (pairs made its row_normalize slower).
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.or (i32.eqz (local.get $dt))
          (i32.ge_s (i32.add (local.get $j) (i32.const 4)) (local.get $n))))
        (local.set $v (call $ld4 (local.get $dy) (local.get $dt)))
        (local.set $v1 (call $ld4 (i32.add (local.get $dy) (local.get $es)) (local.get $dt)))
        (call $st4x2 (local.get $out) (i32.add (local.get $out) (local.get $es)) (local.get $dt)
          (f64x2.mul (call $lo (local.get $v)) (local.get $a))
          (f64x2.mul (call $hi2 (local.get $v) (local.get $dy) (local.get $dt)) (local.get $a))
          (f64x2.mul (call $lo (local.get $v1)) (local.get $a))
          (f64x2.mul
            (call $hi2 (local.get $v1) (i32.add (local.get $dy) (local.get $es)) (local.get $dt))
            (local.get $a)))
        (local.set $dy (i32.add (local.get $dy) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $out (i32.add (local.get $out) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $j) (local.get $n)))
        (local.set $v (call $ld4 (local.get $dy) (local.get $dt)))
        (call $st4 (local.get $out) (local.get $dt)
          (f64x2.mul (call $lo (local.get $v)) (local.get $a))
          (f64x2.mul (call $hi2 (local.get $v) (local.get $dy) (local.get $dt)) (local.get $a)))
        (local.set $dy (i32.add (local.get $dy) (local.get $es)))
        (local.set $out (i32.add (local.get $out) (local.get $es)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next))))

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
