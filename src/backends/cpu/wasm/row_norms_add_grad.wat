;; The fused residual-add LayerNorm backward kernel of aclnnAddLayerNormGrad and
;; aclnnDeepNormGrad, spliced into kernels.wat's module after row_norms.wat (scripts/
;; build_wasm.ts ROWS_WAT_PATHS), whose row helpers ($rf_fold, $rf_mask, $rf_zero, $rf_st4,
;; $rf_st4n) it uses; same conventions of addresses, rows, dtype dispatch and column partials as
;; row_norms.wat and row_norms_grad.wat state.
;;
;; Numerics (hicann/ops-nn, docs/norm_family_kernels.md sections 2 and 4): every input is
;; widened to float32 and s = alpha * a + b is formed in float32 and NOT rounded to the data
;; dtype (AddLayerNormGrad: x1 + x2, alpha 1, add_layer_norm_grad_cut_n.h; DeepNormGrad: gx +
;; alpha * x, deep_norm_grad_merge_n.h:396-466, taken as Muls then Add as in the forward). Per
;; element, as the cut-N kernels order it: xm = s - mean, g = dy * gamma, the row sums
;; S1 = sum(g * (xm * rstd^3)) with rstd^3 = (rstd * rstd) * rstd, and S2 = sum(g * rstd),
;; each rounded to float32 (row sums add float32 lanes over 256 elements, each run's lanes then
;; added in float64, in a fixed order); pv = S1 * (-1/D) and pm = -(S2 * (1/D)) with the float
;; 1/D (add_layer_norm_grad_cut_d.h:486-490, deep_norm_grad one_div_D). Then
;; AddLayerNormGrad: dx = ((xm * pv + g * rstd) + pm) (+ dsum), one rounding;
;; DeepNormGrad: dgx = ((xm * pv + pm) + g * rstd), dx = dgx * alpha from the float32 dgx, each
;; rounded once. Column partials: pw += dy * (xm * rstd) (dgamma), pb += dy (dbeta).
(module
  ;; Fused add + LayerNorm backward of `rows` rows. Data (dt): dy, a, b, c, o with their row
  ;; strides; flags 1: c holds dsum, added to dx (AddLayerNormGrad); flags 2: DeepNormGrad's
  ;; order, o receives dgx and c receives dx = alpha * dgx. o is dx otherwise. Float32 arrays:
  ;; w (gamma, n padded to 4), mean and rstd per row, the partials pw and pb (zeroed first).
  ;; A dispatcher over $alb_rows copies whose flags are constants (Binaryen folds them into
  ;; each copy's loops): AddLayerNormGrad's (alpha 1, whose multiply is skipped: 1 * a is a)
  ;; with and without dsum, DeepNormGrad's, and any other call.
  (func (export "add_ln_bwd")
    (param $dy i32) (param $dys i32) (param $a i32) (param $as i32) (param $b i32) (param $bs i32)
    (param $c i32) (param $cs i32) (param $o i32) (param $os i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $alpha f32) (param $flags i32) (param $w i32) (param $mean i32)
    (param $rstd i32) (param $pw i32) (param $pb i32) (param $scr i32)
    (if (i32.and (f32.eq (local.get $alpha) (f32.const 1)) (i32.lt_u (local.get $flags) (i32.const 2)))
      (then
        (if (local.get $flags)
          (then
            (call $alb_rows (local.get $dy) (local.get $dys) (local.get $a) (local.get $as)
              (local.get $b) (local.get $bs) (local.get $c) (local.get $cs) (local.get $o)
              (local.get $os) (local.get $n) (local.get $dt) (local.get $rows) (f32.const 1)
              (i32.const 1) (i32.const 1) (local.get $w) (local.get $mean) (local.get $rstd)
              (local.get $pw) (local.get $pb) (local.get $scr)))
          (else
            (call $alb_rows (local.get $dy) (local.get $dys) (local.get $a) (local.get $as)
              (local.get $b) (local.get $bs) (local.get $c) (local.get $cs) (local.get $o)
              (local.get $os) (local.get $n) (local.get $dt) (local.get $rows) (f32.const 1)
              (i32.const 0) (i32.const 1) (local.get $w) (local.get $mean) (local.get $rstd)
              (local.get $pw) (local.get $pb) (local.get $scr))))
        (return)))
    (if (i32.eq (local.get $flags) (i32.const 2))
      (then
        (call $alb_rows (local.get $dy) (local.get $dys) (local.get $a) (local.get $as)
          (local.get $b) (local.get $bs) (local.get $c) (local.get $cs) (local.get $o)
          (local.get $os) (local.get $n) (local.get $dt) (local.get $rows) (local.get $alpha)
          (i32.const 2) (i32.const 0) (local.get $w) (local.get $mean) (local.get $rstd)
          (local.get $pw) (local.get $pb) (local.get $scr))
        (return)))
    (call $alb_rows (local.get $dy) (local.get $dys) (local.get $a) (local.get $as)
      (local.get $b) (local.get $bs) (local.get $c) (local.get $cs) (local.get $o)
      (local.get $os) (local.get $n) (local.get $dt) (local.get $rows) (local.get $alpha)
      (local.get $flags) (i32.const 0) (local.get $w) (local.get $mean) (local.get $rstd)
      (local.get $pw) (local.get $pb) (local.get $scr)))

  ;; s - mean for the vector at offset off: s = a + b when `unit` (alpha is 1), else
  ;; alpha * a + b (Muls then Add), in float32.
  (func $alb_xm
    (param $a i32) (param $b i32) (param $off i32) (param $dt i32) (param $al v128)
    (param $unit i32) (param $mm v128) (result v128)
    (f32x4.sub
      (f32x4.add
        (if (result v128) (local.get $unit)
          (then (call $ld4 (i32.add (local.get $a) (local.get $off)) (local.get $dt)))
          (else
            (f32x4.mul (local.get $al)
              (call $ld4 (i32.add (local.get $a) (local.get $off)) (local.get $dt)))))
        (call $ld4 (i32.add (local.get $b) (local.get $off)) (local.get $dt)))
      (local.get $mm)))

  ;; Pass 2 of one vector loaded again: xm and g from dy, a and b as code ldt (kernels.wat
  ;; $load_code), then $alb_value; `left` elements of the row remain from this vector on.
  (func $alb_write
    (param $dy i32) (param $a i32) (param $b i32) (param $c i32) (param $o i32) (param $off i32)
    (param $k i32) (param $ldt i32) (param $dt i32) (param $al v128) (param $unit i32)
    (param $flags i32) (param $w i32) (param $mm v128) (param $rr v128) (param $pv v128)
    (param $pm v128) (param $left i32)
    (call $alb_value (local.get $c) (local.get $o) (local.get $off) (local.get $dt)
      (local.get $al) (local.get $flags)
      (call $alb_xm (local.get $a) (local.get $b) (local.get $off) (local.get $ldt)
        (local.get $al) (local.get $unit) (local.get $mm))
      (f32x4.mul (call $ld4 (i32.add (local.get $dy) (local.get $off)) (local.get $ldt))
        (v128.load (i32.add (local.get $w) (local.get $k))))
      (local.get $rr) (local.get $pv) (local.get $pm) (local.get $left)))

  ;; Pass 2's value of one vector from its xm and g (dx, or DeepNormGrad's dgx), and
  ;; DeepNormGrad's dx = dgx * alpha stored at c; dsum (at c) and the outputs as dt; `left`
  ;; elements of the row remain from this vector on.
  (func $alb_value
    (param $c i32) (param $o i32) (param $off i32) (param $dt i32) (param $al v128)
    (param $flags i32) (param $xm v128) (param $g v128) (param $rr v128) (param $pv v128)
    (param $pm v128) (param $left i32)
    (local $v v128)
    (if (i32.and (local.get $flags) (i32.const 2))
      (then
        (local.set $v
          (f32x4.add
            (f32x4.add (f32x4.mul (local.get $xm) (local.get $pv)) (local.get $pm))
            (f32x4.mul (local.get $g) (local.get $rr))))
        (call $alg_st (i32.add (local.get $c) (local.get $off)) (local.get $dt)
          (f32x4.mul (local.get $v) (local.get $al)) (local.get $left)))
      (else
        (local.set $v
          (f32x4.add
            (f32x4.add (f32x4.mul (local.get $xm) (local.get $pv))
              (f32x4.mul (local.get $g) (local.get $rr)))
            (local.get $pm)))
        (if (i32.and (local.get $flags) (i32.const 1))
          (then
            (local.set $v
              (f32x4.add (local.get $v)
                (call $ld4 (i32.add (local.get $c) (local.get $off)) (local.get $dt))))))))
    (call $alg_st (i32.add (local.get $o) (local.get $off)) (local.get $dt) (local.get $v)
      (local.get $left)))

  ;; add_ln_bwd's rows with the flags of the call and `unit` (alpha is 1), and the scratch row
  ;; pair at scr (-1: none). Pass 1 ($alb_sums) loads float16 rows that hold no Inf or NaN
  ;; (kernels.wat $f16_specials) without the fix, and for 16-bit dtypes keeps xm and g in the
  ;; two float32 rows at scr (kernels.wat $keeps_terms), from which pass 2 computes
  ;; ($alb_pass2_kept: the same bits); else pass 2 loads dy, a and b again ($alb_pass2).
  (func $alb_rows
    (param $dy i32) (param $dys i32) (param $a i32) (param $as i32) (param $b i32) (param $bs i32)
    (param $c i32) (param $cs i32) (param $o i32) (param $os i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $alpha f32) (param $flags i32) (param $unit i32) (param $w i32)
    (param $mean i32) (param $rstd i32) (param $pw i32) (param $pb i32) (param $scr i32)
    (local $r i32) (local $es i32) (local $n4 i32) (local $sx i32) (local $ldt i32)
    (local $t1 f64) (local $t2 f64) (local $inv f32) (local $rs f32)
    (local $al v128) (local $mm v128) (local $rr v128) (local $r3 v128) (local $pv v128)
    (local $pm v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $al (f32x4.splat (local.get $alpha)))
    (local.set $inv (f32.div (f32.const 1) (f32.convert_i32_u (local.get $n))))
    (if (i32.eqz (i32.and (call $keeps_terms (local.get $dt))
          (i32.ge_s (local.get $scr) (i32.const 0))))
      (then (local.set $scr (i32.const -1))))
    (local.set $sx (i32.add (local.get $scr)
      (i32.shl (i32.and (i32.add (local.get $n) (i32.const 3)) (i32.const -4)) (i32.const 2))))
    (call $rf_zero (local.get $pw) (local.get $n))
    (call $rf_zero (local.get $pb) (local.get $n))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $rs (f32.load (local.get $rstd)))
        (local.set $mm (f32x4.splat (f32.load (local.get $mean))))
        (local.set $rr (f32x4.splat (local.get $rs)))
        (local.set $r3
          (f32x4.splat (f32.mul (f32.mul (local.get $rs) (local.get $rs)) (local.get $rs))))
        ;; Pass 1: the row sums and the column partials, a copy for each code of the loads.
        (local.set $ldt (local.get $dt))
        (if (call $f16_rows_finite (local.get $dt) (local.get $a) (local.get $b) (local.get $n))
          (then
            (if (i32.eqz (call $f16_specials (local.get $dy) (local.get $n)))
              (then (local.set $ldt (i32.const 5))))))
        (if (i32.eq (local.get $ldt) (i32.const 5))
          (then
            (local.set $t1 (call $alb_sums (local.get $dy) (local.get $a) (local.get $b)
              (local.get $n) (local.get $n4) (local.get $es) (i32.const 5) (local.get $al)
              (local.get $unit) (local.get $w) (local.get $mm) (local.get $rr) (local.get $r3)
              (local.get $pw) (local.get $pb) (i32.ge_s (local.get $scr) (i32.const 0))
              (local.get $scr) (local.get $sx))))
          (else
            (local.set $t1 (call $alb_sums (local.get $dy) (local.get $a) (local.get $b)
              (local.get $n) (local.get $n4) (local.get $es) (local.get $dt) (local.get $al)
              (local.get $unit) (local.get $w) (local.get $mm) (local.get $rr) (local.get $r3)
              (local.get $pw) (local.get $pb) (i32.ge_s (local.get $scr) (i32.const 0))
              (local.get $scr) (local.get $sx)))))
        (local.set $t2 (global.get $rf_second))
        ;; pv = S1 * (-1/D), pm = -(S2 * (1/D)): float32 sums times the float 1/D.
        (local.set $pv (f32x4.splat
          (f32.mul (f32.demote_f64 (local.get $t1)) (f32.neg (local.get $inv)))))
        (local.set $pm (f32x4.splat
          (f32.neg (f32.mul (f32.demote_f64 (local.get $t2)) (local.get $inv)))))
        ;; Pass 2: dx (and dgx) from the same float32 xm and g: kept, or loaded again (dy, a
        ;; and b as finite float16 when both sums are: kernels.wat $load_code).
        (if (i32.ge_s (local.get $scr) (i32.const 0))
          (then
            (call $alb_pass2_kept (local.get $c) (local.get $o) (local.get $n) (local.get $n4)
              (local.get $es) (local.get $dt) (local.get $al) (local.get $flags) (local.get $scr)
              (local.get $sx) (local.get $rr) (local.get $pv) (local.get $pm)))
          (else
            (if (i32.eq
                  (call $load_code (local.get $dt)
                    (i32.and (call $finite64 (local.get $t1)) (call $finite64 (local.get $t2))))
                  (i32.const 5))
              (then
                (call $alb_pass2 (local.get $dy) (local.get $a) (local.get $b) (local.get $c)
                  (local.get $o) (local.get $n) (local.get $n4) (local.get $es) (i32.const 5)
                  (local.get $dt) (local.get $al) (local.get $unit) (local.get $flags)
                  (local.get $w) (local.get $mm) (local.get $rr) (local.get $pv) (local.get $pm)))
              (else
                (call $alb_pass2 (local.get $dy) (local.get $a) (local.get $b) (local.get $c)
                  (local.get $o) (local.get $n) (local.get $n4) (local.get $es) (local.get $dt)
                  (local.get $dt) (local.get $al) (local.get $unit) (local.get $flags)
                  (local.get $w) (local.get $mm) (local.get $rr) (local.get $pv)
                  (local.get $pm))))))
        (local.set $dy (i32.add (local.get $dy) (local.get $dys)))
        (local.set $a (i32.add (local.get $a) (local.get $as)))
        (local.set $b (i32.add (local.get $b) (local.get $bs)))
        (local.set $c (i32.add (local.get $c) (local.get $cs)))
        (local.set $o (i32.add (local.get $o) (local.get $os)))
        (local.set $mean (i32.add (local.get $mean) (i32.const 4)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; add_ln_bwd's pass 1 over one row (dy, a, b loaded as code ldt): S1 returned and S2 in
  ;; $rf_second, the column partials added, and with keep each vector's xm at xs and g at gs
  ;; (float32, the row's offsets). Whole vectors, then the last one to three elements masked.
  (func $alb_sums
    (param $dy i32) (param $a i32) (param $b i32) (param $n i32) (param $n4 i32) (param $es i32)
    (param $ldt i32) (param $al v128) (param $unit i32) (param $w i32) (param $mm v128)
    (param $rr v128) (param $r3 v128) (param $pw i32) (param $pb i32) (param $keep i32)
    (param $gs i32) (param $xs i32) (result f64)
    (local $j i32) (local $k i32) (local $off i32) (local $t1 f64) (local $t2 f64)
    (local $e v128) (local $xm v128) (local $g v128) (local $mask v128) (local $s1 v128)
    (local $s2 v128)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (local.set $e (call $ld4 (i32.add (local.get $dy) (local.get $off)) (local.get $ldt)))
        (local.set $xm (call $alb_xm (local.get $a) (local.get $b) (local.get $off)
          (local.get $ldt) (local.get $al) (local.get $unit) (local.get $mm)))
        (local.set $g (f32x4.mul (local.get $e) (v128.load (i32.add (local.get $w) (local.get $k)))))
        (if (local.get $keep)
          (then
            (call $rf_keep2 (local.get $gs) (local.get $xs) (local.get $k) (local.get $g)
              (local.get $xm))))
        (local.set $s1 (f32x4.add (local.get $s1)
          (f32x4.mul (local.get $g) (f32x4.mul (local.get $xm) (local.get $r3)))))
        (local.set $s2 (f32x4.add (local.get $s2)
          (f32x4.mul (local.get $g) (local.get $rr))))
        (v128.store (i32.add (local.get $pw) (local.get $k))
          (f32x4.add (v128.load (i32.add (local.get $pw) (local.get $k)))
            (f32x4.mul (local.get $e) (f32x4.mul (local.get $xm) (local.get $rr)))))
        (v128.store (i32.add (local.get $pb) (local.get $k))
          (f32x4.add (v128.load (i32.add (local.get $pb) (local.get $k))) (local.get $e)))
        (local.set $off (i32.add (local.get $off) (local.get $es)))
        (local.set $k (i32.add (local.get $k) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (if (i32.eqz (i32.and (local.get $j) (i32.const 255)))
          (then
            (local.set $t1 (f64.add (local.get $t1)
              (call $rf_fold (local.get $s1) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $t2 (f64.add (local.get $t2)
              (call $rf_fold (local.get $s2) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $s1 (v128.const i64x2 0 0))
            (local.set $s2 (v128.const i64x2 0 0))))
        (br $next)))
    ;; The last one to three elements, masked to the row.
    (if (i32.lt_u (local.get $j) (local.get $n))
      (then
        (local.set $mask (call $rf_mask (i32.sub (local.get $n) (local.get $j))))
        (local.set $e
          (v128.and (call $ld4 (i32.add (local.get $dy) (local.get $off)) (local.get $ldt))
            (local.get $mask)))
        (local.set $xm (call $alb_xm (local.get $a) (local.get $b) (local.get $off)
          (local.get $ldt) (local.get $al) (local.get $unit) (local.get $mm)))
        (local.set $g
          (f32x4.mul (local.get $e) (v128.load (i32.add (local.get $w) (local.get $k)))))
        (if (local.get $keep)
          (then
            (call $rf_keep2 (local.get $gs) (local.get $xs) (local.get $k) (local.get $g)
              (local.get $xm))))
        (local.set $s1 (f32x4.add (local.get $s1)
          (v128.and (f32x4.mul (local.get $g) (f32x4.mul (local.get $xm) (local.get $r3)))
            (local.get $mask))))
        (local.set $s2 (f32x4.add (local.get $s2)
          (v128.and (f32x4.mul (local.get $g) (local.get $rr)) (local.get $mask))))
        (v128.store (i32.add (local.get $pw) (local.get $k))
          (f32x4.add (v128.load (i32.add (local.get $pw) (local.get $k)))
            (v128.and (f32x4.mul (local.get $e) (f32x4.mul (local.get $xm) (local.get $rr)))
              (local.get $mask))))
        (v128.store (i32.add (local.get $pb) (local.get $k))
          (f32x4.add (v128.load (i32.add (local.get $pb) (local.get $k))) (local.get $e)))))
    (global.set $rf_second (f64.add (local.get $t2)
      (call $rf_fold (local.get $s2) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
        (v128.const i64x2 0 0))))
    (f64.add (local.get $t1)
      (call $rf_fold (local.get $s1) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
        (v128.const i64x2 0 0))))

  ;; add_ln_bwd's pass 2 over one row from the kept xm (at xs) and g (at gs): $alb_value of
  ;; each vector, stored as $alb_write stores it.
  (func $alb_pass2_kept
    (param $c i32) (param $o i32) (param $n i32) (param $n4 i32) (param $es i32) (param $dt i32)
    (param $al v128) (param $flags i32) (param $gs i32) (param $xs i32) (param $rr v128)
    (param $pv v128) (param $pm v128)
    (local $off i32) (local $k i32) (local $j i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        (call $alb_value (local.get $c) (local.get $o) (local.get $off) (local.get $dt)
          (local.get $al) (local.get $flags) (v128.load (i32.add (local.get $xs) (local.get $k)))
          (v128.load (i32.add (local.get $gs) (local.get $k))) (local.get $rr) (local.get $pv)
          (local.get $pm) (i32.sub (local.get $n) (local.get $j)))
        (local.set $off (i32.add (local.get $off) (local.get $es)))
        (local.set $k (i32.add (local.get $k) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next))))

  ;; add_ln_bwd's pass 2 over one row of n elements (n4 in whole vectors; es the bytes of four):
  ;; $alb_write for each whole vector, then for the tail; dy, a and b loaded as code ldt.
  (func $alb_pass2
    (param $dy i32) (param $a i32) (param $b i32) (param $c i32) (param $o i32) (param $n i32)
    (param $n4 i32) (param $es i32) (param $ldt i32) (param $dt i32) (param $al v128)
    (param $unit i32) (param $flags i32) (param $w i32) (param $mm v128) (param $rr v128)
    (param $pv v128) (param $pm v128)
    (local $off i32) (local $k i32) (local $j i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (call $alb_write (local.get $dy) (local.get $a) (local.get $b) (local.get $c)
          (local.get $o) (local.get $off) (local.get $k) (local.get $ldt) (local.get $dt)
          (local.get $al) (local.get $unit) (local.get $flags) (local.get $w) (local.get $mm)
          (local.get $rr) (local.get $pv) (local.get $pm) (i32.const 4))
        (local.set $off (i32.add (local.get $off) (local.get $es)))
        (local.set $k (i32.add (local.get $k) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next)))
    (if (i32.lt_u (local.get $j) (local.get $n))
      (then
        (call $alb_write (local.get $dy) (local.get $a) (local.get $b) (local.get $c)
          (local.get $o) (local.get $off) (local.get $k) (local.get $ldt) (local.get $dt)
          (local.get $al) (local.get $unit) (local.get $flags) (local.get $w) (local.get $mm)
          (local.get $rr) (local.get $pv) (local.get $pm) (i32.sub (local.get $n) (local.get $j))))))

  ;; Stores the first min(left, 4) lanes of v at p, rounded once to dt ($rf_st4 / $rf_st4n).
  (func $alg_st (param $p i32) (param $dt i32) (param $v v128) (param $left i32)
    (if (i32.ge_u (local.get $left) (i32.const 4))
      (then (call $rf_st4 (local.get $p) (local.get $dt) (local.get $v)))
      (else (call $rf_st4n (local.get $p) (local.get $dt) (local.get $v) (local.get $left)))))
)
