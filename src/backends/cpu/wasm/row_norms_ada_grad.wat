;; The adaptive LayerNorm backward kernel of aclnnAdaLayerNormBackward, spliced into kernels.wat's
;; module after row_norms_add_grad.wat (scripts/build_wasm.ts ROWS_WAT_PATHS), whose store helper
;; $alg_st it uses, with row_sums.wat's row helpers ($rf_fold, $rf_mask, $rf_zero); same
;; conventions of addresses, rows, dtype dispatch and column partials as row_norms.wat and
;; row_norms_grad.wat state.
;;
;; Numerics: the formula of the issue-39 reference notes (norm_family.md, aclnnAdaLayerNormBackward),
;; computed in float32 after widening every input; the kernel's own order (ops-nn e5c3fa9
;; norm/ada_layer_norm_grad/op_kernel/ada_layer_norm_grad_*.inl) is not re-derived
;; (docs/norm_family_kernels.md section 13). mean and rstd arrive as float32 (the op_api casts
;; them: aclnn_ada_layer_norm_backward.cpp:441-444). The caller gives 1 + scale formed in float32
;; (as the forward forms it) one row of n (padded to 4) per batch index; row r of the call (global
;; row row0 + r) takes batch row (row0 + r) / seq, as the forward does. Per element:
;; z = (x - mean) * rstd, gs = dy * sc, g = gs * w; the row sums S1 = sum(g), S2 = sum(g * z)
;; (float32 lanes over 256 elements, each run's lanes then added in float64, in a fixed order),
;; m1 = S1 * (1/H), m2 = S2 * (1/H) in float32; gradInput = ((g - m1) - z * m2) * rstd, one
;; rounding. Column partials (per item): pw += gs * z (gradWeight), pb += gs (gradBias). Batch
;; partials (per item, one slot of n per batch the item's rows touch, slot 0 the batch of row0):
;; ps += dy * (z * w + b) (gradScale), psh += dy (gradShift). Each group of sums is taken only
;; when its outputs are wanted (flags), in copies of the rows' loop whose flags are constants.
;; Pass 1 ($adg_sums) loads float16 rows that hold no Inf or NaN (kernels.wat $f16_specials)
;; without the fix, and for float16 keeps g and z in the thread's two scratch rows
;; (kernels.wat $keeps_float16), from which pass 2 computes gradInput (the same bits).
(module
  ;; AdaLayerNorm backward of `rows` rows. Data (dt): dy, x, gi (gradInput) with their row
  ;; strides. Float32 arrays: w, b (n padded to 4), sc (1 + scale, a padded row per batch
  ;; index), mean and rstd per row, the partials pw and pb (zeroed first), ps and psh (`slots`
  ;; padded rows each; a slot is zeroed when its batch's first row comes). flags: 1 gradInput
  ;; (gi written), 2 the column partials (pw, pb), 4 the batch partials (ps, psh); the others
  ;; are neither read nor written. A dispatcher over copies whose flags are constants
  ;; (Binaryen folds them into each copy's loops): every output, and every output but the
  ;; column sums (DiT's adaLN, which has no weight or bias), and any other call. scr: the
  ;; thread's two scratch rows of n padded to 4 float32s, or -1.
  (func (export "ada_ln_bwd")
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $gi i32) (param $gis i32)
    (param $n i32) (param $dt i32) (param $rows i32) (param $flags i32) (param $w i32) (param $b i32)
    (param $sc i32) (param $row0 i32) (param $seq i32) (param $mean i32) (param $rstd i32)
    (param $pw i32) (param $pb i32) (param $ps i32) (param $psh i32) (param $scr i32)
    (if (i32.eq (local.get $flags) (i32.const 7))
      (then
        (call $adg_rows (local.get $dy) (local.get $dys) (local.get $x) (local.get $xs)
          (local.get $gi) (local.get $gis) (local.get $n) (local.get $dt) (local.get $rows)
          (i32.const 7) (local.get $w) (local.get $b) (local.get $sc) (local.get $row0)
          (local.get $seq) (local.get $mean) (local.get $rstd) (local.get $pw) (local.get $pb)
          (local.get $ps) (local.get $psh) (local.get $scr))
        (return)))
    (if (i32.eq (local.get $flags) (i32.const 5))
      (then
        (call $adg_rows (local.get $dy) (local.get $dys) (local.get $x) (local.get $xs)
          (local.get $gi) (local.get $gis) (local.get $n) (local.get $dt) (local.get $rows)
          (i32.const 5) (local.get $w) (local.get $b) (local.get $sc) (local.get $row0)
          (local.get $seq) (local.get $mean) (local.get $rstd) (local.get $pw) (local.get $pb)
          (local.get $ps) (local.get $psh) (local.get $scr))
        (return)))
    (call $adg_rows (local.get $dy) (local.get $dys) (local.get $x) (local.get $xs)
      (local.get $gi) (local.get $gis) (local.get $n) (local.get $dt) (local.get $rows)
      (local.get $flags) (local.get $w) (local.get $b) (local.get $sc) (local.get $row0)
      (local.get $seq) (local.get $mean) (local.get $rstd) (local.get $pw) (local.get $pb)
      (local.get $ps) (local.get $psh) (local.get $scr)))

  ;; ada_ln_bwd's rows with the flags of the call. Pass 1 takes whole vectors, then the last
  ;; one to three elements masked to the row; pass 2 whole vectors, then the tail.
  (func $adg_rows
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $gi i32) (param $gis i32)
    (param $n i32) (param $dt i32) (param $rows i32) (param $flags i32) (param $w i32) (param $b i32)
    (param $sc i32) (param $row0 i32) (param $seq i32) (param $mean i32) (param $rstd i32)
    (param $pw i32) (param $pb i32) (param $ps i32) (param $psh i32) (param $scr i32)
    (local $r i32) (local $es i32) (local $rb i32) (local $j i32) (local $k i32) (local $off i32)
    (local $keep i32) (local $sx i32) (local $ldt i32)
    (local $kb i32) (local $ks i32) (local $first i32) (local $n4 i32) (local $t1 f64) (local $t2 f64)
    (local $inv f32) (local $mm v128) (local $rr v128) (local $m1 v128) (local $m2 v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    ;; Bytes of one padded row of n float32s.
    (local.set $rb (i32.shl (i32.and (i32.add (local.get $n) (i32.const 3)) (i32.const -4))
      (i32.const 2)))
    (local.set $first (i32.div_u (local.get $row0) (local.get $seq)))
    (local.set $inv (f32.div (f32.const 1) (f32.convert_i32_u (local.get $n))))
    ;; The kept terms: g at scr and z one padded row on (gradInput of float16).
    (local.set $keep (i32.and (call $keeps_float16 (local.get $dt))
      (i32.and (i32.ge_s (local.get $scr) (i32.const 0))
        (i32.ne (i32.and (local.get $flags) (i32.const 1)) (i32.const 0)))))
    (local.set $sx (i32.add (local.get $scr) (local.get $rb)))
    (if (i32.and (local.get $flags) (i32.const 2))
      (then
        (call $rf_zero (local.get $pw) (local.get $n))
        (call $rf_zero (local.get $pb) (local.get $n))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $mm (f32x4.splat (f32.load (local.get $mean))))
        (local.set $rr (f32x4.splat (f32.load (local.get $rstd))))
        ;; The batch row's byte offset in sc, and its slot's in ps and psh.
        (local.set $kb
          (i32.mul (i32.div_u (i32.add (local.get $row0) (local.get $r)) (local.get $seq))
            (local.get $rb)))
        (local.set $ks
          (i32.mul
            (i32.sub (i32.div_u (i32.add (local.get $row0) (local.get $r)) (local.get $seq))
              (local.get $first))
            (local.get $rb)))
        (if (i32.and (i32.ne (i32.and (local.get $flags) (i32.const 4)) (i32.const 0))
              (i32.or (i32.eqz (local.get $r))
                (i32.eqz (i32.rem_u (i32.add (local.get $row0) (local.get $r)) (local.get $seq)))))
          (then
            (call $rf_zero (i32.add (local.get $ps) (local.get $ks)) (local.get $n))
            (call $rf_zero (i32.add (local.get $psh) (local.get $ks)) (local.get $n))))
        ;; Pass 1: the row sums and the partials ($adg_sums), float16 rows that hold no Inf
        ;; or NaN (kernels.wat $f16_specials) loaded without the fix, a copy for each code.
        (local.set $ldt (local.get $dt))
        (if (call $f16_rows_finite (local.get $dt) (local.get $dy) (local.get $x) (local.get $n))
          (then (local.set $ldt (i32.const 5))))
        (if (i32.eq (local.get $ldt) (i32.const 5))
          (then
            (local.set $t1 (call $adg_sums (local.get $dy) (local.get $x) (local.get $n)
              (local.get $n4) (local.get $es) (i32.const 5) (local.get $flags) (local.get $mm)
              (local.get $rr) (local.get $sc) (local.get $kb) (local.get $ks) (local.get $w)
              (local.get $b) (local.get $pw) (local.get $pb) (local.get $ps) (local.get $psh)
              (local.get $keep) (local.get $scr) (local.get $sx))))
          (else
            (local.set $t1 (call $adg_sums (local.get $dy) (local.get $x) (local.get $n)
              (local.get $n4) (local.get $es) (local.get $dt) (local.get $flags) (local.get $mm)
              (local.get $rr) (local.get $sc) (local.get $kb) (local.get $ks) (local.get $w)
              (local.get $b) (local.get $pw) (local.get $pb) (local.get $ps) (local.get $psh)
              (local.get $keep) (local.get $scr) (local.get $sx)))))
        (local.set $t2 (global.get $rf_second))
        (if (i32.and (local.get $flags) (i32.const 1))
          (then
            ;; m1 = S1 * (1/H), m2 = S2 * (1/H): float32 sums times the float 1/H.
            (local.set $m1 (f32x4.splat (f32.mul (f32.demote_f64 (local.get $t1)) (local.get $inv))))
            (local.set $m2 (f32x4.splat (f32.mul (f32.demote_f64 (local.get $t2)) (local.get $inv))))
            ;; Pass 2: gradInput from the same float32 z and g, kept or computed again; whole
            ;; vectors, then the tail.
            (local.set $off (i32.const 0))
            (local.set $k (i32.const 0))
            (local.set $j (i32.const 0))
            (if (local.get $keep)
              (then
                (block $doneKept
                  (loop $nextKept
                    (br_if $doneKept (i32.ge_u (local.get $j) (local.get $n)))
                    (call $adg_st (i32.add (local.get $gi) (local.get $off)) (local.get $dt)
                      (v128.load (i32.add (local.get $scr) (local.get $k)))
                      (v128.load (i32.add (local.get $sx) (local.get $k))) (local.get $rr)
                      (local.get $m1) (local.get $m2) (i32.sub (local.get $n) (local.get $j)))
                    (local.set $off (i32.add (local.get $off) (local.get $es)))
                    (local.set $k (i32.add (local.get $k) (i32.const 16)))
                    (local.set $j (i32.add (local.get $j) (i32.const 4)))
                    (br $nextKept)))))
            (block $done2
              (loop $next2
                (br_if $done2 (i32.ge_u (local.get $j) (local.get $n4)))
                (call $adg_write (local.get $dy) (local.get $x) (local.get $gi) (local.get $off)
                  (local.get $k) (local.get $kb) (local.get $dt) (local.get $sc) (local.get $w)
                  (local.get $mm) (local.get $rr) (local.get $m1) (local.get $m2) (i32.const 4))
                (local.set $off (i32.add (local.get $off) (local.get $es)))
                (local.set $k (i32.add (local.get $k) (i32.const 16)))
                (local.set $j (i32.add (local.get $j) (i32.const 4)))
                (br $next2)))
            (if (i32.lt_u (local.get $j) (local.get $n))
              (then
                (call $adg_write (local.get $dy) (local.get $x) (local.get $gi) (local.get $off)
                  (local.get $k) (local.get $kb) (local.get $dt) (local.get $sc) (local.get $w)
                  (local.get $mm) (local.get $rr) (local.get $m1) (local.get $m2)
                  (i32.sub (local.get $n) (local.get $j)))))))
        (local.set $dy (i32.add (local.get $dy) (local.get $dys)))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $gi (i32.add (local.get $gi) (local.get $gis)))
        (local.set $mean (i32.add (local.get $mean) (i32.const 4)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; ada_ln_bwd's pass 1 over one row (dy and x loaded as code ldt; mm and rr its mean and rstd
  ;; splatted; kb and ks its batch row's and slot's byte offsets): S1 returned and S2 in
  ;; $rf_second, the partials the flags want, and with keep each vector's g at gs and z at zs
  ;; (float32, the row's offsets). Whole vectors, then the last one to three elements masked.
  (func $adg_sums
    (param $dy i32) (param $x i32) (param $n i32) (param $n4 i32) (param $es i32) (param $ldt i32)
    (param $flags i32) (param $mm v128) (param $rr v128) (param $sc i32) (param $kb i32)
    (param $ks i32) (param $w i32) (param $b i32) (param $pw i32) (param $pb i32) (param $ps i32)
    (param $psh i32) (param $keep i32) (param $gs i32) (param $zs i32) (result f64)
    (local $j i32) (local $k i32) (local $off i32) (local $t1 f64) (local $t2 f64)
    (local $e v128) (local $z v128) (local $g v128) (local $mask v128) (local $s1 v128)
    (local $s2 v128)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n4)))
        (local.set $e (call $ld4 (i32.add (local.get $dy) (local.get $off)) (local.get $ldt)))
        (local.set $z (f32x4.mul
          (f32x4.sub (call $ld4 (i32.add (local.get $x) (local.get $off)) (local.get $ldt))
            (local.get $mm))
          (local.get $rr)))
        (local.set $g
          (call $adg_terms (local.get $flags) (local.get $e) (local.get $z) (local.get $sc)
            (local.get $kb) (local.get $k) (local.get $ks) (local.get $w) (local.get $b)
            (local.get $pw) (local.get $pb) (local.get $ps) (local.get $psh)))
        (if (local.get $keep)
          (then (call $rf_keep2 (local.get $gs) (local.get $zs) (local.get $k) (local.get $g)
            (local.get $z))))
        (local.set $s1 (f32x4.add (local.get $s1) (local.get $g)))
        (local.set $s2 (f32x4.add (local.get $s2) (f32x4.mul (local.get $g) (local.get $z))))
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
        (local.set $z (v128.and
          (f32x4.mul
            (f32x4.sub (call $ld4 (i32.add (local.get $x) (local.get $off)) (local.get $ldt))
              (local.get $mm))
            (local.get $rr))
          (local.get $mask)))
        (local.set $g
          (call $adg_terms (local.get $flags) (local.get $e) (local.get $z) (local.get $sc)
            (local.get $kb) (local.get $k) (local.get $ks) (local.get $w) (local.get $b)
            (local.get $pw) (local.get $pb) (local.get $ps) (local.get $psh)))
        (if (local.get $keep)
          (then (call $rf_keep2 (local.get $gs) (local.get $zs) (local.get $k) (local.get $g)
            (local.get $z))))
        (local.set $s1 (f32x4.add (local.get $s1) (local.get $g)))
        (local.set $s2 (f32x4.add (local.get $s2) (f32x4.mul (local.get $g) (local.get $z))))))
    (global.set $rf_second (f64.add (local.get $t2)
      (call $rf_fold (local.get $s2) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
        (v128.const i64x2 0 0))))
    (f64.add (local.get $t1)
      (call $rf_fold (local.get $s1) (v128.const i64x2 0 0) (v128.const i64x2 0 0)
        (v128.const i64x2 0 0))))

  ;; Pass 1's terms of one vector (column byte k, the batch row's byte offset kb in sc, its
  ;; slot's ks): gs = e * sc and g = gs * w, returned for the row sums, and the partials as the
  ;; flags want them: pw += gs * z, pb += gs; ps += e * (z * w + b), psh += e.
  (func $adg_terms
    (param $flags i32) (param $e v128) (param $z v128) (param $sc i32) (param $kb i32)
    (param $k i32) (param $ks i32) (param $w i32) (param $b i32) (param $pw i32) (param $pb i32)
    (param $ps i32) (param $psh i32) (result v128)
    (local $gs v128) (local $g v128)
    (local.set $gs
      (f32x4.mul (local.get $e)
        (v128.load (i32.add (local.get $sc) (i32.add (local.get $kb) (local.get $k))))))
    (local.set $g (f32x4.mul (local.get $gs) (v128.load (i32.add (local.get $w) (local.get $k)))))
    (if (i32.and (local.get $flags) (i32.const 2))
      (then
        (call $adg_acc (i32.add (local.get $pw) (local.get $k))
          (f32x4.mul (local.get $gs) (local.get $z)))
        (call $adg_acc (i32.add (local.get $pb) (local.get $k)) (local.get $gs))))
    (if (i32.and (local.get $flags) (i32.const 4))
      (then
        (call $adg_acc (i32.add (local.get $ps) (i32.add (local.get $ks) (local.get $k)))
          (f32x4.mul (local.get $e)
            (f32x4.add (f32x4.mul (local.get $z) (v128.load (i32.add (local.get $w) (local.get $k))))
              (v128.load (i32.add (local.get $b) (local.get $k))))))
        (call $adg_acc (i32.add (local.get $psh) (i32.add (local.get $ks) (local.get $k)))
          (local.get $e))))
    (local.get $g))

  ;; Pass 2's gradInput of one vector, ((g - m1) - z * m2) * rstd, its first min(left, 4)
  ;; lanes stored.
  (func $adg_write
    (param $dy i32) (param $x i32) (param $gi i32) (param $off i32) (param $k i32) (param $kb i32)
    (param $dt i32) (param $sc i32) (param $w i32) (param $mm v128) (param $rr v128)
    (param $m1 v128) (param $m2 v128) (param $left i32)
    (local $z v128) (local $g v128)
    (local.set $z
      (f32x4.mul
        (f32x4.sub (call $ld4 (i32.add (local.get $x) (local.get $off)) (local.get $dt))
          (local.get $mm))
        (local.get $rr)))
    (local.set $g
      (f32x4.mul
        (f32x4.mul (call $ld4 (i32.add (local.get $dy) (local.get $off)) (local.get $dt))
          (v128.load (i32.add (local.get $sc) (i32.add (local.get $kb) (local.get $k)))))
        (v128.load (i32.add (local.get $w) (local.get $k)))))
    (call $adg_st (i32.add (local.get $gi) (local.get $off)) (local.get $dt) (local.get $g)
      (local.get $z) (local.get $rr) (local.get $m1) (local.get $m2) (local.get $left)))

  ;; gradInput of one vector from its g and z, ((g - m1) - z * m2) * rstd, its first
  ;; min(left, 4) lanes stored at p as dt.
  (func $adg_st (param $p i32) (param $dt i32) (param $g v128) (param $z v128) (param $rr v128)
    (param $m1 v128) (param $m2 v128) (param $left i32)
    (call $alg_st (local.get $p) (local.get $dt)
      (f32x4.mul
        (f32x4.sub (f32x4.sub (local.get $g) (local.get $m1))
          (f32x4.mul (local.get $z) (local.get $m2)))
        (local.get $rr))
      (local.get $left)))

  ;; Adds v to the four float32s at p.
  (func $adg_acc (param $p i32) (param $v v128)
    (v128.store (local.get $p) (f32x4.add (v128.load (local.get $p)) (local.get $v))))
)
