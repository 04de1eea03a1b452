;; The adaptive LayerNorm kernel of aclnnAdaLayerNorm and aclnnAdaLayerNormV2, spliced into
;; kernels.wat's module after row_sums.wat (scripts/build_wasm.ts ROWS_WAT_PATHS), whose row
;; helpers ($rf_stats, $rf_st4, $rf_st4n) it uses; same conventions of addresses, rows and
;; dtype dispatch as row_norms.wat states.
;;
;; Numerics (hicann/ops-nn e5c3fa9, docs/norm_family_kernels.md section 12): mean and rstd of a
;; row exactly as ln_fwd computes them; then y = (((x - mean) * rstd) * w + b) * (1 + scale) +
;; shift in float32, rounded once to dt (norm/ada_layer_norm/op_kernel/ada_layer_norm_base_v1.h
;; :225-268 SingleLayerNorm, :270-290 Adaption). The caller gives 1 + scale already formed in
;; float32 (:386 Adds after the cast) and shift widened, one row of n (padded to 4) per batch
;; index: row r of the call (global row row0 + r) takes batch row (row0 + r) / seq, as the kernel
;; indexes them (`rowIdx / seqLen`, :273). The A2 multi-row template divides by sqrt(var + eps)
;; instead of multiplying by rstd (MultiLayerNorm :200-205): no SoC-wide rule, so it stays in the
;; simulator (tests/sim/sim_ops_ada_layer_norm.c).
(module
  ;; Four lanes of y from x at p (dt): (((x - mean) * rstd) * w + b) * sc + shift, from the
  ;; float32 rows at wp (w), bp (b), scp (the caller's 1 + scale) and shp (shift).
  (func $ada_y4 (param $p i32) (param $dt i32) (param $mm v128) (param $rr v128) (param $wp i32)
    (param $bp i32) (param $scp i32) (param $shp i32) (result v128)
    (f32x4.add
      (f32x4.mul
        (f32x4.add
          (f32x4.mul
            (f32x4.mul (f32x4.sub (call $ld4 (local.get $p) (local.get $dt)) (local.get $mm))
              (local.get $rr))
            (v128.load (local.get $wp)))
          (v128.load (local.get $bp)))
        (v128.load (local.get $scp)))
      (v128.load (local.get $shp))))

  ;; AdaLayerNorm forward. Per row: mean and rstd (to the per-row arrays), then y.
  (func (export "ada_ln_fwd")
    (param $x i32) (param $xs i32) (param $y i32) (param $ys i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $eps f64) (param $w i32) (param $b i32) (param $sc i32) (param $sh i32)
    (param $row0 i32) (param $seq i32) (param $mean i32) (param $rstd i32)
    (local $r i32) (local $es i32) (local $n4 i32) (local $k i32) (local $mm v128) (local $rr v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (call $rf_stats (local.get $x) (local.get $n) (local.get $dt) (local.get $eps) (local.get $mean)
          (local.get $rstd))
        (local.set $mm (v128.load32_splat (local.get $mean)))
        (local.set $rr (v128.load32_splat (local.get $rstd)))
        ;; The batch row's byte offset in the scale and shift arrays.
        (local.set $k
          (i32.mul
            (i32.div_u (i32.add (local.get $row0) (local.get $r)) (local.get $seq))
            (i32.shl (i32.and (i32.add (local.get $n) (i32.const 3)) (i32.const -4)) (i32.const 2))))
        ;; y ($ada_row_y; x loaded as finite float16 when the mean is: row_sums.wat $rf_stats_code).
        (if (i32.eq (call $rf_stats_code (local.get $dt) (local.get $mean)) (i32.const 5))
          (then
            (call $ada_row_y (local.get $x) (local.get $y) (local.get $n) (local.get $n4)
              (local.get $es) (i32.const 5) (local.get $dt) (local.get $mm) (local.get $rr)
              (local.get $w) (local.get $b) (i32.add (local.get $sc) (local.get $k))
              (i32.add (local.get $sh) (local.get $k))))
          (else
            (call $ada_row_y (local.get $x) (local.get $y) (local.get $n) (local.get $n4)
              (local.get $es) (local.get $dt) (local.get $dt) (local.get $mm) (local.get $rr)
              (local.get $w) (local.get $b) (i32.add (local.get $sc) (local.get $k))
              (i32.add (local.get $sh) (local.get $k)))))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $y (i32.add (local.get $y) (local.get $ys)))
        (local.set $mean (i32.add (local.get $mean) (i32.const 4)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; ada_ln_fwd's y over one row of n elements (n4 in whole vectors; es the bytes of four) from x
  ;; at p (loaded as code ldt: kernels.wat $load_code) to q (stored as dt), with the batch row's
  ;; 1 + scale at sc and shift at sh.
  (func $ada_row_y (param $p i32) (param $q i32) (param $n i32) (param $n4 i32) (param $es i32)
    (param $ldt i32) (param $dt i32) (param $mm v128) (param $rr v128) (param $w i32) (param $b i32)
    (param $sc i32) (param $sh i32)
    (local $c i32) (local $j i32) (local $v v128)
    ;; 16-bit data: pairs of whole vectors rounded and stored together ($rf_st8); then the
    ;; vectors left, the last one's one to three elements at the end.
    (if (i32.ne (local.get $dt) (i32.const 0))
      (then
        (block $pairsDone
          (loop $pair
            (br_if $pairsDone (i32.ge_u (i32.add (local.get $j) (i32.const 4)) (local.get $n4)))
            (call $rf_st8 (local.get $q) (local.get $dt)
              (call $ada_y4 (local.get $p) (local.get $ldt) (local.get $mm) (local.get $rr)
                (i32.add (local.get $w) (local.get $c)) (i32.add (local.get $b) (local.get $c))
                (i32.add (local.get $sc) (local.get $c))
                (i32.add (local.get $sh) (local.get $c)))
              (call $ada_y4 (i32.add (local.get $p) (local.get $es)) (local.get $ldt) (local.get $mm)
                (local.get $rr) (i32.add (local.get $w) (i32.add (local.get $c) (i32.const 16)))
                (i32.add (local.get $b) (i32.add (local.get $c) (i32.const 16)))
                (i32.add (local.get $sc) (i32.add (local.get $c) (i32.const 16)))
                (i32.add (local.get $sh) (i32.add (local.get $c) (i32.const 16)))))
            (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
            (local.set $c (i32.add (local.get $c) (i32.const 32)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $pair)))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $v
          (call $ada_y4 (local.get $p) (local.get $ldt) (local.get $mm) (local.get $rr)
            (i32.add (local.get $w) (local.get $c)) (i32.add (local.get $b) (local.get $c))
            (i32.add (local.get $sc) (local.get $c))
            (i32.add (local.get $sh) (local.get $c))))
        (if (i32.lt_u (local.get $j) (local.get $n4))
          (then (call $rf_st4 (local.get $q) (local.get $dt) (local.get $v)))
          (else
            (call $rf_st4n (local.get $q) (local.get $dt) (local.get $v)
              (i32.sub (local.get $n) (local.get $j)))))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next))))
)
