;; The backward row kernel of RMSNorm: row_norms.wat's conventions and numerics, and the column
;; partials and row sums as row_norms_grad.wat states them (the build splices this file into
;; kernels.wat's module; it uses row_sums.wat's $rf_fold, $rf_mask, $rf_zero, $rf_st4, $rf_st4n,
;; $rf_st8, and kernels.wat's $load_code for its gradInput, as ln_bwd's).
(module
  ;; RMSNorm's dx of four elements, before the rounding: rs * dy * g - x * k, dy at p and x at q
  ;; (dt), g the float32 lanes at gp, rs and k splatted in rr and kk.
  (func $rms_dx4 (param $p i32) (param $q i32) (param $dt i32) (param $rr v128) (param $kk v128)
    (param $gp i32) (result v128)
    (f32x4.sub
      (f32x4.mul (f32x4.mul (local.get $rr) (call $ld4 (local.get $p) (local.get $dt)))
        (v128.load (local.get $gp)))
      (f32x4.mul (call $ld4 (local.get $q) (local.get $dt)) (local.get $kk))))

  ;; RMSNorm backward. Per row, with rs = rstd[r] and p = dy * x (float32): S the row sum of
  ;; p * g; the column partials pg += p * rs; k = rs^3 * S / n rounded to float32 and
  ;; dx = rs * dy * g - x * k ($rmsb_row_dx). The first pass ($rmsb_sums) loads float16 rows
  ;; that hold no Inf or NaN (kernels.wat $f16_specials) without the fix; for float16 it keeps
  ;; dy and x widened in the two float32 rows at scr (kernels.wat $keeps_float16; -1: none),
  ;; which the second pass reads (the same bits, 0.78x the time with the scan); else the second
  ;; pass loads them again, as ln_bwd's gradInput does.
  (func (export "rms_bwd")
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $dx i32)
    (param $dxs i32) (param $n i32) (param $dt i32) (param $rows i32) (param $rstd i32)
    (param $g i32) (param $pg i32) (param $scr i32)
    (local $r i32) (local $es i32) (local $n4 i32) (local $rs f64) (local $t f64)
    (local $rr v128) (local $kk v128) (local $keep i32) (local $sx i32)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    ;; The kept terms: dy and x widened, in the two float32 rows at scr (float16).
    (local.set $keep (i32.and (call $keeps_float16 (local.get $dt))
      (i32.ge_s (local.get $scr) (i32.const 0))))
    (local.set $sx (i32.add (local.get $scr)
      (i32.shl (i32.and (i32.add (local.get $n) (i32.const 3)) (i32.const -4)) (i32.const 2))))
    (call $rf_zero (local.get $pg) (local.get $n))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $rr (v128.load32_splat (local.get $rstd)))
        (local.set $rs (f64.promote_f32 (f32.load (local.get $rstd))))
        ;; The first pass: float16 rows that hold no Inf or NaN (kernels.wat $f16_specials)
        ;; loaded without the fix, a copy for each code.
        (if (call $f16_rows_finite (local.get $dt) (local.get $dy) (local.get $x) (local.get $n))
          (then
            (local.set $t (call $rmsb_sums (local.get $dy) (local.get $x) (local.get $n)
              (local.get $n4) (local.get $es) (i32.const 5) (local.get $rr) (local.get $g)
              (local.get $pg) (local.get $keep) (local.get $scr) (local.get $sx))))
          (else
            (local.set $t (call $rmsb_sums (local.get $dy) (local.get $x) (local.get $n)
              (local.get $n4) (local.get $es) (local.get $dt) (local.get $rr) (local.get $g)
              (local.get $pg) (local.get $keep) (local.get $scr) (local.get $sx)))))
        (local.set $kk (f32x4.splat (f32.demote_f64
          (f64.div
            (f64.mul (f64.mul (f64.mul (local.get $rs) (local.get $rs)) (local.get $rs))
              (local.get $t))
            (f64.convert_i32_u (local.get $n))))))
        (if (local.get $keep)
          (then
            (call $rmsb_row_dx (local.get $scr) (local.get $sx) (local.get $dx) (local.get $n)
              (local.get $n4) (i32.const 16) (local.get $es) (i32.const 0) (local.get $dt)
              (local.get $rr) (local.get $kk) (local.get $g)))
          (else
            (if (i32.eq (call $load_code (local.get $dt) (call $finite64 (local.get $t)))
                  (i32.const 5))
              (then
                (call $rmsb_row_dx (local.get $dy) (local.get $x) (local.get $dx) (local.get $n)
                  (local.get $n4) (local.get $es) (local.get $es) (i32.const 5) (local.get $dt)
                  (local.get $rr) (local.get $kk) (local.get $g)))
              (else
                (call $rmsb_row_dx (local.get $dy) (local.get $x) (local.get $dx) (local.get $n)
                  (local.get $n4) (local.get $es) (local.get $es) (local.get $dt) (local.get $dt)
                  (local.get $rr) (local.get $kk) (local.get $g))))))
        (local.set $dy (i32.add (local.get $dy) (local.get $dys)))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $dx (i32.add (local.get $dx) (local.get $dxs)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; dy * x of four elements (dy at p, x at q, as code dt), both widened kept at kd and kx
  ;; when keep.
  (func $rmsb_term (param $p i32) (param $q i32) (param $dt i32) (param $keep i32) (param $kd i32)
    (param $kx i32) (result v128)
    (local $e v128) (local $v v128)
    (local.set $e (call $ld4 (local.get $p) (local.get $dt)))
    (local.set $v (call $ld4 (local.get $q) (local.get $dt)))
    (if (local.get $keep)
      (then
        (v128.store (local.get $kd) (local.get $e))
        (v128.store (local.get $kx) (local.get $v))))
    (f32x4.mul (local.get $e) (local.get $v)))

  ;; rms_bwd's first pass over one row (dy at p and x at q loaded as code dt; rr its rstd
  ;; splatted): the row sum S returned, the column partials added. Pairs of vectors (two
  ;; float32 lanes for the sum, added in float64 every 256 elements), then a last whole vector,
  ;; then the last one to three elements masked.
  (func $rmsb_sums (param $p i32) (param $q i32) (param $n i32) (param $n4 i32) (param $es i32)
    (param $dt i32) (param $rr v128) (param $g i32) (param $pg i32) (param $keep i32)
    (param $kd i32) (param $kx i32) (result f64)
    (local $j i32) (local $c i32) (local $gc i32) (local $t f64)
    (local $pv v128) (local $s v128) (local $pv2 v128) (local $s2 v128)
    (block $pairsDone
      (loop $pair
        (br_if $pairsDone (i32.gt_u (i32.add (local.get $j) (i32.const 8)) (local.get $n4)))
        (local.set $pv (call $rmsb_term (local.get $p) (local.get $q) (local.get $dt)
          (local.get $keep) (i32.add (local.get $kd) (local.get $c))
          (i32.add (local.get $kx) (local.get $c))))
        (local.set $pv2 (call $rmsb_term (i32.add (local.get $p) (local.get $es))
          (i32.add (local.get $q) (local.get $es)) (local.get $dt) (local.get $keep)
          (i32.add (i32.add (local.get $kd) (local.get $c)) (i32.const 16))
          (i32.add (i32.add (local.get $kx) (local.get $c)) (i32.const 16))))
        (local.set $gc (i32.add (local.get $g) (local.get $c)))
        (local.set $s (f32x4.add (local.get $s)
          (f32x4.mul (local.get $pv) (v128.load (local.get $gc)))))
        (local.set $s2 (f32x4.add (local.get $s2)
          (f32x4.mul (local.get $pv2) (v128.load offset=16 (local.get $gc)))))
        (local.set $gc (i32.add (local.get $pg) (local.get $c)))
        (v128.store (local.get $gc)
          (f32x4.add (v128.load (local.get $gc)) (f32x4.mul (local.get $pv) (local.get $rr))))
        (v128.store offset=16 (local.get $gc)
          (f32x4.add (v128.load offset=16 (local.get $gc))
            (f32x4.mul (local.get $pv2) (local.get $rr))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $c (i32.add (local.get $c) (i32.const 32)))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (if (i32.eqz (i32.and (local.get $j) (i32.const 255)))
          (then
            (local.set $t (f64.add (local.get $t)
              (call $rf_fold (local.get $s) (local.get $s2) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $s (v128.const i64x2 0 0))
            (local.set $s2 (v128.const i64x2 0 0))))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (local.set $pv (call $rmsb_term (local.get $p) (local.get $q) (local.get $dt)
          (local.get $keep) (i32.add (local.get $kd) (local.get $c))
          (i32.add (local.get $kx) (local.get $c))))
        (local.set $s (f32x4.add (local.get $s)
          (f32x4.mul (local.get $pv) (v128.load (i32.add (local.get $g) (local.get $c))))))
        (v128.store (i32.add (local.get $pg) (local.get $c))
          (f32x4.add (v128.load (i32.add (local.get $pg) (local.get $c)))
            (f32x4.mul (local.get $pv) (local.get $rr))))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (if (i32.eqz (i32.and (local.get $j) (i32.const 255)))
          (then
            (local.set $t (f64.add (local.get $t)
              (call $rf_fold (local.get $s) (local.get $s2) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $s (v128.const i64x2 0 0))
            (local.set $s2 (v128.const i64x2 0 0))))
        (br $next)))
    (if (i32.lt_u (local.get $j) (local.get $n))
      (then
        (local.set $pv
          (v128.and
            (call $rmsb_term (local.get $p) (local.get $q) (local.get $dt) (local.get $keep)
              (i32.add (local.get $kd) (local.get $c)) (i32.add (local.get $kx) (local.get $c)))
            (call $rf_mask (i32.sub (local.get $n) (local.get $j)))))
            (local.set $s (f32x4.add (local.get $s)
              (f32x4.mul (local.get $pv) (v128.load (i32.add (local.get $g) (local.get $c))))))
            (v128.store (i32.add (local.get $pg) (local.get $c))
              (f32x4.add (v128.load (i32.add (local.get $pg) (local.get $c)))
                (f32x4.mul (local.get $pv) (local.get $rr))))))
    (f64.add (local.get $t)
      (call $rf_fold (local.get $s) (local.get $s2) (v128.const i64x2 0 0)
        (v128.const i64x2 0 0))))

  ;; rms_bwd's dx over one row of n elements (n4 in whole vectors; es the bytes of four): dy at p
  ;; and x at q loaded as code ldt (kernels.wat $load_code: 5 when the row's sum came out
  ;; finite), dx stored at o as dt.
  (func $rmsb_row_dx (param $p i32) (param $q i32) (param $o i32) (param $n i32) (param $n4 i32)
    (param $ies i32) (param $es i32) (param $ldt i32) (param $dt i32) (param $rr v128)
    (param $kk v128) (param $g i32)
    (local $c i32) (local $j i32) (local $gc i32) (local $v v128)
    ;; Pairs of vectors (16-bit dtypes: rounded and stored together, $rf_st8; float32: each
    ;; stored as it is made), then a last whole vector, then the last one to three elements.
    (if (i32.ne (local.get $dt) (i32.const 0))
      (then
        (block $pairs16Done
          (loop $pair16
            (br_if $pairs16Done
              (i32.gt_u (i32.add (local.get $j) (i32.const 8)) (local.get $n4)))
            (local.set $gc (i32.add (local.get $g) (local.get $c)))
            (call $rf_st8 (local.get $o) (local.get $dt)
              (call $rms_dx4 (local.get $p) (local.get $q) (local.get $ldt) (local.get $rr) (local.get $kk)
                (local.get $gc))
              (call $rms_dx4 (i32.add (local.get $p) (local.get $ies)) (i32.add (local.get $q) (local.get $ies))
                (local.get $ldt) (local.get $rr) (local.get $kk) (i32.add (local.get $gc) (i32.const 16))))
            (local.set $p (i32.add (local.get $p) (i32.shl (local.get $ies) (i32.const 1))))
            (local.set $q (i32.add (local.get $q) (i32.shl (local.get $ies) (i32.const 1))))
            (local.set $o (i32.add (local.get $o) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $c (i32.add (local.get $c) (i32.const 32)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $pair16)))))
    (block $pairsDone
      (loop $pair
        (br_if $pairsDone (i32.gt_u (i32.add (local.get $j) (i32.const 8)) (local.get $n4)))
        (local.set $gc (i32.add (local.get $g) (local.get $c)))
        (call $rf_st4 (local.get $o) (local.get $dt)
          (call $rms_dx4 (local.get $p) (local.get $q) (local.get $ldt) (local.get $rr) (local.get $kk)
                (local.get $gc)))
        (call $rf_st4 (i32.add (local.get $o) (local.get $es)) (local.get $dt)
          (call $rms_dx4 (i32.add (local.get $p) (local.get $ies)) (i32.add (local.get $q) (local.get $ies))
                (local.get $ldt) (local.get $rr) (local.get $kk) (i32.add (local.get $gc) (i32.const 16))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $ies) (i32.const 1))))
        (local.set $q (i32.add (local.get $q) (i32.shl (local.get $ies) (i32.const 1))))
        (local.set $o (i32.add (local.get $o) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $c (i32.add (local.get $c) (i32.const 32)))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (local.set $v
          (call $rms_dx4 (local.get $p) (local.get $q) (local.get $ldt) (local.get $rr) (local.get $kk)
              (i32.add (local.get $g) (local.get $c))))
        (call $rf_st4 (local.get $o) (local.get $dt) (local.get $v))
        (local.set $p (i32.add (local.get $p) (local.get $ies)))
        (local.set $q (i32.add (local.get $q) (local.get $ies)))
        (local.set $o (i32.add (local.get $o) (local.get $es)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next)))
    (if (i32.lt_u (local.get $j) (local.get $n))
      (then
          (local.set $v
            (call $rms_dx4 (local.get $p) (local.get $q) (local.get $ldt) (local.get $rr) (local.get $kk)
              (i32.add (local.get $g) (local.get $c))))
        (call $rf_st4n (local.get $o) (local.get $dt) (local.get $v)
          (i32.sub (local.get $n) (local.get $j))))))
)
