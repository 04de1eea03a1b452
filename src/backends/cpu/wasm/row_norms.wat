;; The forward row kernels of LayerNorm, RMSNorm and AddRmsNorm, and the merge of column
;; partials (row_norms_grad.wat has the backward ones; row_sums.wat the helpers they share;
;; src/backends/cpu/rows/heap_rows.ts drives them), spliced into kernels.wat's module by the
;; build (scripts/build_wasm.ts, before its dtype specialisation): they use kernels.wat's
;; codecs ($ld4, $shift, $bits4) and get the same dispatch by `$dt` (0 float32, 1 float16,
;; 2 bfloat16) and the same inlining.
;;
;; Each kernel runs `rows` rows of n elements: data tensors at byte addresses (row 0 of the
;; call), consecutive rows `*s` bytes apart, elements at unit stride (in the host heap);
;; per-column float32 arrays (weights, biases, column partials) and per-row float32 arrays
;; (mean, rstd, from row 0 of the call) at byte addresses too. The per-column arrays must have
;; room for n rounded up to 4 (the last vector reads past n; only partials write there, and
;; only zeros). Data rows are read up to a vector past their end (the heap's block slack;
;; those lanes are masked off) and written exactly: whole vectors of four, then the last one
;; to three elements lane by lane ($rf_st4n), so that a row never writes into the next one
;; (threads may own it).
;;
;; Numerics (as CANN's kernels compute, hicann/ops-nn norm/*: float32 arithmetic for float32,
;; float16 and bfloat16 data): elements are widened exactly to float32 lanes, every
;; element-wise formula is evaluated in float32, and each output is rounded once from
;; float32 to its dtype, to nearest even ($bits4). Row sums and statistics: row_sums.wat.
(module
  ;; LayerNorm's y of four elements at p (dt): (x - mean) * rstd * w + b, w and b the float32
  ;; lanes at wp and bp.
  (func $ln_y4 (param $p i32) (param $dt i32) (param $mm v128) (param $rr v128) (param $wp i32)
    (param $bp i32) (result v128)
    (f32x4.add
      (f32x4.mul
        (f32x4.mul (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $mm))
          (local.get $rr))
        (v128.load (local.get $wp)))
      (v128.load (local.get $bp))))

  ;; RMSNorm's y of four elements at p (dt): x * rstd * g, g the float32 lanes at gp.
  (func $rms_y4 (param $p i32) (param $dt i32) (param $rr v128) (param $gp i32) (result v128)
    (f32x4.mul (f32x4.mul (call $ld4 (local.get $p) (local.get $dt)) (local.get $rr))
      (v128.load (local.get $gp))))

  ;; AddRmsNorm's float32 sum s = a + b of four elements at p and q (dt).
  (func $arms_s4 (param $p i32) (param $q i32) (param $dt i32) (result v128)
    (f32x4.add (call $ld4 (local.get $p) (local.get $dt)) (call $ld4 (local.get $q) (local.get $dt))))

  ;; AddRmsNorm's y of four elements, s * rstd * g (g the float32 lanes at g + c), as
  ;; add_rms_fwd and add_rms_cast_fwd (row_norms_cast.wat) form it: s the kept float32 sum at
  ;; ks + c when `kept`, else $arms_s4 of the rows at p and q (code dt).
  (func $arms_yk (param $p i32) (param $q i32) (param $dt i32) (param $kept i32) (param $ks i32)
    (param $c i32) (param $rr v128) (param $g i32) (result v128)
    (f32x4.mul
      (f32x4.mul
        (if (result v128) (local.get $kept)
          (then (v128.load (i32.add (local.get $ks) (local.get $c))))
          (else (call $arms_s4 (local.get $p) (local.get $q) (local.get $dt))))
        (local.get $rr))
      (v128.load (i32.add (local.get $g) (local.get $c)))))

  ;; Pass 1 of add_rms_fwd and add_rms_cast_fwd (row_norms_cast.wat) over one row of n elements
  ;; (n4 of them in whole vectors; es the bytes of four elements of dt): x = s rounded once to dt
  ;; at x ($arms_s4 of the rows at a and b, loaded as code ldt), and the sum of s^2, returned:
  ;; float32 lanes folded into float64 every 256 elements; with keep, s in the float32 row at ks.
  (func $arms_pass1 (param $a i32) (param $b i32) (param $x i32) (param $n i32) (param $n4 i32)
    (param $es i32) (param $ldt i32) (param $dt i32) (param $keep i32) (param $ks i32) (result f64)
    (local $p i32) (local $q i32) (local $t i32) (local $j i32) (local $v v128) (local $w v128)
    (local $acc v128) (local $sum f64)
    (local.set $p (local.get $a))
    (local.set $q (local.get $b))
    (local.set $t (local.get $x))
    (local.set $j (i32.const 0))
    (local.set $acc (v128.const i64x2 0 0))
    (local.set $sum (f64.const 0))
    ;; 16-bit data: pairs of vectors, x rounded and stored together ($rf_st8), the squares
    ;; added in the same order as below (a fold of 256 elements ends on a pair's second);
    ;; then whole vectors, then the last one to three elements.
    (if (i32.ne (local.get $dt) (i32.const 0))
      (then
        (block $pairsDone
          (loop $pair
            (br_if $pairsDone (i32.ge_u (i32.add (local.get $j) (i32.const 4)) (local.get $n4)))
            (local.set $v (call $arms_s4 (local.get $p) (local.get $q) (local.get $ldt)))
            (local.set $w
              (call $arms_s4 (i32.add (local.get $p) (local.get $es))
                (i32.add (local.get $q) (local.get $es)) (local.get $ldt)))
            (call $rf_st8 (local.get $t) (local.get $dt) (local.get $v) (local.get $w))
            (if (local.get $keep)
              (then
                (v128.store (local.get $ks) (local.get $v))
                (v128.store offset=16 (local.get $ks) (local.get $w))
                (local.set $ks (i32.add (local.get $ks) (i32.const 32)))))
            (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $v) (local.get $v))))
            (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $w) (local.get $w))))
            (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $t (i32.add (local.get $t) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (if (i32.eqz (i32.and (local.get $j) (i32.const 255)))
              (then
                (local.set $sum (f64.add (local.get $sum)
                  (call $rf_fold (local.get $acc) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
                    (v128.const i64x2 0 0))))
                (local.set $acc (v128.const i64x2 0 0))))
            (br $pair)))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (local.set $v (call $arms_s4 (local.get $p) (local.get $q) (local.get $ldt)))
        (call $rf_st4 (local.get $t) (local.get $dt) (local.get $v))
        (if (local.get $keep)
          (then
            (v128.store (local.get $ks) (local.get $v))
            (local.set $ks (i32.add (local.get $ks) (i32.const 16)))))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
        (local.set $t (i32.add (local.get $t) (local.get $es)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (if (i32.eqz (i32.and (local.get $j) (i32.const 255)))
          (then
            (local.set $sum (f64.add (local.get $sum)
              (call $rf_fold (local.get $acc) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $acc (v128.const i64x2 0 0))))
        (br $next)))
    (if (i32.lt_u (local.get $j) (local.get $n))
      (then
        (local.set $v (call $arms_s4 (local.get $p) (local.get $q) (local.get $ldt)))
        (call $rf_st4n (local.get $t) (local.get $dt) (local.get $v)
          (i32.sub (local.get $n) (local.get $j)))
        (if (local.get $keep) (then (v128.store (local.get $ks) (local.get $v))))
        (local.set $v
          (v128.and (local.get $v) (call $rf_mask (i32.sub (local.get $n) (local.get $j)))))
        (local.set $acc
          (f32x4.add (local.get $acc) (f32x4.mul (local.get $v) (local.get $v))))))
    (local.set $sum (f64.add (local.get $sum)
      (call $rf_fold (local.get $acc) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
        (v128.const i64x2 0 0))))
    (local.get $sum))

  ;; LayerNorm forward. Per row: mean = sum(x) / n and rstd = 1 / sqrt(sum((x - mean)^2) / n
  ;; + eps), each rounded to float32 (to the per-row arrays: $rf_stats);
  ;; y = (x - mean) * rstd * w + b ($ln_row_y, its loads of float16 skipping the fix of Inf and
  ;; NaN when the mean came out finite: row_sums.wat $rf_stats_code).
  (func (export "ln_fwd")
    (param $x i32) (param $xs i32) (param $y i32) (param $ys i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $eps f64) (param $w i32) (param $b i32) (param $mean i32)
    (param $rstd i32)
    (local $r i32) (local $es i32) (local $n4 i32) (local $mm v128) (local $rr v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (call $rf_stats (local.get $x) (local.get $n) (local.get $dt) (local.get $eps) (local.get $mean)
          (local.get $rstd))
        (local.set $mm (v128.load32_splat (local.get $mean)))
        (local.set $rr (v128.load32_splat (local.get $rstd)))
        (if (i32.eq (call $rf_stats_code (local.get $dt) (local.get $mean)) (i32.const 5))
          (then
            (call $ln_row_y (local.get $x) (local.get $y) (local.get $n) (local.get $n4)
              (local.get $es) (i32.const 5) (local.get $dt) (local.get $mm) (local.get $rr)
              (local.get $w) (local.get $b)))
          (else
            (call $ln_row_y (local.get $x) (local.get $y) (local.get $n) (local.get $n4)
              (local.get $es) (local.get $dt) (local.get $dt) (local.get $mm) (local.get $rr)
              (local.get $w) (local.get $b))))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $y (i32.add (local.get $y) (local.get $ys)))
        (local.set $mean (i32.add (local.get $mean) (i32.const 4)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; LayerNorm's y over one row of n elements (n4 in whole vectors; es the bytes of four) from x
  ;; at p to y at q: x loaded as code ldt, y stored as dt. 16-bit data: pairs of vectors,
  ;; rounded and stored together ($rf_st8); then whole vectors, then the last one to three
  ;; elements.
  (func $ln_row_y (param $p i32) (param $q i32) (param $n i32) (param $n4 i32) (param $es i32)
    (param $ldt i32) (param $dt i32) (param $mm v128) (param $rr v128) (param $w i32)
    (param $b i32)
    (local $c i32) (local $j i32)
    (if (i32.ne (local.get $dt) (i32.const 0))
      (then
        (block $pairsDone
          (loop $pair
            (br_if $pairsDone (i32.ge_u (i32.add (local.get $j) (i32.const 4)) (local.get $n4)))
            (call $rf_st8 (local.get $q) (local.get $dt)
              (call $ln_y4 (local.get $p) (local.get $ldt) (local.get $mm) (local.get $rr)
                (i32.add (local.get $w) (local.get $c)) (i32.add (local.get $b) (local.get $c)))
              (call $ln_y4 (i32.add (local.get $p) (local.get $es)) (local.get $ldt)
                (local.get $mm) (local.get $rr)
                (i32.add (local.get $w) (i32.add (local.get $c) (i32.const 16)))
                (i32.add (local.get $b) (i32.add (local.get $c) (i32.const 16)))))
            (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $c (i32.add (local.get $c) (i32.const 32)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $pair)))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (call $rf_st4 (local.get $q) (local.get $dt)
          (call $ln_y4 (local.get $p) (local.get $ldt) (local.get $mm) (local.get $rr)
            (i32.add (local.get $w) (local.get $c)) (i32.add (local.get $b) (local.get $c))))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next)))
    (if (i32.lt_u (local.get $j) (local.get $n))
      (then
        (call $rf_st4n (local.get $q) (local.get $dt)
          (call $ln_y4 (local.get $p) (local.get $ldt) (local.get $mm) (local.get $rr)
            (i32.add (local.get $w) (local.get $c)) (i32.add (local.get $b) (local.get $c)))
          (i32.sub (local.get $n) (local.get $j))))))

  ;; RMSNorm forward. Per row: rstd = 1 / sqrt(sum(x^2) / n + eps) rounded to float32 (to the
  ;; per-row array); y = x * rstd * g ($rms_row_y, its loads of float16 skipping the fix of
  ;; Inf and NaN when the sum of squares came out finite: kernels.wat $load_code).
  (func (export "rms_fwd")
    (param $x i32) (param $xs i32) (param $y i32) (param $ys i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $eps f64) (param $g i32) (param $rstd i32)
    (local $r i32) (local $es i32) (local $n4 i32) (local $sq f64) (local $rs f32) (local $rr v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $sq (call $rf_squares (local.get $x) (local.get $n) (local.get $dt)))
        (local.set $rs (call $rf_rstd (local.get $sq) (local.get $n) (local.get $eps)))
        (local.set $rr (f32x4.splat (local.get $rs)))
        (f32.store (local.get $rstd) (local.get $rs))
        (if (i32.eq (call $load_code (local.get $dt) (call $finite64 (local.get $sq))) (i32.const 5))
          (then
            (call $rms_row_y (local.get $x) (local.get $y) (local.get $n) (local.get $n4)
              (local.get $es) (i32.const 5) (local.get $dt) (local.get $rr) (local.get $g)))
          (else
            (call $rms_row_y (local.get $x) (local.get $y) (local.get $n) (local.get $n4)
              (local.get $es) (local.get $dt) (local.get $dt) (local.get $rr) (local.get $g))))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $y (i32.add (local.get $y) (local.get $ys)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; RMSNorm's y over one row of n elements (n4 in whole vectors; es the bytes of four) from x
  ;; to y: x loaded as code ldt (kernels.wat $load_code), y stored as dt. 16-bit data: pairs of
  ;; vectors, rounded and stored together ($rf_st8); then whole vectors, then the last one to
  ;; three elements.
  (func $rms_row_y (param $p i32) (param $q i32) (param $n i32) (param $n4 i32) (param $es i32)
    (param $ldt i32) (param $dt i32) (param $rr v128) (param $g i32)
    (local $c i32) (local $j i32)
    (if (i32.ne (local.get $dt) (i32.const 0))
      (then
        (block $pairsDone
          (loop $pair
            (br_if $pairsDone (i32.ge_u (i32.add (local.get $j) (i32.const 4)) (local.get $n4)))
            (call $rf_st8 (local.get $q) (local.get $dt)
              (call $rms_y4 (local.get $p) (local.get $ldt) (local.get $rr) (i32.add (local.get $g) (local.get $c)))
              (call $rms_y4 (i32.add (local.get $p) (local.get $es)) (local.get $ldt) (local.get $rr)
                (i32.add (local.get $g) (i32.add (local.get $c) (i32.const 16)))))
            (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $c (i32.add (local.get $c) (i32.const 32)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $pair)))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (call $rf_st4 (local.get $q) (local.get $dt)
          (call $rms_y4 (local.get $p) (local.get $ldt) (local.get $rr) (i32.add (local.get $g) (local.get $c))))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next)))
    (if (i32.lt_u (local.get $j) (local.get $n))
      (then
        (call $rf_st4n (local.get $q) (local.get $dt)
          (call $rms_y4 (local.get $p) (local.get $ldt) (local.get $rr) (i32.add (local.get $g) (local.get $c)))
          (i32.sub (local.get $n) (local.get $j))))))

  ;; AddRmsNorm forward. Per row: s = a + b in float32, x = s rounded to dt; rstd = 1 /
  ;; sqrt(sum(s^2) / n + eps) from the float sum (as Ascend 950's regbase kernel and the A2/A3
  ;; bfloat16 NORMAL template keep it: ops-nn norm/add_rms_norm/op_kernel/arch35/
  ;; add_rms_norm_regbase.h:103-230, add_rms_norm.h:131-254; the rounding of the sum that other
  ;; templates make is not every SoC's, so it stays in the simulator); y = s * rstd * g.
  (func (export "add_rms_fwd")
    (param $a i32) (param $as i32) (param $b i32) (param $bs i32) (param $x i32) (param $xs i32)
    (param $y i32) (param $ys i32) (param $n i32) (param $dt i32) (param $rows i32) (param $eps f64)
    (param $g i32) (param $rstd i32) (param $scr i32)
    (local $r i32) (local $es i32) (local $n4 i32) (local $rs f32) (local $rr v128) (local $sum f64)
    (local $keep i32)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $keep (i32.and (call $keeps_terms (local.get $dt))
      (i32.ge_s (local.get $scr) (i32.const 0))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        ;; Pass 1: x = round(a + b), and the float sum's squares ($arms_pass1; float16 rows
        ;; that hold no Inf or NaN loaded without the fix: kernels.wat $f16_specials).
        (if (call $f16_rows_finite (local.get $dt) (local.get $a) (local.get $b) (local.get $n))
          (then
            (local.set $sum (call $arms_pass1 (local.get $a) (local.get $b) (local.get $x)
              (local.get $n) (local.get $n4) (local.get $es) (i32.const 5) (local.get $dt)
              (local.get $keep) (local.get $scr))))
          (else
            (local.set $sum (call $arms_pass1 (local.get $a) (local.get $b) (local.get $x)
              (local.get $n) (local.get $n4) (local.get $es) (local.get $dt) (local.get $dt)
              (local.get $keep) (local.get $scr)))))
        (local.set $rs (call $rf_rstd (local.get $sum) (local.get $n) (local.get $eps)))
        (local.set $rr (f32x4.splat (local.get $rs)))
        (f32.store (local.get $rstd) (local.get $rs))
        ;; Pass 2: y from the float sum, kept, or formed again ($arms_row_y; a and b loaded as
        ;; finite float16 when the sum of squares is: kernels.wat $load_code).
        (if (local.get $keep)
          (then
            (call $arms_row_y (local.get $a) (local.get $b) (local.get $y) (local.get $n)
              (local.get $n4) (local.get $es) (local.get $dt) (local.get $dt) (local.get $rr)
              (local.get $g) (i32.const 1) (local.get $scr)))
          (else
            (if (i32.eq (call $load_code (local.get $dt) (call $finite64 (local.get $sum)))
                  (i32.const 5))
              (then
                (call $arms_row_y (local.get $a) (local.get $b) (local.get $y) (local.get $n)
                  (local.get $n4) (local.get $es) (i32.const 5) (local.get $dt) (local.get $rr)
                  (local.get $g) (i32.const 0) (local.get $scr)))
              (else
                (call $arms_row_y (local.get $a) (local.get $b) (local.get $y) (local.get $n)
                  (local.get $n4) (local.get $es) (local.get $dt) (local.get $dt) (local.get $rr)
                  (local.get $g) (i32.const 0) (local.get $scr))))))
        (local.set $a (i32.add (local.get $a) (local.get $as)))
        (local.set $b (i32.add (local.get $b) (local.get $bs)))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $y (i32.add (local.get $y) (local.get $ys)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))


  ;; addRmsNorm's y over one row of n elements (n4 in whole vectors; es the bytes of four) from
  ;; the rows at p and q (loaded as code ldt: kernels.wat $load_code), or from the kept float32
  ;; sum at ks when `kept`, to t (stored as dt), as
  ;; add_rms_fwd's pass 2 forms it: pairs of vectors for 16-bit data ($rf_st8), then whole
  ;; vectors, then the last one to three elements.
  (func $arms_row_y (param $p i32) (param $q i32) (param $t i32) (param $n i32) (param $n4 i32)
    (param $es i32) (param $ldt i32) (param $dt i32) (param $rr v128) (param $g i32)
    (param $kept i32) (param $ks i32)
    (local $c i32) (local $j i32) (local $v v128)
    ;; 16-bit data: pairs of vectors ($rf_st8); then whole vectors, then the last one to
    ;; three elements.
    (if (i32.ne (local.get $dt) (i32.const 0))
      (then
        (block $pairsDone
          (loop $pair
            (br_if $pairsDone (i32.ge_u (i32.add (local.get $j) (i32.const 4)) (local.get $n4)))
            (call $rf_st8 (local.get $t) (local.get $dt)
              (call $arms_yk (local.get $p) (local.get $q) (local.get $ldt) (local.get $kept)
                (local.get $ks) (local.get $c) (local.get $rr) (local.get $g))
              (call $arms_yk (i32.add (local.get $p) (local.get $es)) (i32.add (local.get $q) (local.get $es))
                (local.get $ldt) (local.get $kept) (local.get $ks) (i32.add (local.get $c) (i32.const 16))
                (local.get $rr) (local.get $g)))
            (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $t (i32.add (local.get $t) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $c (i32.add (local.get $c) (i32.const 32)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $pair)))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (local.set $v
          (call $arms_yk (local.get $p) (local.get $q) (local.get $ldt) (local.get $kept)
            (local.get $ks) (local.get $c) (local.get $rr) (local.get $g)))
        (call $rf_st4 (local.get $t) (local.get $dt) (local.get $v))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
        (local.set $t (i32.add (local.get $t) (local.get $es)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next)))
    (if (i32.lt_u (local.get $j) (local.get $n))
      (then
        (local.set $v
          (call $arms_yk (local.get $p) (local.get $q) (local.get $ldt) (local.get $kept)
            (local.get $ks) (local.get $c) (local.get $rr) (local.get $g)))
        (call $rf_st4n (local.get $t) (local.get $dt) (local.get $v)
          (i32.sub (local.get $n) (local.get $j))))))

  ;; Column sums of a row call's float32 partials (rows/merge_columns.ts): the float64 at out + 8i
  ;; is the sum over items k < items, in k order from 0, of the float32 at p + 4 (k * stride + i),
  ;; for i below cols rounded up to 2 (so the partials' padding past cols is read: the row
  ;; kernels' partials have it, zeroed; out must have room for the rounded count).
  (func (export "rf_merge_cols")
    (param $p i32) (param $items i32) (param $cols i32) (param $stride i32) (param $out i32)
    (local $i i32) (local $k i32) (local $q i32) (local $sb i32) (local $acc v128)
    (local.set $sb (i32.shl (local.get $stride) (i32.const 2)))
    (block $done
      (loop $col
        (br_if $done (i32.ge_u (local.get $i) (local.get $cols)))
        (local.set $acc (v128.const i64x2 0 0))
        (local.set $q (i32.add (local.get $p) (i32.shl (local.get $i) (i32.const 2))))
        (local.set $k (i32.const 0))
        (block $itemsDone
          (loop $item
            (br_if $itemsDone (i32.ge_u (local.get $k) (local.get $items)))
            (local.set $acc
              (f64x2.add (local.get $acc) (f64x2.promote_low_f32x4 (v128.load64_zero (local.get $q)))))
            (local.set $q (i32.add (local.get $q) (local.get $sb)))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $item)))
        (v128.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 3))) (local.get $acc))
        (local.set $i (i32.add (local.get $i) (i32.const 2)))
        (br $col))))
)
