;; The two stages of aclnnGroupNormSwishGrad on NCHW rows (kernels/channel_stages.ts, the
;; "swishSums" and "swishGrad" stages; fast/group_norm_swish_grad.ts drives them), float32 as
;; CANN's kernel computes it (hicann/ops-nn e5c3fa9 norm/group_norm_swish_grad/op_kernel/
;; group_norm_swish_grad.h:186-346; docs/norm_family_kernels.md section 11). Per (n, c) the
;; constants k0 = rstd, k1 = -mean * rstd, k2 = gamma[c], k3 = beta[c], k4 = -swishScale,
;; k5 = swishScale (as float32) give, for each element:
;;   xhat = x * k0 + k1 (Adds_Muls_template, :996-1001); t = xhat * k2 + k3;
;;   d = 1 + exp(t * k4); q = t / d; u = (t - q) * k5 + 1; dYNew = (u / d) * dy.
;; gs_sums_rows adds sum(dYNew) and sum(xhat * dYNew) (float32 lanes over runs of 256 elements,
;; each run added in float64, as channel_norms.wat's bn_sums_rows); gs_grad_rows writes
;; dx = dYNew * k6 - (xhat * k7 + k8) (:297-300) with k6 = rstd * gamma[c], k7 = rstd * c2,
;; k8 = rstd * c1, rounded once to the data type. d is channel_swish.wat's $cs_one_plus_exp4.
;; dYNew costs an exp and two divisions an element, so gs_sums_rows may also keep it: given a
;; cache address (not 0), it stores each row's dYNew as float32 there, the row's whole vectors
;; (its last one to three elements in a whole vector too, the lanes past the row undefined), and
;; gs_grad_cached_rows writes dx from those values and x: the float32 values gs_grad_rows
;; computes again, so the same bits.
;; Spliced into kernels.wat's module after channel_swish.wat (scripts/build_wasm.ts).
(module
  ;; dYNew of four elements from dy and xhat (constants splatted as float32).
  (func $gs_dynew (param $dy v128) (param $xh v128) (param $g v128) (param $b v128)
    (param $kneg v128) (param $s v128) (result v128)
    (local $t v128) (local $d v128)
    (local.set $t (f32x4.add (f32x4.mul (local.get $xh) (local.get $g)) (local.get $b)))
    (local.set $d (call $cs_one_plus_exp4 (f32x4.mul (local.get $t) (local.get $kneg))))
    (f32x4.mul
      (f32x4.div
        (f32x4.add
          (f32x4.mul (f32x4.sub (local.get $t) (f32x4.div (local.get $t) (local.get $d)))
            (local.get $s))
          (f32x4.splat (f32.const 1)))
        (local.get $d))
      (local.get $dy)))

  ;; Sums of one item, rows: sum(dYNew) and sum(xhat * dYNew) as float64 at `out`. With $c
  ;; not 0, row r's dYNew also goes to byte address c + r * cs (16-byte aligned), as float32:
  ;; ceil(inner / 4) whole vectors (see the module's head).
  (func (export "gs_sums_rows")
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $inner i32)
    (param $dt i32) (param $rows i32) (param $k0 f64) (param $k1 f64) (param $k2 f64)
    (param $k3 f64) (param $k4 f64) (param $k5 f64) (param $out i32) (param $c i32)
    (param $cs i32)
    (local $r i32) (local $p i32) (local $q i32) (local $j i32) (local $end i32) (local $es i32)
    (local $w i32)
    (local $n4 i32) (local $t1 f64) (local $t2 f64)
    (local $a v128) (local $b v128) (local $g v128) (local $bt v128) (local $kn v128) (local $s v128)
    (local $xh v128) (local $v v128) (local $a1 v128) (local $a2 v128) (local $mask v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $inner) (i32.const -4)))
    (local.set $a (f32x4.splat (f32.demote_f64 (local.get $k0))))
    (local.set $b (f32x4.splat (f32.demote_f64 (local.get $k1))))
    (local.set $g (f32x4.splat (f32.demote_f64 (local.get $k2))))
    (local.set $bt (f32x4.splat (f32.demote_f64 (local.get $k3))))
    (local.set $kn (f32x4.splat (f32.demote_f64 (local.get $k4))))
    (local.set $s (f32x4.splat (f32.demote_f64 (local.get $k5))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $p (i32.add (local.get $dy) (i32.mul (local.get $r) (local.get $dys))))
        (local.set $q (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $xs))))
        (local.set $w (i32.add (local.get $c) (i32.mul (local.get $r) (local.get $cs))))
        (local.set $j (i32.const 0))
        (block $blocksDone
          (loop $block
            (br_if $blocksDone (i32.ge_u (local.get $j) (local.get $n4)))
            (local.set $end (i32.add (local.get $j) (i32.const 256)))
            (if (i32.gt_u (local.get $end) (local.get $n4)) (then (local.set $end (local.get $n4))))
            (local.set $a1 (v128.const i64x2 0 0))
            (local.set $a2 (v128.const i64x2 0 0))
            (block $vecsDone
              (loop $vec
                (br_if $vecsDone (i32.ge_u (local.get $j) (local.get $end)))
                (local.set $xh
                  (f32x4.add (f32x4.mul (call $ld4 (local.get $q) (local.get $dt)) (local.get $a))
                    (local.get $b)))
                (local.set $v
                  (call $gs_dynew (call $ld4 (local.get $p) (local.get $dt)) (local.get $xh)
                    (local.get $g) (local.get $bt) (local.get $kn) (local.get $s)))
                (if (local.get $c) (then (v128.store (local.get $w) (local.get $v))))
                (local.set $a1 (f32x4.add (local.get $a1) (local.get $v)))
                (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $xh) (local.get $v))))
                (local.set $p (i32.add (local.get $p) (local.get $es)))
                (local.set $q (i32.add (local.get $q) (local.get $es)))
                (local.set $w (i32.add (local.get $w) (i32.const 16)))
                (local.set $j (i32.add (local.get $j) (i32.const 4)))
                (br $vec)))
            (local.set $t1 (f64.add (local.get $t1)
              (call $rf_fold (local.get $a1) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (local.set $t2 (f64.add (local.get $t2)
              (call $rf_fold (local.get $a2) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0))))
            (br $block)))
        ;; The last one to three elements, masked (after the products: lanes past the row may
        ;; hold anything, NaN included).
        (if (i32.lt_u (local.get $j) (local.get $inner))
          (then
            (local.set $mask (call $rf_mask (i32.sub (local.get $inner) (local.get $j))))
            (local.set $xh
              (f32x4.add (f32x4.mul (call $ld4 (local.get $q) (local.get $dt)) (local.get $a))
                (local.get $b)))
            (local.set $v
              (call $gs_dynew (call $ld4 (local.get $p) (local.get $dt)) (local.get $xh)
                (local.get $g) (local.get $bt) (local.get $kn) (local.get $s)))
            (if (local.get $c) (then (v128.store (local.get $w) (local.get $v))))
            (local.set $t1 (f64.add (local.get $t1)
              (call $rf_fold (v128.and (local.get $v) (local.get $mask)) (v128.const i64x2 0 0)
                (v128.const i64x2 0 0) (v128.const i64x2 0 0))))
            (local.set $t2 (f64.add (local.get $t2)
              (call $rf_fold (v128.and (f32x4.mul (local.get $xh) (local.get $v)) (local.get $mask))
                (v128.const i64x2 0 0) (v128.const i64x2 0 0) (v128.const i64x2 0 0))))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row)))
    (f64.store (local.get $out) (local.get $t1))
    (f64.store offset=8 (local.get $out) (local.get $t2)))

  ;; Four lanes of gs_grad_rows's dx from dy at p and x at q (dt), before the rounding:
  ;; dYNew * c6 - (xhat * c7 + c8), xhat = x * a + b, dYNew from g, bt, kn, s ($gs_dynew).
  (func $gs_dx (param $p i32) (param $q i32) (param $dt i32) (param $a v128) (param $b v128)
    (param $g v128) (param $bt v128) (param $kn v128) (param $s v128) (param $c6 v128)
    (param $c7 v128) (param $c8 v128) (result v128)
    (local $xh v128)
    (local.set $xh
      (f32x4.add (f32x4.mul (call $ld4 (local.get $q) (local.get $dt)) (local.get $a))
        (local.get $b)))
    (f32x4.sub
      (f32x4.mul
        (call $gs_dynew (call $ld4 (local.get $p) (local.get $dt)) (local.get $xh)
          (local.get $g) (local.get $bt) (local.get $kn) (local.get $s))
        (local.get $c6))
      (f32x4.add (f32x4.mul (local.get $xh) (local.get $c7)) (local.get $c8))))

  ;; The dx write of one item, rows: dx = dYNew * k6 - (xhat * k7 + k8), one rounding.
  (func (export "gs_grad_rows")
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $o i32) (param $os i32)
    (param $inner i32) (param $dt i32) (param $rows i32) (param $k0 f64) (param $k1 f64)
    (param $k2 f64) (param $k3 f64) (param $k4 f64) (param $k5 f64) (param $k6 f64)
    (param $k7 f64) (param $k8 f64)
    (local $r i32) (local $p i32) (local $q i32) (local $t i32) (local $j i32) (local $es i32)
    (local $n4 i32)
    (local $a v128) (local $b v128) (local $g v128) (local $bt v128) (local $kn v128) (local $s v128)
    (local $c6 v128) (local $c7 v128) (local $c8 v128) (local $v v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $inner) (i32.const -4)))
    (local.set $a (f32x4.splat (f32.demote_f64 (local.get $k0))))
    (local.set $b (f32x4.splat (f32.demote_f64 (local.get $k1))))
    (local.set $g (f32x4.splat (f32.demote_f64 (local.get $k2))))
    (local.set $bt (f32x4.splat (f32.demote_f64 (local.get $k3))))
    (local.set $kn (f32x4.splat (f32.demote_f64 (local.get $k4))))
    (local.set $s (f32x4.splat (f32.demote_f64 (local.get $k5))))
    (local.set $c6 (f32x4.splat (f32.demote_f64 (local.get $k6))))
    (local.set $c7 (f32x4.splat (f32.demote_f64 (local.get $k7))))
    (local.set $c8 (f32x4.splat (f32.demote_f64 (local.get $k8))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $p (i32.add (local.get $dy) (i32.mul (local.get $r) (local.get $dys))))
        (local.set $q (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $xs))))
        (local.set $t (i32.add (local.get $o) (i32.mul (local.get $r) (local.get $os))))
        (local.set $j (i32.const 0))
        ;; 16-bit data: pairs of whole vectors rounded and stored together ($rf_st8); then the
        ;; vectors left, the last one's one to three elements at the end.
        (if (i32.ne (local.get $dt) (i32.const 0))
          (then
            (block $pairsDone
              (loop $pair
                (br_if $pairsDone (i32.ge_u (i32.add (local.get $j) (i32.const 4)) (local.get $n4)))
                (call $rf_st8 (local.get $t) (local.get $dt)
                  (call $gs_dx (local.get $p) (local.get $q) (local.get $dt) (local.get $a)
                    (local.get $b) (local.get $g) (local.get $bt) (local.get $kn) (local.get $s)
                    (local.get $c6) (local.get $c7) (local.get $c8))
                  (call $gs_dx (i32.add (local.get $p) (local.get $es))
                    (i32.add (local.get $q) (local.get $es)) (local.get $dt) (local.get $a)
                    (local.get $b) (local.get $g) (local.get $bt) (local.get $kn) (local.get $s)
                    (local.get $c6) (local.get $c7) (local.get $c8)))
                (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
                (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
                (local.set $t (i32.add (local.get $t) (i32.shl (local.get $es) (i32.const 1))))
                (local.set $j (i32.add (local.get $j) (i32.const 8)))
                (br $pair)))))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $inner)))
            (local.set $v
              (call $gs_dx (local.get $p) (local.get $q) (local.get $dt) (local.get $a) (local.get $b)
                (local.get $g) (local.get $bt) (local.get $kn) (local.get $s) (local.get $c6)
                (local.get $c7) (local.get $c8)))
            (if (i32.lt_u (local.get $j) (local.get $n4))
              (then (call $rf_st4 (local.get $t) (local.get $dt) (local.get $v)))
              (else
                (call $rf_st4n (local.get $t) (local.get $dt) (local.get $v)
                  (i32.sub (local.get $inner) (local.get $j)))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $t (i32.add (local.get $t) (local.get $es)))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $next)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; Four lanes of gs_grad_cached_rows's dx from the kept dYNew at w and x at q (dt), before
  ;; the rounding: $gs_dx's operations after dYNew.
  (func $gs_dx_cached (param $w i32) (param $q i32) (param $dt i32) (param $a v128)
    (param $b v128) (param $c6 v128) (param $c7 v128) (param $c8 v128) (result v128)
    (local $xh v128)
    (local.set $xh
      (f32x4.add (f32x4.mul (call $ld4 (local.get $q) (local.get $dt)) (local.get $a))
        (local.get $b)))
    (f32x4.sub (f32x4.mul (v128.load (local.get $w)) (local.get $c6))
      (f32x4.add (f32x4.mul (local.get $xh) (local.get $c7)) (local.get $c8))))

  ;; The dx write of one item from the dYNew that gs_sums_rows kept (row r's at byte address
  ;; c + r * cs): dx = dYNew * k6 - (xhat * k7 + k8), one rounding, xhat = x * k0 + k1 (the
  ;; constants as gs_grad_rows's), the same float32 operations as gs_grad_rows after dYNew.
  (func (export "gs_grad_cached_rows")
    (param $c i32) (param $cs i32) (param $x i32) (param $xs i32) (param $o i32) (param $os i32)
    (param $inner i32) (param $dt i32) (param $rows i32) (param $k0 f64) (param $k1 f64)
    (param $k6 f64) (param $k7 f64) (param $k8 f64)
    (local $r i32) (local $w i32) (local $q i32) (local $t i32) (local $j i32) (local $es i32)
    (local $n4 i32)
    (local $a v128) (local $b v128) (local $c6 v128) (local $c7 v128) (local $c8 v128)
    (local $v v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $inner) (i32.const -4)))
    (local.set $a (f32x4.splat (f32.demote_f64 (local.get $k0))))
    (local.set $b (f32x4.splat (f32.demote_f64 (local.get $k1))))
    (local.set $c6 (f32x4.splat (f32.demote_f64 (local.get $k6))))
    (local.set $c7 (f32x4.splat (f32.demote_f64 (local.get $k7))))
    (local.set $c8 (f32x4.splat (f32.demote_f64 (local.get $k8))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $w (i32.add (local.get $c) (i32.mul (local.get $r) (local.get $cs))))
        (local.set $q (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $xs))))
        (local.set $t (i32.add (local.get $o) (i32.mul (local.get $r) (local.get $os))))
        (local.set $j (i32.const 0))
        ;; 16-bit data: pairs of whole vectors rounded and stored together ($rf_st8).
        (if (i32.ne (local.get $dt) (i32.const 0))
          (then
            (block $pairsDone
              (loop $pair
                (br_if $pairsDone (i32.ge_u (i32.add (local.get $j) (i32.const 4)) (local.get $n4)))
                (call $rf_st8 (local.get $t) (local.get $dt)
                  (call $gs_dx_cached (local.get $w) (local.get $q) (local.get $dt) (local.get $a)
                    (local.get $b) (local.get $c6) (local.get $c7) (local.get $c8))
                  (call $gs_dx_cached (i32.add (local.get $w) (i32.const 16))
                    (i32.add (local.get $q) (local.get $es)) (local.get $dt) (local.get $a)
                    (local.get $b) (local.get $c6) (local.get $c7) (local.get $c8)))
                (local.set $w (i32.add (local.get $w) (i32.const 32)))
                (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
                (local.set $t (i32.add (local.get $t) (i32.shl (local.get $es) (i32.const 1))))
                (local.set $j (i32.add (local.get $j) (i32.const 8)))
                (br $pair)))))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $inner)))
            (local.set $v
              (call $gs_dx_cached (local.get $w) (local.get $q) (local.get $dt) (local.get $a)
                (local.get $b) (local.get $c6) (local.get $c7) (local.get $c8)))
            (if (i32.lt_u (local.get $j) (local.get $n4))
              (then (call $rf_st4 (local.get $t) (local.get $dt) (local.get $v)))
              (else
                (call $rf_st4n (local.get $t) (local.get $dt) (local.get $v)
                  (i32.sub (local.get $inner) (local.get $j)))))
            (local.set $w (i32.add (local.get $w) (i32.const 16)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $t (i32.add (local.get $t) (local.get $es)))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $next)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))
)
