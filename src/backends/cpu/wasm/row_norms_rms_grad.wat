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
  ;; dx = rs * dy * g - x * k ($rmsb_row_dx, as ln_bwd's gradInput loads float16).
  (func (export "rms_bwd")
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $dx i32)
    (param $dxs i32) (param $n i32) (param $dt i32) (param $rows i32) (param $rstd i32)
    (param $g i32) (param $pg i32)
    (local $r i32) (local $es i32) (local $n4 i32) (local $j i32)
    (local $p i32) (local $q i32) (local $c i32)
    (local $rs f64) (local $t f64)
    (local $rr v128) (local $pv v128) (local $s v128) (local $kk v128)
    (local $pv2 v128) (local $s2 v128) (local $gc i32)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (call $rf_zero (local.get $pg) (local.get $n))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $rr (v128.load32_splat (local.get $rstd)))
        (local.set $rs (f64.promote_f32 (f32.load (local.get $rstd))))
        (local.set $t (f64.const 0))
        (local.set $s (v128.const i64x2 0 0))
        (local.set $p (local.get $dy))
        (local.set $q (local.get $x))
        (local.set $c (i32.const 0))
        (local.set $j (i32.const 0))
        ;; Pairs of vectors (two float32 lanes for the sum, added in float64 every 256
        ;; elements), then a last whole vector, then the last one to three elements masked.
        (local.set $s2 (v128.const i64x2 0 0))
        (block $pairsDone
          (loop $pair
            (br_if $pairsDone (i32.gt_u (i32.add (local.get $j) (i32.const 8)) (local.get $n4)))
            (local.set $pv
              (f32x4.mul (call $ld4 (local.get $p) (local.get $dt))
                (call $ld4 (local.get $q) (local.get $dt))))
            (local.set $pv2
              (f32x4.mul (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt))
                (call $ld4 (i32.add (local.get $q) (local.get $es)) (local.get $dt))))
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
            (local.set $pv
              (f32x4.mul (call $ld4 (local.get $p) (local.get $dt))
                (call $ld4 (local.get $q) (local.get $dt))))
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
                (f32x4.mul (call $ld4 (local.get $p) (local.get $dt))
                  (call $ld4 (local.get $q) (local.get $dt)))
                (call $rf_mask (i32.sub (local.get $n) (local.get $j)))))
                (local.set $s (f32x4.add (local.get $s)
                  (f32x4.mul (local.get $pv) (v128.load (i32.add (local.get $g) (local.get $c))))))
                (v128.store (i32.add (local.get $pg) (local.get $c))
                  (f32x4.add (v128.load (i32.add (local.get $pg) (local.get $c)))
                    (f32x4.mul (local.get $pv) (local.get $rr))))))
        (local.set $t (f64.add (local.get $t)
          (call $rf_fold (local.get $s) (local.get $s2) (v128.const i64x2 0 0)
            (v128.const i64x2 0 0))))
        (local.set $kk (f32x4.splat (f32.demote_f64
          (f64.div
            (f64.mul (f64.mul (f64.mul (local.get $rs) (local.get $rs)) (local.get $rs))
              (local.get $t))
            (f64.convert_i32_u (local.get $n))))))
        (if (i32.eq (call $load_code (local.get $dt) (call $finite64 (local.get $t))) (i32.const 5))
          (then
            (call $rmsb_row_dx (local.get $dy) (local.get $x) (local.get $dx) (local.get $n)
              (local.get $n4) (local.get $es) (i32.const 5) (local.get $dt) (local.get $rr)
              (local.get $kk) (local.get $g)))
          (else
            (call $rmsb_row_dx (local.get $dy) (local.get $x) (local.get $dx) (local.get $n)
              (local.get $n4) (local.get $es) (local.get $dt) (local.get $dt) (local.get $rr)
              (local.get $kk) (local.get $g))))
        (local.set $dy (i32.add (local.get $dy) (local.get $dys)))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $dx (i32.add (local.get $dx) (local.get $dxs)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; rms_bwd's dx over one row of n elements (n4 in whole vectors; es the bytes of four): dy at p
  ;; and x at q loaded as code ldt (kernels.wat $load_code: 5 when the row's sum came out
  ;; finite), dx stored at o as dt.
  (func $rmsb_row_dx (param $p i32) (param $q i32) (param $o i32) (param $n i32) (param $n4 i32)
    (param $es i32) (param $ldt i32) (param $dt i32) (param $rr v128) (param $kk v128) (param $g i32)
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
              (call $rms_dx4 (i32.add (local.get $p) (local.get $es)) (i32.add (local.get $q) (local.get $es))
                (local.get $ldt) (local.get $rr) (local.get $kk) (i32.add (local.get $gc) (i32.const 16))))
            (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
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
          (call $rms_dx4 (i32.add (local.get $p) (local.get $es)) (i32.add (local.get $q) (local.get $es))
                (local.get $ldt) (local.get $rr) (local.get $kk) (i32.add (local.get $gc) (i32.const 16))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
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
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
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
