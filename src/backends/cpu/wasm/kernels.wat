;; WebAssembly SIMD kernels of the CPU backend (built by `deno task build:wasm` into
;; kernels_wasm.ts, and with the float16 conversions of kernels_fp16.wat, for engines with
;; the FP16 proposal, into kernels_fp16_wasm.ts; kernels_module.ts picks one). The module
;; imports its memory (shared, so that threads can share it).
;; Each thread instantiates it once, on the host heap (src/tensor/host_heap.ts), where the
;; stages' drivers (../kernels/row_norm_stage.ts, ../kernels/channel_stages.ts) run the kernels
;; on the tensors in place, with this thread's region of the heap for their per-channel arrays
;; (../kernels/wasm_instance.ts). Every address below is a byte address into that memory; the
;; vector constants sit at byte 64, in the heap's first page.
;;
;; This file holds the module's header, memory and codecs; the build splices in the kernels
;; and their helpers from row_sums.wat, row_norms*.wat and channel_*.wat (scripts/build_wasm.ts
;; ROWS_WAT_PATHS), in that order, and rewrites the whole text before assembling it: each
;; export with a `$dt` parameter becomes a dispatcher over three copies specialised to dt 0,
;; 1, 2; non-zero `v128.const`s become loads from a table at byte 64 (a data segment);
;; Binaryen then inlines every helper below into the kernels. So helpers may stay small
;; functions and constants stay where they are used, at no cost in the loops.
;;
;; Data: `dt` is the element type of a tensor: 0 float32, 1 float16, 2 bfloat16 (raw bits),
;; 3 bfloat16 with no NaN among the kernel's float constants, 4 float16 in a write that
;; computes no NaN (the drivers' choices, kernels/stage_types.ts writeCode: see $bits4); and
;; 5, a kernel's own choice inside a call, never a driver's: float16 loaded without the fix of
;; Inf and NaN and stored as 1, for elements it has found finite ($load_code) or in a first pass
;; that checks them after ($finite_first).
;; The kernels widen elements exactly to float32 lanes ($ld4), compute in float32, and round
;; each output once from float32 to its dtype, to nearest even ($bits4); row_norms.wat states
;; the numerics.

(module
  (import "env" "memory" (memory 65536 65536 shared))

  ;; The second result of row_sums.wat's $rf_sums2 and $rf_moments, from their last call
  ;; (each thread's instance has its own).
  (global $rf_second (mut f64) (f64.const 0))

  ;; Whether the last float16 pass of the channel sums (channel_norms.wat $bn_sums_rows_at,
  ;; channel_pixels.wat bn_sums_pix) that loaded its elements as finite (code 5) met one that is
  ;; an Inf or a NaN (its sums are then taken again with the full loads: $bn_special_at).
  (global $bn_special (mut i32) (i32.const 0))

  ;; ---------------------------------------------------------------------------------
  ;; Codecs

  ;; Four elements at byte address p as float32 lanes (exact).
  ;; bfloat16 (dt 2 or 3): the top half of a float32. float16: $f16x4; dt 4, a write whose
  ;; data is finite (kernels/stage_types.ts FLOAT16_NO_NAN), and dt 5, elements the kernel
  ;; found finite ($load_code), $f16x4_finite.
  (func $ld4 (param $p i32) (param $dt i32) (result v128)
    (if (result v128) (i32.eqz (local.get $dt))
      (then (v128.load (local.get $p)))
      (else
        (if (result v128) (i32.eq (i32.and (local.get $dt) (i32.const 6)) (i32.const 2))
          (then (i32x4.shl (v128.load16x4_u (local.get $p)) (i32.const 16)))
          (else
            (if (result v128) (i32.eq (i32.and (local.get $dt) (i32.const 6)) (i32.const 4))
              (then (call $f16x4_finite (local.get $p)))
              (else (call $f16x4 (local.get $p)))))))))

  ;; The code a kernel's second pass over float16 data loads it with: 5 when `finite` says
  ;; that every element it reads is finite, so that $ld4 skips the fix of Inf and NaN
  ;; ($f16x4_finite: the same lanes for finite elements, half the operations); dt otherwise
  ;; (other dtypes, and float16 with an Inf or a NaN). `finite` comes from the first pass's
  ;; sums: a term with an Inf or a NaN element is an Inf or a NaN (a product of one with
  ;; anything is), so a sum is finite only when every element it took is. (A sum of finite
  ;; terms may still overflow, with float32 weights near their maximum: then the second pass
  ;; takes the full loads, only slower. Sums of float16 elements and their squares cannot:
  ;; 2^16 squared times 2^24 elements stays below 2^56.) A kernel calls its second pass
  ;; twice, with 5 and with dt as constants (one loop each once inlined), and stores with dt.
  (func $load_code (param $dt i32) (param $finite i32) (result i32)
    (select (i32.const 5) (local.get $dt)
      (i32.and (i32.eq (local.get $dt) (i32.const 1)) (local.get $finite))))

  ;; Whether a first pass over dt data loads it as finite first (code 5, $f16x4_finite) and
  ;; checks it after (row_sums.wat $rf_squares, $rf_moments, channel_pixels.wat bn_stats_pix,
  ;; the channel sums' $bn_special): float16, whose fix of Inf and NaN costs this build four
  ;; operations per four lanes. The FP16 build's conversion handles them at no cost: never
  ;; there (kernels_fp16.wat), where the check alone made rms_fwd 1.49x and bn_stats_rows
  ;; 1.35x slower.
  (func $finite_first (param $dt i32) (result i32)
    (i32.eq (local.get $dt) (i32.const 1)))

  ;; Whether any of the n float16 elements at p is an Inf or a NaN (exponent 31): their
  ;; magnitudes' largest, 32 then 8 elements at a time, above 65504's bits. A pass that would
  ;; load float16 with the fix of Inf and NaN ($f16x4) asks first, and loads as finite (code 5)
  ;; when none is.
  (func $f16_specials (param $p i32) (param $n i32) (result i32)
    (local $top v128) (local $top2 v128) (local $end32 i32) (local $end8 i32) (local $end i32)
    (local $m v128)
    (local.set $m (v128.const i16x8 0x7fff 0x7fff 0x7fff 0x7fff 0x7fff 0x7fff 0x7fff 0x7fff))
    (local.set $end32 (i32.add (local.get $p) (i32.shl (i32.and (local.get $n) (i32.const -32))
      (i32.const 1))))
    (local.set $end8 (i32.add (local.get $p) (i32.shl (i32.and (local.get $n) (i32.const -8))
      (i32.const 1))))
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n) (i32.const 1))))
    (block $done32
      (loop $next32
        (br_if $done32 (i32.ge_u (local.get $p) (local.get $end32)))
        (local.set $top (i16x8.max_u
          (i16x8.max_u (local.get $top) (v128.and (v128.load (local.get $p)) (local.get $m)))
          (v128.and (v128.load offset=16 (local.get $p)) (local.get $m))))
        (local.set $top2 (i16x8.max_u
          (i16x8.max_u (local.get $top2) (v128.and (v128.load offset=32 (local.get $p)) (local.get $m)))
          (v128.and (v128.load offset=48 (local.get $p)) (local.get $m))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br $next32)))
    (local.set $top (i16x8.max_u (local.get $top) (local.get $top2)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end8)))
        (local.set $top (i16x8.max_u (local.get $top)
          (v128.and (v128.load (local.get $p)) (local.get $m))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $next)))
    (block $tailDone
      (loop $tail
        (br_if $tailDone (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $top (i16x8.max_u (local.get $top)
          (i16x8.splat (i32.and (i32.load16_u (local.get $p)) (i32.const 0x7fff)))))
        (local.set $p (i32.add (local.get $p) (i32.const 2)))
        (br $tail)))
    (v128.any_true (i16x8.gt_u (local.get $top)
      (v128.const i16x8 0x7bff 0x7bff 0x7bff 0x7bff 0x7bff 0x7bff 0x7bff 0x7bff))))

  ;; Whether a pass may load the n float16 elements of the rows at p and q as finite (code 5):
  ;; $finite_first says so of dt, and neither row holds an Inf or a NaN ($f16_specials, which
  ;; other dtypes do not scan). A row given as both (q = p: the channel writes that read one
  ;; input pass it twice, channel_norms.wat $bn_write_rows) is scanned once.
  (func $f16_rows_finite (param $dt i32) (param $p i32) (param $q i32) (param $n i32)
    (result i32)
    (if (result i32) (call $finite_first (local.get $dt))
      (then (i32.eqz (i32.or (call $f16_specials (local.get $p) (local.get $n))
        (if (result i32) (i32.eq (local.get $q) (local.get $p))
          (then (i32.const 0))
          (else (call $f16_specials (local.get $q) (local.get $n)))))))
      (else (i32.const 0))))

  ;; Whether a row kernel keeps its first pass's float32 terms in scratch rows for its second
  ;; pass (row_norms_grad.wat ln_bwd, row_norms_add_grad.wat add_ln_bwd, row_norms.wat
  ;; add_rms_fwd, row_norms_cast.wat add_rms_cast_fwd) instead of loading its rows and forming
  ;; the terms again: for the 16-bit dtypes, whose loads cost more than the kept terms' stores
  ;; (ln_bwd float32 1.02x slower with them).
  (func $keeps_terms (param $dt i32) (result i32)
    (i32.ne (local.get $dt) (i32.const 0)))

  ;; Whether a backward row kernel whose kept values save its second pass little more than
  ;; the float16 conversions keeps them (row_norms_rms_grad.wat rms_bwd: dy and x widened;
  ;; row_norms_ada_grad.wat ada_ln_bwd: g and z): float16 (rms_bwd 0.84x, ada_ln_bwd 0.82x the
  ;; time), not bfloat16, whose loads cost about what the kept values' stores do (rms_bwd
  ;; 1.09-1.11x, ada_ln_bwd 1.0x), nor the FP16 build, whose conversion costs nothing either
  ;; (rms_bwd 1.10-1.12x, ada_ln_bwd 1.07x with them): where $finite_first says float16's fix
  ;; of Inf and NaN costs.
  (func $keeps_float16 (param $dt i32) (result i32)
    (call $finite_first (local.get $dt)))

  ;; Whether v is finite (neither an Inf nor a NaN): v - v is 0 then, NaN otherwise.
  (func $finite64 (param $v f64) (result i32)
    (f64.eq (f64.sub (local.get $v) (local.get $v)) (f64.const 0)))

  ;; Four float16 at byte address p as float32 lanes, Inf and NaN included (a NaN keeps its
  ;; sign and mantissa, so a signalling NaN stays signalling). h sign-extended and shifted
  ;; left by 13 has the sign in bit 31 (and copies of it in bits 28-30, masked off) and
  ;; exponent and mantissa in bits 13-27: read as a float32 that is the value times 2^-112
  ;; (subnormals included), so one multiply by 2^112 rebiases it, sign and all; Inf/NaN
  ;; (exponent 31) then get an all-ones exponent with their mantissa kept (faster than
  ;; masking the sign separately: bench/RESULTS.md, "Why the constants are what they are").
  ;; The FP16 build replaces it (kernels_fp16.wat).
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

  ;; $f16x4 for finite float16 elements (dt 4): the same lanes without the fix of Inf and NaN
  ;; (the sign-extended, shifted, masked bits times 2^112). The FP16 build replaces it.
  (func $f16x4_finite (param $p i32) (result v128)
    (f32x4.mul
      (v128.and
        (i32x4.shl (v128.load16x4_s (local.get $p)) (i32.const 13))
        (v128.const i32x4 0x8fffe000 0x8fffe000 0x8fffe000 0x8fffe000))
      (v128.const f32x4 0x1p112 0x1p112 0x1p112 0x1p112)))

  ;; dt's bits (dt 1 to 4) of four float32 lanes v, each rounded once to nearest even, in
  ;; the low four 16-bit lanes (the high four unspecified). bfloat16: NaN keeps its sign and
  ;; top payload bits, made quiet. float16: $f16bits4; dt 4, a write that computes no NaN (its
  ;; data finite, its constants finite and bounded: no float32 value of it overflows, so no
  ;; lane is NaN), $f16bits4_finite.
  ;; dt 3, bfloat16 whose kernel has no NaN among its float constants, rounds without the NaN
  ;; lanes' choice, to the same bits: every NaN such a kernel can store comes from arithmetic
  ;; on its lanes (no kernel stores a loaded element as it is), so it is quiet, and it is
  ;; either a widened bfloat16 NaN (its operand's payload, propagated) or the processor's
  ;; default NaN (an invalid operation on non-NaN lanes): its low 16 bits are zero, so adding
  ;; 0x7fff and the even bit carries nothing and the shift keeps its top half, which the NaN
  ;; choice ($bf16w) would have made quiet. A NaN constant (a NaN weight or statistic) may
  ;; carry low payload bits, where the addition could carry into the exponent: the drivers
  ;; pass 2 for those (kernels/stage_types.ts writeCode). 0.78x the time of bfloat16 channels-last
  ;; batchNorm's normalize write (bench/RESULTS.md, eighth session).
  (func $bits4 (param $dt i32) (param $v v128) (result v128)
    (local $r v128)
    (if (result v128) (i32.eq (i32.and (local.get $dt) (i32.const 6)) (i32.const 2))
      (then
        (local.set $r (call $bf16w (local.get $dt) (local.get $v)))
        (i16x8.narrow_i32x4_u (local.get $r) (local.get $r)))
      (else
        (if (result v128) (i32.eq (local.get $dt) (i32.const 4))
          (then (call $f16bits4_finite (local.get $v)))
          (else (call $f16bits4 (local.get $v)))))))

  ;; $bits4 of eight float32 lanes, a's four then b's, in the eight 16-bit lanes: the same bits,
  ;; with one narrowing for both vectors (in the FP16 build, one combine of two conversions), for
  ;; one v128.store (row_sums.wat $rf_st8).
  (func $bits8 (param $dt i32) (param $a v128) (param $b v128) (result v128)
    (if (result v128) (i32.eq (i32.and (local.get $dt) (i32.const 6)) (i32.const 2))
      (then
        (i16x8.narrow_i32x4_u
          (call $bf16w (local.get $dt) (local.get $a))
          (call $bf16w (local.get $dt) (local.get $b))))
      (else
        (if (result v128) (i32.eq (local.get $dt) (i32.const 4))
          (then (call $f16bits8_finite (local.get $a) (local.get $b)))
          (else (call $f16bits8 (local.get $a) (local.get $b)))))))

  ;; A pair: eight consecutive elements at byte address p as two vectors of float32 lanes, for
  ;; loops whose lanes need no particular order (element-wise writes with constants the same in
  ;; every lane; sums whose association only needs to be fixed); a bfloat16 pair is stored back
  ;; by row_sums.wat $pair_st8.
  ;; $pair_lo is the first vector, $pair_hi the second. float32 and float16: elements 0-3 and
  ;; 4-7 ($ld4 twice). bfloat16: the even elements (0, 2, 4, 6) and the odd ones (1, 3, 5, 7)
  ;; of one 128-bit load, a shift and a mask, where $ld4's widening loads take the processor's
  ;; shuffle unit, twice per pair (bfloat16 bn_sums_rows 0.74x its time: bench/RESULTS.md,
  ;; nineteenth session).
  (func $pair_lo (param $p i32) (param $dt i32) (result v128)
    (if (result v128) (i32.eq (i32.and (local.get $dt) (i32.const 6)) (i32.const 2))
      (then (i32x4.shl (v128.load (local.get $p)) (i32.const 16)))
      (else (call $ld4 (local.get $p) (local.get $dt)))))

  ;; The second vector of the pair at p ($pair_lo says which elements); es the bytes of four
  ;; elements of dt.
  (func $pair_hi (param $p i32) (param $es i32) (param $dt i32) (result v128)
    (if (result v128) (i32.eq (i32.and (local.get $dt) (i32.const 6)) (i32.const 2))
      (then
        (v128.and (v128.load (local.get $p))
          (v128.const i32x4 0xffff0000 0xffff0000 0xffff0000 0xffff0000)))
      (else (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt)))))

  ;; The bfloat16 bits of four float32 lanes v as $bf16w rounds them, each in the high 16 bits of
  ;; its 32-bit lane (the low 16 zero): $bf16w's shifted left would take one more operation for
  ;; the mask it saves (bfloat16 pair writes 1.03-1.06x slower: row_sums.wat $pair_st8).
  (func $bf16w_hi (param $dt i32) (param $v v128) (result v128)
    (local $r v128)
    (local.set $r
      (v128.and
        (i32x4.add
          (i32x4.add (local.get $v) (v128.const i32x4 0x7fff 0x7fff 0x7fff 0x7fff))
          (v128.and (i32x4.shr_u (local.get $v) (i32.const 16)) (v128.const i32x4 1 1 1 1)))
        (v128.const i32x4 0xffff0000 0xffff0000 0xffff0000 0xffff0000)))
    (if (result v128) (i32.eq (local.get $dt) (i32.const 2))
      (then
        (i8x16.relaxed_laneselect
          (v128.and
            (v128.or (local.get $v) (v128.const i32x4 0x400000 0x400000 0x400000 0x400000))
            (v128.const i32x4 0xffff0000 0xffff0000 0xffff0000 0xffff0000))
          (local.get $r)
          (f32x4.ne (local.get $v) (local.get $v))))
      (else (local.get $r))))

  ;; The bfloat16 bits of four float32 lanes v (dt 2 or 3, as $bits4 says), each in the low 16
  ;; bits of its 32-bit lane (the high 16 zero).
  (func $bf16w (param $dt i32) (param $v v128) (result v128)
    (local $t v128)
    (local $r v128)
    (local.set $t (i32x4.shr_u (local.get $v) (i32.const 16)))
    (local.set $r
      (i32x4.shr_u
        (i32x4.add
          (i32x4.add (local.get $v) (v128.const i32x4 0x7fff 0x7fff 0x7fff 0x7fff))
          (v128.and (local.get $t) (v128.const i32x4 1 1 1 1)))
        (i32.const 16)))
    ;; NaN lanes (dt 2): the float32 self-comparison (one instruction, no constant), chosen by
    ;; relaxed_laneselect (one blend where bitselect is three): its mask is all ones or all
    ;; zeros in every lane, where relaxed SIMD defines the result (the same on every engine).
    ;; Together 0.84-0.93x the bfloat16 writes' time (bench/RESULTS.md).
    (if (result v128) (i32.eq (local.get $dt) (i32.const 2))
      (then
        (i8x16.relaxed_laneselect
          (v128.or (local.get $t) (v128.const i32x4 0x40 0x40 0x40 0x40))
          (local.get $r)
          (f32x4.ne (local.get $v) (local.get $v))))
      (else (local.get $r))))

  ;; The float16 bits of four float32 lanes v, each rounded once to nearest even, in the low
  ;; four 16-bit lanes (the high four unspecified): normal results rebiased and rounded by
  ;; integer operations; results below 2^-14 added to 0.5, so that the float32 addition rounds
  ;; at the float16 subnormal spacing 2^-24; Inf from 65520 up; NaN as 0x7e00 with its sign
  ;; (as V8's Float16Array stores it). Each choice is a relaxed_laneselect of a comparison's
  ;; mask (all ones or all zeros per lane, where relaxed SIMD defines it: one blend instead of
  ;; bitselect's three; 0.81-0.90x the float16 writes' time). The FP16 build replaces it
  ;; (kernels_fp16.wat).
  (func $f16bits4 (param $v v128) (result v128)
    (local $r v128)
    (local.set $r (call $f16w (local.get $v)))
    (i16x8.narrow_i32x4_u (local.get $r) (local.get $r)))

  ;; $f16bits4 for lanes that are not NaN (dt 4): the same bits without the NaN choice.
  (func $f16bits4_finite (param $v v128) (result v128)
    (local $r v128)
    (local.set $r (call $f16w_finite (local.get $v)))
    (i16x8.narrow_i32x4_u (local.get $r) (local.get $r)))

  ;; $f16bits4 of a and b, a's four lanes then b's ($bits8): one test of the eight lanes for
  ;; the normal rounding alone ($f16bits8_normal). The FP16 build replaces it.
  (func $f16bits8 (param $a v128) (param $b v128) (result v128)
    (if (result v128) (call $f16normals8 (local.get $a) (local.get $b))
      (then (call $f16bits8_normal (local.get $a) (local.get $b)))
      (else
        (i16x8.narrow_i32x4_u (call $f16w (local.get $a)) (call $f16w (local.get $b))))))

  ;; $f16bits4_finite of a and b, a's four lanes then b's. The FP16 build replaces it.
  (func $f16bits8_finite (param $a v128) (param $b v128) (result v128)
    (if (result v128) (call $f16normals8 (local.get $a) (local.get $b))
      (then (call $f16bits8_normal (local.get $a) (local.get $b)))
      (else
        (i16x8.narrow_i32x4_u
          (call $f16w_finite (local.get $a)) (call $f16w_finite (local.get $b))))))

  ;; Whether every lane of a and b rounds to a float16 normal ($f16normals of both: one test).
  (func $f16normals8 (param $a v128) (param $b v128) (result i32)
    (i32.eqz
      (v128.any_true
        (v128.or
          (call $f16outside
            (v128.and (local.get $a)
              (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))
          (call $f16outside
            (v128.and (local.get $b)
              (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))))))

  ;; The float16 bits of a's lanes then b's, all of them float16 normals ($f16normals8): the
  ;; magnitudes rounded ($f16normal) and narrowed, then the signs, which the top halves of the
  ;; float32 lanes narrowed with sign saturation keep exactly (-32768 to 32767), in bit 15.
  (func $f16bits8_normal (param $a v128) (param $b v128) (result v128)
    (v128.or
      (i16x8.narrow_i32x4_u
        (call $f16normal
          (v128.and (local.get $a)
            (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))
        (call $f16normal
          (v128.and (local.get $b)
            (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))
      (v128.and
        (i16x8.narrow_i32x4_s
          (i32x4.shr_s (local.get $a) (i32.const 16))
          (i32x4.shr_s (local.get $b) (i32.const 16)))
        (v128.const i16x8 0x8000 0x8000 0x8000 0x8000 0x8000 0x8000 0x8000 0x8000))))

  ;; The float16 bits of four float32 lanes v as $f16bits4 rounds them, each in the low 16 bits
  ;; of its 32-bit lane (the high 16 zero). A vector whose lanes are all float16 normals
  ;; ($f16normals) takes the normal rounding alone ($f16normal), the other choices only when a
  ;; lane needs them: the same bits.
  (func $f16w (param $v v128) (result v128)
    (local $a v128)
    (local.set $a
      (v128.and (local.get $v) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))
    (v128.or
      (call $f16sign (local.get $v))
      (if (result v128) (call $f16normals (local.get $a))
        (then (call $f16normal (local.get $a)))
        (else
          (i8x16.relaxed_laneselect
            (v128.const i32x4 0x7e00 0x7e00 0x7e00 0x7e00)
            (call $f16mag (local.get $a))
            (i32x4.gt_s (local.get $a)
              (v128.const i32x4 0x7f800000 0x7f800000 0x7f800000 0x7f800000)))))))

  ;; $f16w for lanes that are not NaN: the same bits without the NaN choice.
  (func $f16w_finite (param $v v128) (result v128)
    (local $a v128)
    (local.set $a
      (v128.and (local.get $v) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))
    (v128.or
      (call $f16sign (local.get $v))
      (if (result v128) (call $f16normals (local.get $a))
        (then (call $f16normal (local.get $a)))
        (else (call $f16mag (local.get $a))))))

  ;; Whether every float32 magnitude a (sign cleared) rounds to a float16 normal by
  ;; $f16normal ($f16outside marks none).
  (func $f16normals (param $a v128) (result i32)
    (i32.eqz (v128.any_true (call $f16outside (local.get $a)))))

  ;; All ones in the lanes of float32 magnitudes a (sign cleared) that $f16normal does not
  ;; round: outside 2^-14 <= a < 65520, that is 0x38800000 <= bits < 0x477ff000. Adding
  ;; 0x47800000 maps that range onto [-2^31, -2^31 + 0x0efff000) and every other magnitude
  ;; (zero, subnormals, overflow, Inf, NaN) above it, so one signed comparison marks them
  ;; (gt_s: one instruction where ge_s and the unsigned forms take several).
  (func $f16outside (param $a v128) (result v128)
    (i32x4.gt_s
      (i32x4.add (local.get $a)
        (v128.const i32x4 0x47800000 0x47800000 0x47800000 0x47800000))
      (v128.const i32x4 0x8effefff 0x8effefff 0x8effefff 0x8effefff)))

  ;; The float16 bits of float32 magnitudes a that $f16normals accepts: the exponent rebiased
  ;; and the mantissa rounded to nearest even by integer additions (0xfff and the kept bit that
  ;; decides ties), then shifted into place.
  (func $f16normal (param $a v128) (result v128)
    (i32x4.shr_u
      (i32x4.add
        (i32x4.add
          (local.get $a)
          (v128.const i32x4 0xc8000fff 0xc8000fff 0xc8000fff 0xc8000fff))
        (v128.and
          (i32x4.shr_u (local.get $a) (i32.const 13))
          (v128.const i32x4 1 1 1 1)))
      (i32.const 13)))

  ;; The float16 sign bit (0x8000) of each float32 lane v, in its low 16 bits.
  (func $f16sign (param $v v128) (result v128)
    (v128.and
      (i32x4.shr_u (local.get $v) (i32.const 16))
      (v128.const i32x4 0x8000 0x8000 0x8000 0x8000)))

  ;; The float16 magnitude bits of non-NaN float32 magnitudes a (sign cleared), rounded once
  ;; to nearest even ($f16bits4 says how): subnormal, normal, or Inf from 65520 up.
  (func $f16mag (param $a v128) (result v128)
    (i8x16.relaxed_laneselect
      (v128.const i32x4 0x7c00 0x7c00 0x7c00 0x7c00)
      (i8x16.relaxed_laneselect
        (i32x4.sub
          (f32x4.add (local.get $a) (v128.const f32x4 0.5 0.5 0.5 0.5))
          (v128.const i32x4 0x3f000000 0x3f000000 0x3f000000 0x3f000000))
        (call $f16normal (local.get $a))
        (i32x4.lt_s (local.get $a)
          (v128.const i32x4 0x38800000 0x38800000 0x38800000 0x38800000)))
      (i32x4.ge_s (local.get $a)
        (v128.const i32x4 0x477ff000 0x477ff000 0x477ff000 0x477ff000))))

  ;; log2 of the element size of dt.
  (func $shift (param $dt i32) (result i32)
    (i32.add (i32.const 1) (i32.eqz (local.get $dt))))

  ;; Tests (tests/cpu/wasm_kernels.test.ts, the FP16 build against the baseline): the codecs
  ;; the kernels use, alone. decode: n elements of dt at src as float32 at dst ($ld4). encode:
  ;; n float32 at src rounded once to dt at dst ($bits4; float32 copied). n a multiple of 4.
  ;; encode8: the same for a 16-bit dt through the eight-lane rounding ($bits8), n a multiple
  ;; of 8.
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
    (local $i i32)
    (local $es i32)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.eqz (local.get $dt))
          (then (v128.store (local.get $dst) (v128.load (local.get $src))))
          (else
            (v128.store64_lane 0 (local.get $dst)
              (call $bits4 (local.get $dt) (v128.load (local.get $src))))))
        (local.set $src (i32.add (local.get $src) (i32.const 16)))
        (local.set $dst (i32.add (local.get $dst) (local.get $es)))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $next))))

  (func (export "encode8") (param $src i32) (param $dst i32) (param $n i32) (param $dt i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (v128.store (local.get $dst)
          (call $bits8 (local.get $dt) (v128.load (local.get $src))
            (v128.load offset=16 (local.get $src))))
        (local.set $src (i32.add (local.get $src) (i32.const 32)))
        (local.set $dst (i32.add (local.get $dst) (i32.const 16)))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $next))))
)
