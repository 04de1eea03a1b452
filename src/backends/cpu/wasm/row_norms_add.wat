;; The fused residual-add LayerNorm kernel of aclnnAddLayerNorm and aclnnDeepNorm, spliced into
;; kernels.wat's module after row_sums.wat (scripts/build_wasm.ts ROWS_WAT_PATHS), whose row
;; helpers ($rf_stats, $rf_st4, $rf_st4n) it uses; same conventions of addresses, rows and
;; dtype dispatch as row_norms.wat states.
;;
;; Numerics (hicann/ops-nn e5c3fa9, docs/norm_family_kernels.md sections 1 and 3): every input
;; is widened to float32 and the sum s = alpha * x1 + x2 (+ bias) is formed in float32 and NOT
;; rounded to the data dtype before the statistics (AddLayerNorm A2: add_layer_norm_kernel.h
;; :284-331, (x1 + x2) + bias; DeepNorm A2: deep_norm.cpp:472-478 gx + alpha * x, 950: arch35/
;; deep_norm.h:199-213 Muls then Add); alpha is 1 for AddLayerNorm (1 * x1 is exact). The
;; optional x output is that sum rounded once to dt (add_layer_norm_kernel.h:785-805). Then
;; LayerNorm's statistics and y exactly as ln_fwd computes them, over the float32 sum.
(module
  ;; Four elements of s = alpha * x1 + x2 (+ the bias row at u with flags & 2, + the float32
  ;; per-column bias at cbk with flags & 4), in float32, from x1 at p and x2 at q (dt).
  (func $aln_sum4
    (param $p i32) (param $q i32) (param $u i32) (param $cbk i32) (param $dt i32) (param $flags i32)
    (param $al v128) (result v128)
    (local $v v128)
    (local.set $v
      (f32x4.add (f32x4.mul (local.get $al) (call $ld4 (local.get $p) (local.get $dt)))
        (call $ld4 (local.get $q) (local.get $dt))))
    (if (i32.and (local.get $flags) (i32.const 2))
      (then (local.set $v (f32x4.add (local.get $v) (call $ld4 (local.get $u) (local.get $dt))))))
    (if (i32.and (local.get $flags) (i32.const 4))
      (then (local.set $v (f32x4.add (local.get $v) (v128.load (local.get $cbk))))))
    (local.get $v))

  ;; y of four elements of s at sp: (s - mean) * rstd * w + b (float32 w, b at wp, bp).
  (func $aln_y4 (param $sp i32) (param $wp i32) (param $bp i32) (param $mm v128) (param $rr v128)
    (result v128)
    (f32x4.add
      (f32x4.mul (f32x4.mul (f32x4.sub (v128.load (local.get $sp)) (local.get $mm)) (local.get $rr))
        (v128.load (local.get $wp)))
      (v128.load (local.get $bp))))

  ;; Pass 1 of add_ln_fwd over the whole vectors of a row (n4 elements): s = alpha * x1 + x2
  ;; (+ bias; $aln_sum4) from x1 at p, x2 at q and the bias row at u (dt), to the float32
  ;; scratch row at s, and with flags bit 1 rounded to dt at t. Called with constant flags for
  ;; the common ones, so that once inlined its tests fold away.
  (func $aln_pass1
    (param $p i32) (param $q i32) (param $u i32) (param $t i32) (param $s i32) (param $cb i32)
    (param $n4 i32) (param $es i32) (param $dt i32) (param $flags i32) (param $al v128)
    (local $j i32) (local $k i32) (local $v v128)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (local.set $v
          (call $aln_sum4 (local.get $p) (local.get $q) (local.get $u)
            (i32.add (local.get $cb) (local.get $k)) (local.get $dt) (local.get $flags)
            (local.get $al)))
        (v128.store (i32.add (local.get $s) (local.get $k)) (local.get $v))
        (if (i32.and (local.get $flags) (i32.const 1))
          (then
            (call $rf_st4 (local.get $t) (local.get $dt) (local.get $v))
            (local.set $t (i32.add (local.get $t) (local.get $es)))))
        (if (i32.and (local.get $flags) (i32.const 2))
          (then (local.set $u (i32.add (local.get $u) (local.get $es)))))
        (local.set $p (i32.add (local.get $p) (local.get $es)))
        (local.set $q (i32.add (local.get $q) (local.get $es)))
        (local.set $k (i32.add (local.get $k) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next))))

  ;; Fused add + LayerNorm forward. Per row: pass 1 forms s in float32 into the scratch row at
  ;; $s (n rounded up to 4 float32s; the caller gives each thread its own) and, with flags bit
  ;; 1, stores s rounded to dt at x; then mean and rstd as ln_fwd takes them ($rf_stats over
  ;; s) and y = (s - mean) * rstd * w + bb, rounded once to dt. Flags: 1 store x; 2 add the
  ;; element-wise bias rows at c (dt); 4 add the per-column float32 bias at cb.
  (func (export "add_ln_fwd")
    (param $a i32) (param $as i32) (param $b i32) (param $bs i32) (param $c i32) (param $cs i32)
    (param $x i32) (param $xs i32) (param $y i32) (param $ys i32) (param $n i32) (param $dt i32)
    (param $rows i32) (param $eps f64) (param $alpha f32) (param $flags i32) (param $s i32)
    (param $w i32) (param $bb i32) (param $cb i32) (param $mean i32) (param $rstd i32)
    (local $r i32) (local $es i32) (local $n4 i32) (local $j i32) (local $p i32) (local $q i32)
    (local $u i32) (local $t i32) (local $k i32) (local $al v128)
    (local $mm v128) (local $rr v128) (local $v v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $al (f32x4.splat (local.get $alpha)))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        ;; Pass 1: s = (alpha * x1 + x2) (+ bias) in float32 lanes, to the scratch row; x. Whole
        ;; vectors in a loop of their own for the flags users pass (none: plain sum; 1: x
        ;; stored; 4 and 5: a column bias too), so that their tests fold away; any other flags
        ;; in a loop that tests them; then the last one to three elements.
        (if (i32.eqz (local.get $flags))
          (then
            (call $aln_pass1 (local.get $a) (local.get $b) (local.get $c) (local.get $x)
              (local.get $s) (local.get $cb) (local.get $n4) (local.get $es) (local.get $dt)
              (i32.const 0) (local.get $al)))
          (else
            (if (i32.eq (local.get $flags) (i32.const 1))
              (then
                (call $aln_pass1 (local.get $a) (local.get $b) (local.get $c) (local.get $x)
                  (local.get $s) (local.get $cb) (local.get $n4) (local.get $es) (local.get $dt)
                  (i32.const 1) (local.get $al)))
              (else
                (if (i32.eq (local.get $flags) (i32.const 5))
                  (then
                    (call $aln_pass1 (local.get $a) (local.get $b) (local.get $c) (local.get $x)
                      (local.get $s) (local.get $cb) (local.get $n4) (local.get $es)
                      (local.get $dt) (i32.const 5) (local.get $al)))
                  (else
                    (if (i32.eq (local.get $flags) (i32.const 4))
                      (then
                        (call $aln_pass1 (local.get $a) (local.get $b) (local.get $c) (local.get $x)
                          (local.get $s) (local.get $cb) (local.get $n4) (local.get $es)
                          (local.get $dt) (i32.const 4) (local.get $al)))
                      (else
                        (call $aln_pass1 (local.get $a) (local.get $b) (local.get $c) (local.get $x)
                          (local.get $s) (local.get $cb) (local.get $n4) (local.get $es)
                          (local.get $dt) (local.get $flags) (local.get $al))))))))))
        ;; Where the loop left off: element n4 of every row array, float32 n4 of the scratch.
        (local.set $j (local.get $n4))
        (local.set $k (i32.shl (local.get $n4) (i32.const 2)))
        (local.set $p (i32.add (local.get $a) (i32.mul (i32.shr_u (local.get $j) (i32.const 2)) (local.get $es))))
        (local.set $q (i32.add (local.get $b) (i32.mul (i32.shr_u (local.get $j) (i32.const 2)) (local.get $es))))
        ;; The last one to three elements (loads of whole vectors, as the loops above; the row's
        ;; padding is the caller's).
        (if (i32.lt_u (local.get $j) (local.get $n))
          (then
            (local.set $u (i32.add (local.get $c) (i32.mul (i32.shr_u (local.get $j) (i32.const 2)) (local.get $es))))
            (local.set $t (i32.add (local.get $x) (i32.mul (i32.shr_u (local.get $j) (i32.const 2)) (local.get $es))))
            (local.set $v
              (call $aln_sum4 (local.get $p) (local.get $q) (local.get $u)
                (i32.add (local.get $cb) (local.get $k)) (local.get $dt) (local.get $flags)
                (local.get $al)))
            (v128.store (i32.add (local.get $s) (local.get $k)) (local.get $v))
            (if (i32.and (local.get $flags) (i32.const 1))
              (then
                (call $rf_st4n (local.get $t) (local.get $dt) (local.get $v)
                  (i32.sub (local.get $n) (local.get $j)))))))
        ;; The statistics of s, as ln_fwd takes them of x (float32 rows: dt 0).
        (call $rf_stats (local.get $s) (local.get $n) (i32.const 0) (local.get $eps) (local.get $mean)
          (local.get $rstd))
        (local.set $mm (v128.load32_splat (local.get $mean)))
        (local.set $rr (v128.load32_splat (local.get $rstd)))
        ;; Pass 2: y from s; 16-bit data in pairs of vectors ($rf_st8), then whole vectors, then
        ;; the last one to three elements.
        (local.set $q (local.get $y))
        (local.set $k (i32.const 0))
        (local.set $j (i32.const 0))
        (if (i32.ne (local.get $dt) (i32.const 0))
          (then
            (block $pairsDone
              (loop $pair
                (br_if $pairsDone (i32.ge_u (i32.add (local.get $j) (i32.const 4)) (local.get $n4)))
                (call $rf_st8 (local.get $q) (local.get $dt)
                  (call $aln_y4 (i32.add (local.get $s) (local.get $k))
                    (i32.add (local.get $w) (local.get $k)) (i32.add (local.get $bb) (local.get $k))
                    (local.get $mm) (local.get $rr))
                  (call $aln_y4 (i32.add (local.get $s) (i32.add (local.get $k) (i32.const 16)))
                    (i32.add (local.get $w) (i32.add (local.get $k) (i32.const 16)))
                    (i32.add (local.get $bb) (i32.add (local.get $k) (i32.const 16)))
                    (local.get $mm) (local.get $rr)))
                (local.set $q (i32.add (local.get $q) (i32.shl (local.get $es) (i32.const 1))))
                (local.set $k (i32.add (local.get $k) (i32.const 32)))
                (local.set $j (i32.add (local.get $j) (i32.const 8)))
                (br $pair)))))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
            (call $rf_st4 (local.get $q) (local.get $dt)
              (call $aln_y4 (i32.add (local.get $s) (local.get $k)) (i32.add (local.get $w) (local.get $k))
                (i32.add (local.get $bb) (local.get $k)) (local.get $mm) (local.get $rr)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $k (i32.add (local.get $k) (i32.const 16)))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $next)))
        (if (i32.lt_u (local.get $j) (local.get $n))
          (then
            (call $rf_st4n (local.get $q) (local.get $dt)
              (call $aln_y4 (i32.add (local.get $s) (local.get $k)) (i32.add (local.get $w) (local.get $k))
                (i32.add (local.get $bb) (local.get $k)) (local.get $mm) (local.get $rr))
              (i32.sub (local.get $n) (local.get $j)))))
        (local.set $a (i32.add (local.get $a) (local.get $as)))
        (local.set $b (i32.add (local.get $b) (local.get $bs)))
        (local.set $c (i32.add (local.get $c) (local.get $cs)))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $y (i32.add (local.get $y) (local.get $ys)))
        (local.set $mean (i32.add (local.get $mean) (i32.const 4)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))
)
