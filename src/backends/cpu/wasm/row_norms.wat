;; The forward row kernels of LayerNorm and RMSNorm and their helpers (row_norms_grad.wat
;; has the backward ones; src/backends/cpu/rows/heap_rows.ts drives both), spliced into
;; kernels.wat's module by the build (scripts/build_wasm.ts, before its dtype
;; specialisation): they use kernels.wat's codecs ($ld4, $lo, $hi2, $elem, $shift, $st4 and
;; the helpers of $st4) and get the same dispatch by `$dt` (0 float32, 2 bfloat16, 3 float16
;; on the exact path; their `__scaled16` hooks say no, so float16 never takes the scaled
;; path) and the same inlining.
;;
;; Each kernel runs `rows` rows of n elements: data tensors at byte addresses (row 0 of the
;; call), consecutive rows `*s` bytes apart, elements at unit stride (in place in the host
;; heap); per-column float64 arrays (weights, biases, column partials) and per-row float64
;; arrays (mean, rstd, from row 0 of the call) at byte addresses too. The float64 arrays
;; must have room for n rounded up to 4 (the last vector reads past n; it never writes
;; there). Data rows are read up to a vector past their end (the heap's block slack) and
;; written exactly: whole vectors of four, then the last one to three elements lane by lane
;; ($rn_st4n), so that a row never writes into the next one (threads may own it).
;;
;; The arithmetic is the TypeScript row kernels' (src/backends/cpu/rows/sums.ts,
;; row_loops.ts) operation for operation, in float64, with each output
;; rounded once to its dtype, so both give the same bits. Row sums use eight chains: element
;; j < n & ~7 goes into chain j mod 8 (lanes of four float64x2 accumulators), the chains
;; are combined as ((c0 + c2) + (c4 + c6)) + ((c1 + c3) + (c5 + c7)), then the last n mod 8
;; elements are added in order.
(module
  ;; ((a + b) + (c + d)) lane by lane, then lane 0 + lane 1: the eight chains' sum.
  (func $rn_fold (param $a v128) (param $b v128) (param $c v128) (param $d v128) (result f64)
    (local $s v128)
    (local.set $s
      (f64x2.add (f64x2.add (local.get $a) (local.get $b)) (f64x2.add (local.get $c) (local.get $d))))
    (f64.add (f64x2.extract_lane 0 (local.get $s)) (f64x2.extract_lane 1 (local.get $s))))

  ;; Stores lanes 0 .. count-1 (count 1 to 3) of four float64 values (lo, hi) at byte
  ;; address p, each rounded once to dt as $st4 rounds them.
  (func $rn_st4n (param $p i32) (param $dt i32) (param $lo v128) (param $hi v128)
    (param $count i32)
    (local $w v128)
    (local $r v128)
    (local.set $w (call $demote4 (local.get $lo) (local.get $hi)))
    (if (i32.eqz (local.get $dt))
      (then
        (v128.store32_lane 0 (local.get $p) (local.get $w))
        (if (i32.gt_u (local.get $count) (i32.const 1))
          (then (v128.store32_lane offset=4 1 (local.get $p) (local.get $w))))
        (if (i32.gt_u (local.get $count) (i32.const 2))
          (then (v128.store32_lane offset=8 2 (local.get $p) (local.get $w))))
        (return)))
    (local.set $r
      (if (result v128) (v128.any_true (call $inexact (local.get $dt) (local.get $w)))
        (then
          (local.set $r (call $exact (local.get $dt) (local.get $lo) (local.get $hi)))
          (i16x8.narrow_i32x4_u (local.get $r) (local.get $r)))
        (else (call $near4 (local.get $dt) (local.get $w)))))
    (v128.store16_lane 0 (local.get $p) (local.get $r))
    (if (i32.gt_u (local.get $count) (i32.const 1))
      (then (v128.store16_lane offset=2 1 (local.get $p) (local.get $r))))
    (if (i32.gt_u (local.get $count) (i32.const 2))
      (then (v128.store16_lane offset=4 2 (local.get $p) (local.get $r)))))

  ;; Zeroes n float64 at byte address p.
  (func $rn_zero (param $p i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (f64.store (local.get $p) (f64.const 0))
        (local.set $p (i32.add (local.get $p) (i32.const 8)))
        (br $next))))

  ;; LayerNorm forward. Per row: k = x[0], d = x - k, S and Q the eight-chain sums of d and
  ;; d * d, shift = S / n, mean = k + shift, rstd = 1 / sqrt(max(Q / n - shift * shift, 0)
  ;; + eps); y = (x - mean) * rstd * w + b. mean and rstd go to the per-row arrays.
  (func (export "ln_fwd")
    (param $x i32) (param $xs i32) (param $y i32) (param $ys i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $eps f64) (param $w i32) (param $b i32) (param $mean i32)
    (param $rstd i32)
    (local $r i32) (local $es i32) (local $n8 i32) (local $n4 i32) (local $j i32)
    (local $p i32) (local $q i32) (local $wp i32) (local $bp i32)
    (local $k f64) (local $s f64) (local $t f64) (local $e f64) (local $sh f64) (local $m f64)
    (local $rs f64)
    (local $kk v128) (local $v v128) (local $d v128) (local $mm v128) (local $rr v128)
    (local $sa v128) (local $sb v128) (local $sc v128) (local $sd v128)
    (local $qa v128) (local $qb v128) (local $qc v128) (local $qd v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n8 (i32.and (local.get $n) (i32.const -8)))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $k (call $elem (local.get $x) (i32.const 0) (local.get $dt)))
        (local.set $kk (f64x2.splat (local.get $k)))
        (local.set $sa (v128.const i64x2 0 0))
        (local.set $sb (v128.const i64x2 0 0))
        (local.set $sc (v128.const i64x2 0 0))
        (local.set $sd (v128.const i64x2 0 0))
        (local.set $qa (v128.const i64x2 0 0))
        (local.set $qb (v128.const i64x2 0 0))
        (local.set $qc (v128.const i64x2 0 0))
        (local.set $qd (v128.const i64x2 0 0))
        (local.set $p (local.get $x))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n8)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $d (f64x2.sub (call $lo (local.get $v)) (local.get $kk)))
            (local.set $sa (f64x2.add (local.get $sa) (local.get $d)))
            (local.set $qa (f64x2.add (local.get $qa) (f64x2.mul (local.get $d) (local.get $d))))
            (local.set $d
              (f64x2.sub (call $hi2 (local.get $v) (local.get $p) (local.get $dt)) (local.get $kk)))
            (local.set $sb (f64x2.add (local.get $sb) (local.get $d)))
            (local.set $qb (f64x2.add (local.get $qb) (f64x2.mul (local.get $d) (local.get $d))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $d (f64x2.sub (call $lo (local.get $v)) (local.get $kk)))
            (local.set $sc (f64x2.add (local.get $sc) (local.get $d)))
            (local.set $qc (f64x2.add (local.get $qc) (f64x2.mul (local.get $d) (local.get $d))))
            (local.set $d
              (f64x2.sub (call $hi2 (local.get $v) (local.get $p) (local.get $dt)) (local.get $kk)))
            (local.set $sd (f64x2.add (local.get $sd) (local.get $d)))
            (local.set $qd (f64x2.add (local.get $qd) (f64x2.mul (local.get $d) (local.get $d))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $next)))
        (local.set $s (call $rn_fold (local.get $sa) (local.get $sb) (local.get $sc) (local.get $sd)))
        (local.set $t (call $rn_fold (local.get $qa) (local.get $qb) (local.get $qc) (local.get $qd)))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $e
              (f64.sub (call $elem (local.get $x) (local.get $j) (local.get $dt)) (local.get $k)))
            (local.set $s (f64.add (local.get $s) (local.get $e)))
            (local.set $t (f64.add (local.get $t) (f64.mul (local.get $e) (local.get $e))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $next)))
        (local.set $sh (f64.div (local.get $s) (f64.convert_i32_u (local.get $n))))
        (local.set $m (f64.add (local.get $k) (local.get $sh)))
        (local.set $rs
          (f64.div (f64.const 1)
            (f64.sqrt
              (f64.add
                (f64.max
                  (f64.sub
                    (f64.div (local.get $t) (f64.convert_i32_u (local.get $n)))
                    (f64.mul (local.get $sh) (local.get $sh)))
                  (f64.const 0))
                (local.get $eps)))))
        (f64.store (local.get $mean) (local.get $m))
        (f64.store (local.get $rstd) (local.get $rs))
        (local.set $mm (f64x2.splat (local.get $m)))
        (local.set $rr (f64x2.splat (local.get $rs)))
        (local.set $p (local.get $x))
        (local.set $q (local.get $y))
        (local.set $wp (local.get $w))
        (local.set $bp (local.get $b))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $sa
              (f64x2.add
                (f64x2.mul
                  (f64x2.mul (f64x2.sub (call $lo (local.get $v)) (local.get $mm)) (local.get $rr))
                  (v128.load (local.get $wp)))
                (v128.load (local.get $bp))))
            (local.set $sb
              (f64x2.add
                (f64x2.mul
                  (f64x2.mul
                    (f64x2.sub (call $hi2 (local.get $v) (local.get $p) (local.get $dt))
                      (local.get $mm))
                    (local.get $rr))
                  (v128.load offset=16 (local.get $wp)))
                (v128.load offset=16 (local.get $bp))))
            (if (i32.lt_u (local.get $j) (local.get $n4))
              (then (call $st4 (local.get $q) (local.get $dt) (local.get $sa) (local.get $sb)))
              (else
                (call $rn_st4n (local.get $q) (local.get $dt) (local.get $sa) (local.get $sb)
                  (i32.sub (local.get $n) (local.get $j)))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $wp (i32.add (local.get $wp) (i32.const 32)))
            (local.set $bp (i32.add (local.get $bp) (i32.const 32)))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $next)))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $y (i32.add (local.get $y) (local.get $ys)))
        (local.set $mean (i32.add (local.get $mean) (i32.const 8)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 8)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  (func $ln_fwd__scaled16
    (param $x i32) (param $xs i32) (param $y i32) (param $ys i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $eps f64) (param $w i32) (param $b i32) (param $mean i32)
    (param $rstd i32) (result i32)
    (i32.const 0))

  (func $ln_fwd__redo16
    (param $x i32) (param $xs i32) (param $y i32) (param $ys i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $eps f64) (param $w i32) (param $b i32) (param $mean i32)
    (param $rstd i32) (result i32)
    (i32.const 0))

  ;; RMSNorm forward. Per row: Q the eight-chain sum of x * x, rstd = 1 / sqrt(Q / n + eps)
  ;; (to the per-row array), y = x * rstd * g.
  (func (export "rms_fwd")
    (param $x i32) (param $xs i32) (param $y i32) (param $ys i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $eps f64) (param $g i32) (param $rstd i32)
    (local $r i32) (local $es i32) (local $n8 i32) (local $n4 i32) (local $j i32)
    (local $p i32) (local $q i32) (local $gp i32)
    (local $t f64) (local $e f64) (local $rs f64)
    (local $v v128) (local $d v128) (local $rr v128)
    (local $qa v128) (local $qb v128) (local $qc v128) (local $qd v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n8 (i32.and (local.get $n) (i32.const -8)))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $qa (v128.const i64x2 0 0))
        (local.set $qb (v128.const i64x2 0 0))
        (local.set $qc (v128.const i64x2 0 0))
        (local.set $qd (v128.const i64x2 0 0))
        (local.set $p (local.get $x))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n8)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $d (call $lo (local.get $v)))
            (local.set $qa (f64x2.add (local.get $qa) (f64x2.mul (local.get $d) (local.get $d))))
            (local.set $d (call $hi2 (local.get $v) (local.get $p) (local.get $dt)))
            (local.set $qb (f64x2.add (local.get $qb) (f64x2.mul (local.get $d) (local.get $d))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $d (call $lo (local.get $v)))
            (local.set $qc (f64x2.add (local.get $qc) (f64x2.mul (local.get $d) (local.get $d))))
            (local.set $d (call $hi2 (local.get $v) (local.get $p) (local.get $dt)))
            (local.set $qd (f64x2.add (local.get $qd) (f64x2.mul (local.get $d) (local.get $d))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $next)))
        (local.set $t (call $rn_fold (local.get $qa) (local.get $qb) (local.get $qc) (local.get $qd)))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $e (call $elem (local.get $x) (local.get $j) (local.get $dt)))
            (local.set $t (f64.add (local.get $t) (f64.mul (local.get $e) (local.get $e))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $next)))
        (local.set $rs
          (f64.div (f64.const 1)
            (f64.sqrt
              (f64.add (f64.div (local.get $t) (f64.convert_i32_u (local.get $n)))
                (local.get $eps)))))
        (f64.store (local.get $rstd) (local.get $rs))
        (local.set $rr (f64x2.splat (local.get $rs)))
        (local.set $p (local.get $x))
        (local.set $q (local.get $y))
        (local.set $gp (local.get $g))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $qa
              (f64x2.mul (f64x2.mul (call $lo (local.get $v)) (local.get $rr))
                (v128.load (local.get $gp))))
            (local.set $qb
              (f64x2.mul
                (f64x2.mul (call $hi2 (local.get $v) (local.get $p) (local.get $dt)) (local.get $rr))
                (v128.load offset=16 (local.get $gp))))
            (if (i32.lt_u (local.get $j) (local.get $n4))
              (then (call $st4 (local.get $q) (local.get $dt) (local.get $qa) (local.get $qb)))
              (else
                (call $rn_st4n (local.get $q) (local.get $dt) (local.get $qa) (local.get $qb)
                  (i32.sub (local.get $n) (local.get $j)))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $gp (i32.add (local.get $gp) (i32.const 32)))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $next)))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $y (i32.add (local.get $y) (local.get $ys)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 8)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  (func $rms_fwd__scaled16
    (param $x i32) (param $xs i32) (param $y i32) (param $ys i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $eps f64) (param $g i32) (param $rstd i32) (result i32)
    (i32.const 0))

  (func $rms_fwd__redo16
    (param $x i32) (param $xs i32) (param $y i32) (param $ys i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $eps f64) (param $g i32) (param $rstd i32) (result i32)
    (i32.const 0))

  ;; out = a + b per element, rounded once to dt (AddRmsNorm's x).
  (func (export "row_add")
    (param $a i32) (param $as i32) (param $b i32) (param $bs i32) (param $o i32) (param $os i32)
    (param $n i32) (param $dt i32) (param $rows i32)
    (local $r i32) (local $es i32) (local $n4 i32) (local $j i32)
    (local $p i32) (local $q i32) (local $t i32)
    (local $v v128) (local $u v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $p (local.get $a))
        (local.set $q (local.get $b))
        (local.set $t (local.get $o))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $u (call $ld4 (local.get $q) (local.get $dt)))
            (if (i32.lt_u (local.get $j) (local.get $n4))
              (then
                (call $st4 (local.get $t) (local.get $dt)
                  (f64x2.add (call $lo (local.get $v)) (call $lo (local.get $u)))
                  (f64x2.add (call $hi2 (local.get $v) (local.get $p) (local.get $dt))
                    (call $hi2 (local.get $u) (local.get $q) (local.get $dt)))))
              (else
                (call $rn_st4n (local.get $t) (local.get $dt)
                  (f64x2.add (call $lo (local.get $v)) (call $lo (local.get $u)))
                  (f64x2.add (call $hi2 (local.get $v) (local.get $p) (local.get $dt))
                    (call $hi2 (local.get $u) (local.get $q) (local.get $dt)))
                  (i32.sub (local.get $n) (local.get $j)))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $t (i32.add (local.get $t) (local.get $es)))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $next)))
        (local.set $a (i32.add (local.get $a) (local.get $as)))
        (local.set $b (i32.add (local.get $b) (local.get $bs)))
        (local.set $o (i32.add (local.get $o) (local.get $os)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  (func $row_add__scaled16
    (param $a i32) (param $as i32) (param $b i32) (param $bs i32) (param $o i32) (param $os i32)
    (param $n i32) (param $dt i32) (param $rows i32) (result i32)
    (i32.const 0))

  (func $row_add__redo16
    (param $a i32) (param $as i32) (param $b i32) (param $bs i32) (param $o i32) (param $os i32)
    (param $n i32) (param $dt i32) (param $rows i32) (result i32)
    (i32.const 0))
)
