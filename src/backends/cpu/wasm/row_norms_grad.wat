;; The backward row kernel of LayerNorm (RMSNorm's: row_norms_rms_grad.wat): row_norms.wat's
;; conventions and numerics (the build splices both files into kernels.wat's module; these use
;; its helpers $rf_fold, $rf_mask, $rf_zero, $rf_st4, $rf_st4n). The column partials are the
;; call's own float32 arrays of n rounded up to 4 (the caller keeps the padding of each work
;; item's partials, and zeroes the padding of the weights): each kernel zeroes them first and
;; adds each row's terms in vectors, the last vector masked to the row, so the padding stays
;; zero. Row sums add float32 lanes over 256 elements (64 per lane), each run's lanes then
;; added in float64, in a fixed order.
(module
  ;; LayerNorm backward. Per row, with m = mean[r], rs = rstd[r], e = dy, xh = (x - m) * rs,
  ;; g = e * w (float32): S1 and S2 the row sums of g and g * xh; with flags & 1, the column
  ;; partials pw += e * xh and pb += e; with flags & 2, a = S1 / n and c = S2 / n rounded to
  ;; float32 and gi = rs * ((g - a) - xh * c). The first pass ($lnb_sums) loads float16 rows
  ;; that hold no Inf or NaN (kernels.wat $f16_specials) without the fix. For 16-bit dtypes it
  ;; keeps g and xh in the two float32 rows at scr (kernels.wat $keeps_terms; each thread's
  ;; own, n rounded up to 4 each), from which the gradInput pass computes ($lnb_row_dx_kept:
  ;; the same bits, float16 0.76-0.85x and bfloat16 0.95x the time of loading the rows again);
  ;; with scr -1, or float32, that pass loads dy and x again ($lnb_row_dx; float16 rows whose
  ;; sums came out finite without the fix: kernels.wat $load_code).
  ;; A dispatcher over copies of $lnb_rows whose flags are constants (Binaryen folds the
  ;; column partials' test out of each copy's loops): both outputs, gradInput alone, any other.
  (func (export "ln_bwd")
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $gi i32)
    (param $gis i32) (param $n i32) (param $dt i32) (param $rows i32) (param $mean i32)
    (param $rstd i32) (param $w i32) (param $pw i32) (param $pb i32) (param $flags i32)
    (param $scr i32)
    (if (i32.eq (local.get $flags) (i32.const 3))
      (then
        (call $lnb_rows (local.get $dy) (local.get $dys) (local.get $x) (local.get $xs)
          (local.get $gi) (local.get $gis) (local.get $n) (local.get $dt) (local.get $rows)
          (local.get $mean) (local.get $rstd) (local.get $w) (local.get $pw) (local.get $pb)
          (i32.const 3) (local.get $scr))
        (return)))
    (if (i32.eq (local.get $flags) (i32.const 2))
      (then
        (call $lnb_rows (local.get $dy) (local.get $dys) (local.get $x) (local.get $xs)
          (local.get $gi) (local.get $gis) (local.get $n) (local.get $dt) (local.get $rows)
          (local.get $mean) (local.get $rstd) (local.get $w) (local.get $pw) (local.get $pb)
          (i32.const 2) (local.get $scr))
        (return)))
    (call $lnb_rows (local.get $dy) (local.get $dys) (local.get $x) (local.get $xs)
      (local.get $gi) (local.get $gis) (local.get $n) (local.get $dt) (local.get $rows)
      (local.get $mean) (local.get $rstd) (local.get $w) (local.get $pw) (local.get $pb)
      (local.get $flags) (local.get $scr)))

  ;; LayerNorm's gradInput of four elements, before the rounding: rstd * ((dy * w - a) - xhat *
  ;; c), dy at p (dt), xhat given, w the float32 lanes at wp, rstd, a and c splatted in rr, aa, cc.
  (func $ln_dx4 (param $p i32) (param $dt i32) (param $xh v128) (param $rr v128) (param $aa v128)
    (param $cc v128) (param $wp i32) (result v128)
    (call $ln_dx (f32x4.mul (call $ld4 (local.get $p) (local.get $dt)) (v128.load (local.get $wp)))
      (local.get $xh) (local.get $rr) (local.get $aa) (local.get $cc)))

  ;; rstd * ((g - a) - xhat * c) of four lanes, g = dy * w: the formula of $ln_dx4 and of the
  ;; kept terms' $lnb_dx4_kept.
  (func $ln_dx (param $g v128) (param $xh v128) (param $rr v128) (param $aa v128) (param $cc v128)
    (result v128)
    (f32x4.mul (local.get $rr)
      (f32x4.sub (f32x4.sub (local.get $g) (local.get $aa))
        (f32x4.mul (local.get $xh) (local.get $cc)))))

  ;; ln_bwd's rows with the flags of the call, and the scratch row pair at scr (-1: none).
  (func $lnb_rows
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $gi i32)
    (param $gis i32) (param $n i32) (param $dt i32) (param $rows i32) (param $mean i32)
    (param $rstd i32) (param $w i32) (param $pw i32) (param $pb i32) (param $flags i32)
    (param $scr i32)
    (local $r i32) (local $es i32) (local $n4 i32) (local $pf i32) (local $sx i32)
    (local $t1 f64) (local $t2 f64) (local $mm v128) (local $rr v128) (local $aa v128)
    (local $cc v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $pf (i32.and (local.get $flags) (i32.const 1)))
    ;; The kept terms: g at scr, xhat one padded row on (gradInput of 16-bit dtypes only).
    (if (i32.eqz (i32.and (call $keeps_terms (local.get $dt))
          (i32.and (i32.ge_s (local.get $scr) (i32.const 0))
            (i32.ne (i32.and (local.get $flags) (i32.const 2)) (i32.const 0)))))
      (then (local.set $scr (i32.const -1))))
    (local.set $sx (i32.add (local.get $scr)
      (i32.shl (i32.and (i32.add (local.get $n) (i32.const 3)) (i32.const -4)) (i32.const 2))))
    (if (local.get $pf)
      (then
        (call $rf_zero (local.get $pw) (local.get $n))
        (call $rf_zero (local.get $pb) (local.get $n))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $mm (v128.load32_splat (local.get $mean)))
        (local.set $rr (v128.load32_splat (local.get $rstd)))
        ;; The first pass: float16 rows that hold no Inf or NaN ($f16_specials) loaded without
        ;; the fix (code 5); each copy with its codes and the keeping as constants.
        (if (call $f16_rows_finite (local.get $dt) (local.get $dy) (local.get $x) (local.get $n))
          (then
            (if (i32.ge_s (local.get $scr) (i32.const 0))
              (then
                (local.set $t1 (call $lnb_sums (local.get $dy) (local.get $x) (local.get $n)
                  (local.get $n4) (i32.const 5) (local.get $es) (local.get $mm) (local.get $rr)
                  (local.get $w) (local.get $pw) (local.get $pb) (local.get $pf) (i32.const 1)
                  (local.get $scr) (local.get $sx))))
              (else
                (local.set $t1 (call $lnb_sums (local.get $dy) (local.get $x) (local.get $n)
                  (local.get $n4) (i32.const 5) (local.get $es) (local.get $mm) (local.get $rr)
                  (local.get $w) (local.get $pw) (local.get $pb) (local.get $pf) (i32.const 0)
                  (local.get $scr) (local.get $sx))))))
          (else
            (if (i32.ge_s (local.get $scr) (i32.const 0))
              (then
                (local.set $t1 (call $lnb_sums (local.get $dy) (local.get $x) (local.get $n)
                  (local.get $n4) (local.get $dt) (local.get $es) (local.get $mm) (local.get $rr)
                  (local.get $w) (local.get $pw) (local.get $pb) (local.get $pf) (i32.const 1)
                  (local.get $scr) (local.get $sx))))
              (else
                (local.set $t1 (call $lnb_sums (local.get $dy) (local.get $x) (local.get $n)
                  (local.get $n4) (local.get $dt) (local.get $es) (local.get $mm) (local.get $rr)
                  (local.get $w) (local.get $pw) (local.get $pb) (local.get $pf) (i32.const 0)
                  (local.get $scr) (local.get $sx)))))))
        (local.set $t2 (global.get $rf_second))
        (if (i32.and (local.get $flags) (i32.const 2))
          (then
            (local.set $aa (f32x4.splat (f32.demote_f64
              (f64.div (local.get $t1) (f64.convert_i32_u (local.get $n))))))
            (local.set $cc (f32x4.splat (f32.demote_f64
              (f64.div (local.get $t2) (f64.convert_i32_u (local.get $n))))))
            (if (i32.ge_s (local.get $scr) (i32.const 0))
              (then
                (call $lnb_row_dx_kept (local.get $scr) (local.get $sx) (local.get $gi)
                  (local.get $n) (local.get $n4) (local.get $es) (local.get $dt) (local.get $rr)
                  (local.get $aa) (local.get $cc)))
              (else
                (if (i32.eq
                      (call $load_code (local.get $dt)
                        (i32.and (call $finite64 (local.get $t1)) (call $finite64 (local.get $t2))))
                      (i32.const 5))
                  (then
                    (call $lnb_row_dx (local.get $dy) (local.get $x) (local.get $gi) (local.get $n)
                      (local.get $n4) (local.get $es) (i32.const 5) (local.get $dt)
                      (local.get $mm) (local.get $rr) (local.get $aa) (local.get $cc)
                      (local.get $w)))
                  (else
                    (call $lnb_row_dx (local.get $dy) (local.get $x) (local.get $gi) (local.get $n)
                      (local.get $n4) (local.get $es) (local.get $dt) (local.get $dt)
                      (local.get $mm) (local.get $rr) (local.get $aa) (local.get $cc)
                      (local.get $w))))))))
        (local.set $dy (i32.add (local.get $dy) (local.get $dys)))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $gi (i32.add (local.get $gi) (local.get $gis)))
        (local.set $mean (i32.add (local.get $mean) (i32.const 4)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; ln_bwd's first pass over one row (dy at p, x at q, loaded as code ldt; mm and rr its mean
  ;; and rstd splatted): S1 returned and S2 in $rf_second, the column partials added with pf,
  ;; and with keep each vector's g stored at gs and xhat at xs (float32, the row's offsets).
  ;; Pairs of vectors (two float32 lanes per sum, their sums added in float64 every 256
  ;; elements), then a last whole vector, then the last one to three elements masked.
  (func $lnb_sums (param $p i32) (param $q i32) (param $n i32) (param $n4 i32) (param $ldt i32)
    (param $es i32) (param $mm v128) (param $rr v128) (param $w i32) (param $pw i32)
    (param $pb i32) (param $pf i32) (param $keep i32) (param $gs i32) (param $xs i32)
    (result f64)
    (local $j i32) (local $c i32) (local $wc i32) (local $t1 f64) (local $t2 f64)
    (local $e v128) (local $xh v128) (local $g v128) (local $e2 v128) (local $xh2 v128)
    (local $g2 v128) (local $s1 v128) (local $s2 v128) (local $s1b v128) (local $s2b v128)
    (local $mask v128)
    (block $pairsDone
      (loop $pair
        (br_if $pairsDone (i32.gt_u (i32.add (local.get $j) (i32.const 8)) (local.get $n4)))
        (local.set $e (call $ld4 (local.get $p) (local.get $ldt)))
        (local.set $e2 (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $ldt)))
        (local.set $xh
          (f32x4.mul (f32x4.sub (call $ld4 (local.get $q) (local.get $ldt)) (local.get $mm))
            (local.get $rr)))
        (local.set $xh2
          (f32x4.mul
            (f32x4.sub (call $ld4 (i32.add (local.get $q) (local.get $es)) (local.get $ldt))
              (local.get $mm))
            (local.get $rr)))
        (local.set $wc (i32.add (local.get $w) (local.get $c)))
        (local.set $g (f32x4.mul (local.get $e) (v128.load (local.get $wc))))
        (local.set $g2 (f32x4.mul (local.get $e2) (v128.load offset=16 (local.get $wc))))
        (local.set $s1 (f32x4.add (local.get $s1) (local.get $g)))
        (local.set $s1b (f32x4.add (local.get $s1b) (local.get $g2)))
        (local.set $s2 (f32x4.add (local.get $s2) (f32x4.mul (local.get $g) (local.get $xh))))
        (local.set $s2b (f32x4.add (local.get $s2b) (f32x4.mul (local.get $g2) (local.get $xh2))))
        (if (local.get $keep)
          (then
            (call $rf_keep2 (local.get $gs) (local.get $xs) (local.get $c) (local.get $g)
              (local.get $xh))
            (call $rf_keep2 (local.get $gs) (local.get $xs) (i32.add (local.get $c) (i32.const 16))
              (local.get $g2) (local.get $xh2))))
        (if (local.get $pf)
          (then
            (call $lnb_part (i32.add (local.get $pw) (local.get $c))
              (i32.add (local.get $pb) (local.get $c)) (local.get $e) (local.get $xh))
            (call $lnb_part (i32.add (i32.add (local.get $pw) (local.get $c)) (i32.const 16))
              (i32.add (i32.add (local.get $pb) (local.get $c)) (i32.const 16)) (local.get $e2)
              (local.get $xh2))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $c (i32.add (local.get $c) (i32.const 32)))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (if (i32.eqz (i32.and (local.get $j) (i32.const 255)))
          (then
            (local.set $t1 (f64.add (local.get $t1)
              (call $rf_fold (local.get $s1) (local.get $s1b) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $t2 (f64.add (local.get $t2)
              (call $rf_fold (local.get $s2) (local.get $s2b) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $s1 (v128.const i64x2 0 0))
            (local.set $s1b (v128.const i64x2 0 0))
            (local.set $s2 (v128.const i64x2 0 0))
            (local.set $s2b (v128.const i64x2 0 0))))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        ;; All lanes in the whole vectors, those below n in the last one.
        (local.set $mask (v128.const i32x4 -1 -1 -1 -1))
        (if (i32.gt_u (i32.add (local.get $j) (i32.const 4)) (local.get $n))
          (then (local.set $mask (call $rf_mask (i32.sub (local.get $n) (local.get $j))))))
        (local.set $e (v128.and (call $ld4 (local.get $p) (local.get $ldt)) (local.get $mask)))
        (local.set $xh
          (v128.and
            (f32x4.mul (f32x4.sub (call $ld4 (local.get $q) (local.get $ldt)) (local.get $mm))
              (local.get $rr))
            (local.get $mask)))
        (local.set $g (f32x4.mul (local.get $e) (v128.load (i32.add (local.get $w) (local.get $c)))))
        (local.set $s1 (f32x4.add (local.get $s1) (local.get $g)))
        (local.set $s2 (f32x4.add (local.get $s2) (f32x4.mul (local.get $g) (local.get $xh))))
        (if (local.get $keep)
          (then
            (call $rf_keep2 (local.get $gs) (local.get $xs) (local.get $c) (local.get $g)
              (local.get $xh))))
        (if (local.get $pf)
          (then
            (call $lnb_part (i32.add (local.get $pw) (local.get $c))
              (i32.add (local.get $pb) (local.get $c)) (local.get $e) (local.get $xh))))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        ;; A block's sums fold after whole vectors only (the masked last one folds below).
        (if (i32.and (i32.eqz (i32.and (local.get $j) (i32.const 255)))
              (i32.le_u (local.get $j) (local.get $n)))
          (then
            (local.set $t1 (f64.add (local.get $t1)
              (call $rf_fold (local.get $s1) (local.get $s1b) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $t2 (f64.add (local.get $t2)
              (call $rf_fold (local.get $s2) (local.get $s2b) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $s1 (v128.const i64x2 0 0))
            (local.set $s1b (v128.const i64x2 0 0))
            (local.set $s2 (v128.const i64x2 0 0))
            (local.set $s2b (v128.const i64x2 0 0))))
        (br $next)))
    (global.set $rf_second (f64.add (local.get $t2)
      (call $rf_fold (local.get $s2) (local.get $s2b) (v128.const i64x2 0 0)
        (v128.const i64x2 0 0))))
    (f64.add (local.get $t1)
      (call $rf_fold (local.get $s1) (local.get $s1b) (v128.const i64x2 0 0)
        (v128.const i64x2 0 0))))

  ;; One vector's column partials at byte addresses pwc and pbc: pw += e * xh, pb += e.
  (func $lnb_part (param $pwc i32) (param $pbc i32) (param $e v128) (param $xh v128)
    (v128.store (local.get $pwc)
      (f32x4.add (v128.load (local.get $pwc)) (f32x4.mul (local.get $e) (local.get $xh))))
    (v128.store (local.get $pbc) (f32x4.add (v128.load (local.get $pbc)) (local.get $e))))

  ;; ln_bwd's gradInput over one row of n elements (n4 in whole vectors; es the bytes of four)
  ;; from the terms its first pass kept (g at gs, xhat at xs): rstd * ((g - a) - xhat * c),
  ;; stored at o as dt. Pairs of vectors stored together ($rf_st8), then a last whole vector,
  ;; then the last one to three elements.
  (func $lnb_row_dx_kept (param $gs i32) (param $xs i32) (param $o i32) (param $n i32)
    (param $n4 i32) (param $es i32) (param $dt i32) (param $rr v128) (param $aa v128)
    (param $cc v128)
    (local $c i32) (local $j i32)
    (block $pairsDone
      (loop $pair
        (br_if $pairsDone (i32.gt_u (i32.add (local.get $j) (i32.const 8)) (local.get $n4)))
        (call $rf_st8 (local.get $o) (local.get $dt)
          (call $lnb_dx4_kept (i32.add (local.get $gs) (local.get $c))
            (i32.add (local.get $xs) (local.get $c)) (local.get $rr) (local.get $aa)
            (local.get $cc))
          (call $lnb_dx4_kept (i32.add (i32.add (local.get $gs) (local.get $c)) (i32.const 16))
            (i32.add (i32.add (local.get $xs) (local.get $c)) (i32.const 16)) (local.get $rr)
            (local.get $aa) (local.get $cc)))
        (local.set $o (i32.add (local.get $o) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $c (i32.add (local.get $c) (i32.const 32)))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (call $rf_st4 (local.get $o) (local.get $dt)
          (call $lnb_dx4_kept (i32.add (local.get $gs) (local.get $c))
            (i32.add (local.get $xs) (local.get $c)) (local.get $rr) (local.get $aa)
            (local.get $cc)))
        (local.set $o (i32.add (local.get $o) (local.get $es)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next)))
    (if (i32.lt_u (local.get $j) (local.get $n))
      (then
        (call $rf_st4n (local.get $o) (local.get $dt)
          (call $lnb_dx4_kept (i32.add (local.get $gs) (local.get $c))
            (i32.add (local.get $xs) (local.get $c)) (local.get $rr) (local.get $aa)
            (local.get $cc))
          (i32.sub (local.get $n) (local.get $j))))))

  ;; $ln_dx of four kept lanes, g at gp and xhat at xp.
  (func $lnb_dx4_kept (param $gp i32) (param $xp i32) (param $rr v128) (param $aa v128)
    (param $cc v128) (result v128)
    (call $ln_dx (v128.load (local.get $gp)) (v128.load (local.get $xp)) (local.get $rr)
      (local.get $aa) (local.get $cc)))

  ;; ln_bwd's gradInput over one row of n elements (n4 in whole vectors; es the bytes of four):
  ;; dy at p and x at q loaded as code ldt (kernels.wat $load_code: 5 when the row sums came
  ;; out finite), gradInput stored at o as dt.
  (func $lnb_row_dx (param $p i32) (param $q i32) (param $o i32) (param $n i32) (param $n4 i32)
    (param $es i32) (param $ldt i32) (param $dt i32) (param $mm v128) (param $rr v128)
    (param $aa v128) (param $cc v128) (param $w i32)
    (local $c i32) (local $j i32) (local $wc i32) (local $xh v128) (local $xh2 v128) (local $g v128)
    (local $g2 v128)
    ;; Pairs of vectors, then a last whole vector, then the last one to three elements.
    (block $pairsDone
      (loop $pair
        (br_if $pairsDone (i32.gt_u (i32.add (local.get $j) (i32.const 8)) (local.get $n4)))
        (local.set $wc (i32.add (local.get $w) (local.get $c)))
        (local.set $xh
          (f32x4.mul (f32x4.sub (call $ld4 (local.get $q) (local.get $ldt)) (local.get $mm))
            (local.get $rr)))
        (local.set $xh2
          (f32x4.mul
            (f32x4.sub (call $ld4 (i32.add (local.get $q) (local.get $es)) (local.get $ldt))
              (local.get $mm))
            (local.get $rr)))
        ;; float32 stores each vector as it is made; 16-bit dtypes store both at once
        ;; ($rf_st8).
        (local.set $g
          (call $ln_dx4 (local.get $p) (local.get $ldt) (local.get $xh) (local.get $rr) (local.get $aa)
            (local.get $cc) (local.get $wc)))
        (if (i32.eqz (local.get $dt)) (then (v128.store (local.get $o) (local.get $g))))
        (local.set $g2
          (call $ln_dx4 (i32.add (local.get $p) (local.get $es)) (local.get $ldt) (local.get $xh2)
            (local.get $rr) (local.get $aa) (local.get $cc) (i32.add (local.get $wc) (i32.const 16))))
        (if (i32.eqz (local.get $dt))
          (then (v128.store offset=16 (local.get $o) (local.get $g2)))
          (else (call $rf_st8 (local.get $o) (local.get $dt) (local.get $g) (local.get $g2))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $o (i32.add (local.get $o) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $c (i32.add (local.get $c) (i32.const 32)))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (local.set $xh
          (f32x4.mul (f32x4.sub (call $ld4 (local.get $q) (local.get $ldt)) (local.get $mm))
            (local.get $rr)))
        (local.set $g
          (call $ln_dx4 (local.get $p) (local.get $ldt) (local.get $xh) (local.get $rr) (local.get $aa)
            (local.get $cc) (i32.add (local.get $w) (local.get $c))))
        (call $rf_st4 (local.get $o) (local.get $dt) (local.get $g))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
        (local.set $o (i32.add (local.get $o) (local.get $es)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next)))
    (if (i32.lt_u (local.get $j) (local.get $n))
      (then
        (local.set $xh
          (f32x4.mul (f32x4.sub (call $ld4 (local.get $q) (local.get $ldt)) (local.get $mm))
            (local.get $rr)))
        (local.set $g
          (call $ln_dx4 (local.get $p) (local.get $ldt) (local.get $xh) (local.get $rr) (local.get $aa)
            (local.get $cc) (i32.add (local.get $w) (local.get $c))))
        (call $rf_st4n (local.get $o) (local.get $dt) (local.get $g)
          (i32.sub (local.get $n) (local.get $j))))))
)
