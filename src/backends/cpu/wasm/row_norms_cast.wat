;; The fused residual-add RMSNorm kernel of aclnnAddRmsNormCast, spliced into kernels.wat's module
;; after row_sums.wat (scripts/build_wasm.ts ROWS_WAT_PATHS), whose row helpers ($rf_rstd,
;; $rf_st4, $rf_st4n, $rf_st8) it uses, with AddRmsNorm's pass 1 and y from row_norms.wat
;; ($arms_pass1, $arms_yk); same conventions of addresses, rows and dtype
;; dispatch as row_norms.wat states.
;;
;; Numerics (hicann/ops-nn e5c3fa9, docs/norm_family_kernels.md section 7): the sum s = x1 + x2
;; is formed in float32 and kept for the statistics and y, x is s rounded once to dt, rstd = 1 /
;; sqrt(sum(s^2) / n + eps), y1 = s * rstd * gamma stored as float32 and y2 = y1 rounded once to
;; dt: what Ascend 950's regbase kernel computes for both dtypes (norm/add_rms_norm_cast/
;; op_kernel/arch35/add_rms_norm_cast_regbase_common.h:74-116, 135-185). The A2/A3 kernels round
;; more on the way (float16: the add, x * rstd and the gamma product in half, y1 = float(y2);
;; bfloat16: y1 = float(y2) in the NORMAL and SPLIT_D templates): those are no SoC-wide rule and
;; stay in the simulator (tests/sim/sim_ops_add_rms_norm_cast.c), as add_rms_fwd's do.
(module
  ;; AddRmsNormCast forward. Per row: pass 1 stores x = round(a + b) and sums the float squares;
  ;; pass 2 forms y = (a + b) * rstd * g again from the inputs and stores it twice: float32 at
  ;; y1 (rows y1s bytes apart), rounded to dt at y2.
  (func (export "add_rms_cast_fwd")
    (param $a i32) (param $as i32) (param $b i32) (param $bs i32) (param $x i32) (param $xs i32)
    (param $y1 i32) (param $y1s i32) (param $y2 i32) (param $y2s i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $eps f64) (param $g i32) (param $rstd i32) (param $scr i32)
    (local $r i32) (local $es i32) (local $n4 i32) (local $rs f32) (local $rr v128) (local $sum f64)
    (local $keep i32)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $keep (i32.and (call $keeps_terms (local.get $dt))
      (i32.ge_s (local.get $scr) (i32.const 0))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        ;; Pass 1: x = round(a + b), and the float sum's squares (row_norms.wat $arms_pass1;
        ;; float16 rows with no Inf or NaN loaded without the fix: kernels.wat $f16_specials; s
        ;; kept in the float32 row at scr for 16-bit dtypes: kernels.wat $keeps_terms).
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
        ;; Pass 2: y from the float sum, to y1 (float32) and y2 (dt): $armc_row_y, a and b loaded
        ;; as finite float16 when the sum of squares is (kernels.wat $load_code).
        (if (local.get $keep)
          (then
            (call $armc_row_y (local.get $a) (local.get $b) (local.get $y1) (local.get $y2)
              (local.get $n) (local.get $n4) (local.get $es) (local.get $dt) (local.get $dt)
              (local.get $rr) (local.get $g) (i32.const 1) (local.get $scr)))
          (else
            (if (i32.eq (call $load_code (local.get $dt) (call $finite64 (local.get $sum)))
                  (i32.const 5))
              (then
                (call $armc_row_y (local.get $a) (local.get $b) (local.get $y1) (local.get $y2)
                  (local.get $n) (local.get $n4) (local.get $es) (i32.const 5) (local.get $dt)
                  (local.get $rr) (local.get $g) (i32.const 0) (local.get $scr)))
              (else
                (call $armc_row_y (local.get $a) (local.get $b) (local.get $y1) (local.get $y2)
                  (local.get $n) (local.get $n4) (local.get $es) (local.get $dt) (local.get $dt)
                  (local.get $rr) (local.get $g) (i32.const 0) (local.get $scr))))))
        (local.set $a (i32.add (local.get $a) (local.get $as)))
        (local.set $b (i32.add (local.get $b) (local.get $bs)))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $y1 (i32.add (local.get $y1) (local.get $y1s)))
        (local.set $y2 (i32.add (local.get $y2) (local.get $y2s)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; add_rms_cast_fwd's pass 2 over one row of n elements (n4 in whole vectors; es the bytes of
  ;; four): y from the rows at p and q (loaded as code ldt: kernels.wat $load_code), or from the
  ;; kept float32 sum at ks when `kept`, stored as float32 at t and rounded to dt at u.
  (func $armc_row_y (param $p i32) (param $q i32) (param $t i32) (param $u i32) (param $n i32)
    (param $n4 i32) (param $es i32) (param $ldt i32) (param $dt i32) (param $rr v128) (param $g i32)
    (param $kept i32) (param $ks i32)
    (local $c i32) (local $j i32) (local $v v128) (local $w v128)
    ;; 16-bit data: pairs of vectors, y2 rounded and stored together ($rf_st8).
    (if (i32.ne (local.get $dt) (i32.const 0))
      (then
        (block $pairsDone
          (loop $pair
            (br_if $pairsDone (i32.ge_u (i32.add (local.get $j) (i32.const 4)) (local.get $n4)))
            (local.set $v
              (call $arms_yk (local.get $p) (local.get $q) (local.get $ldt) (local.get $kept)
                (local.get $ks) (local.get $c) (local.get $rr) (local.get $g)))
            (local.set $w
              (call $arms_yk (i32.add (local.get $p) (local.get $es)) (i32.add (local.get $q) (local.get $es))
                (local.get $ldt) (local.get $kept) (local.get $ks) (i32.add (local.get $c) (i32.const 16))
                (local.get $rr) (local.get $g)))
            (v128.store (local.get $t) (local.get $v))
            (v128.store offset=16 (local.get $t) (local.get $w))
            (call $rf_st8 (local.get $u) (local.get $dt) (local.get $v) (local.get $w))
            (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $t (i32.add (local.get $t) (i32.const 32)))
            (local.set $u (i32.add (local.get $u) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $c (i32.add (local.get $c) (i32.const 32)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $pair)))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (local.set $v
          (call $arms_yk (local.get $p) (local.get $q) (local.get $ldt) (local.get $kept)
            (local.get $ks) (local.get $c) (local.get $rr) (local.get $g)))
        (v128.store (local.get $t) (local.get $v))
        (call $rf_st4 (local.get $u) (local.get $dt) (local.get $v))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
        (local.set $t (i32.add (local.get $t) (i32.const 16)))
        (local.set $u (i32.add (local.get $u) (local.get $es)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next)))
    (if (i32.lt_u (local.get $j) (local.get $n))
      (then
        (local.set $v
          (call $arms_yk (local.get $p) (local.get $q) (local.get $ldt) (local.get $kept)
            (local.get $ks) (local.get $c) (local.get $rr) (local.get $g)))
        (call $rf_st4n (local.get $t) (i32.const 0) (local.get $v)
          (i32.sub (local.get $n) (local.get $j)))
        (call $rf_st4n (local.get $u) (local.get $dt) (local.get $v)
          (i32.sub (local.get $n) (local.get $j))))))
)
