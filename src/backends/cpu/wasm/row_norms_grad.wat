;; The backward row kernels of LayerNorm and RMSNorm: row_norms.wat's conventions (the
;; build splices both files into kernels.wat's module; these use its helpers $rn_fold,
;; $rn_zero and $rn_st4n). Their column partials are this call's own: each kernel zeroes
;; them first, updates them in vectors over the row's first n & ~7 elements and one by one
;; over the rest, and never touches a partial past n (the next work item's may follow).
(module
  ;; LayerNorm backward. Per row, with m = mean[r], rs = rstd[r], e = dy, xh = (x - m) * rs,
  ;; g = e * w: S1 and S2 the eight-chain sums of g and g * xh; with flags & 1, the column
  ;; partials pw += e * xh and pb += e (zeroed first: they are this call's); with flags & 2,
  ;; gi = rs * ((g - S1 / n) - xh * (S2 / n)).
  (func (export "ln_bwd")
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $gi i32)
    (param $gis i32) (param $n i32) (param $dt i32) (param $rows i32) (param $mean i32)
    (param $rstd i32) (param $w i32) (param $pw i32) (param $pb i32) (param $flags i32)
    (local $r i32) (local $es i32) (local $n8 i32) (local $n4 i32) (local $j i32) (local $pf i32)
    (local $p i32) (local $q i32) (local $o i32) (local $wp i32) (local $ap i32) (local $bp i32)
    (local $m f64) (local $rs f64) (local $s f64) (local $t f64) (local $e f64) (local $h f64)
    (local $g f64)
    (local $mm v128) (local $rr v128) (local $v v128) (local $u v128) (local $d v128)
    (local $xh v128) (local $gg v128) (local $aa v128) (local $cc v128)
    (local $sa v128) (local $sb v128) (local $sc v128) (local $sd v128)
    (local $ta v128) (local $tb v128) (local $tc v128) (local $td v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n8 (i32.and (local.get $n) (i32.const -8)))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $pf (i32.and (local.get $flags) (i32.const 1)))
    (if (local.get $pf)
      (then
        (call $rn_zero (local.get $pw) (local.get $n))
        (call $rn_zero (local.get $pb) (local.get $n))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $m (f64.load (local.get $mean)))
        (local.set $rs (f64.load (local.get $rstd)))
        (local.set $mm (f64x2.splat (local.get $m)))
        (local.set $rr (f64x2.splat (local.get $rs)))
        (local.set $sa (v128.const i64x2 0 0))
        (local.set $sb (v128.const i64x2 0 0))
        (local.set $sc (v128.const i64x2 0 0))
        (local.set $sd (v128.const i64x2 0 0))
        (local.set $ta (v128.const i64x2 0 0))
        (local.set $tb (v128.const i64x2 0 0))
        (local.set $tc (v128.const i64x2 0 0))
        (local.set $td (v128.const i64x2 0 0))
        (local.set $p (local.get $dy))
        (local.set $q (local.get $x))
        (local.set $wp (local.get $w))
        (local.set $ap (local.get $pw))
        (local.set $bp (local.get $pb))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n8)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $u (call $ld4 (local.get $q) (local.get $dt)))
            ;; Elements j, j + 1.
            (local.set $d (call $lo (local.get $v)))
            (local.set $xh (f64x2.mul (f64x2.sub (call $lo (local.get $u)) (local.get $mm))
              (local.get $rr)))
            (local.set $gg (f64x2.mul (local.get $d) (v128.load (local.get $wp))))
            (local.set $sa (f64x2.add (local.get $sa) (local.get $gg)))
            (local.set $ta (f64x2.add (local.get $ta) (f64x2.mul (local.get $gg) (local.get $xh))))
            (if (local.get $pf)
              (then
                (v128.store (local.get $ap) (f64x2.add (v128.load (local.get $ap))
                  (f64x2.mul (local.get $d) (local.get $xh))))
                (v128.store (local.get $bp) (f64x2.add (v128.load (local.get $bp)) (local.get $d)))))
            ;; Elements j + 2, j + 3.
            (local.set $d (call $hi2 (local.get $v) (local.get $p) (local.get $dt)))
            (local.set $xh
              (f64x2.mul
                (f64x2.sub (call $hi2 (local.get $u) (local.get $q) (local.get $dt)) (local.get $mm))
                (local.get $rr)))
            (local.set $gg (f64x2.mul (local.get $d) (v128.load offset=16 (local.get $wp))))
            (local.set $sb (f64x2.add (local.get $sb) (local.get $gg)))
            (local.set $tb (f64x2.add (local.get $tb) (f64x2.mul (local.get $gg) (local.get $xh))))
            (if (local.get $pf)
              (then
                (v128.store offset=16 (local.get $ap) (f64x2.add (v128.load offset=16 (local.get $ap))
                  (f64x2.mul (local.get $d) (local.get $xh))))
                (v128.store offset=16 (local.get $bp)
                  (f64x2.add (v128.load offset=16 (local.get $bp)) (local.get $d)))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $u (call $ld4 (local.get $q) (local.get $dt)))
            ;; Elements j + 4, j + 5.
            (local.set $d (call $lo (local.get $v)))
            (local.set $xh (f64x2.mul (f64x2.sub (call $lo (local.get $u)) (local.get $mm))
              (local.get $rr)))
            (local.set $gg (f64x2.mul (local.get $d) (v128.load offset=32 (local.get $wp))))
            (local.set $sc (f64x2.add (local.get $sc) (local.get $gg)))
            (local.set $tc (f64x2.add (local.get $tc) (f64x2.mul (local.get $gg) (local.get $xh))))
            (if (local.get $pf)
              (then
                (v128.store offset=32 (local.get $ap) (f64x2.add (v128.load offset=32 (local.get $ap))
                  (f64x2.mul (local.get $d) (local.get $xh))))
                (v128.store offset=32 (local.get $bp)
                  (f64x2.add (v128.load offset=32 (local.get $bp)) (local.get $d)))))
            ;; Elements j + 6, j + 7.
            (local.set $d (call $hi2 (local.get $v) (local.get $p) (local.get $dt)))
            (local.set $xh
              (f64x2.mul
                (f64x2.sub (call $hi2 (local.get $u) (local.get $q) (local.get $dt)) (local.get $mm))
                (local.get $rr)))
            (local.set $gg (f64x2.mul (local.get $d) (v128.load offset=48 (local.get $wp))))
            (local.set $sd (f64x2.add (local.get $sd) (local.get $gg)))
            (local.set $td (f64x2.add (local.get $td) (f64x2.mul (local.get $gg) (local.get $xh))))
            (if (local.get $pf)
              (then
                (v128.store offset=48 (local.get $ap) (f64x2.add (v128.load offset=48 (local.get $ap))
                  (f64x2.mul (local.get $d) (local.get $xh))))
                (v128.store offset=48 (local.get $bp)
                  (f64x2.add (v128.load offset=48 (local.get $bp)) (local.get $d)))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $wp (i32.add (local.get $wp) (i32.const 64)))
            (local.set $ap (i32.add (local.get $ap) (i32.const 64)))
            (local.set $bp (i32.add (local.get $bp) (i32.const 64)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $next)))
        (local.set $s (call $rn_fold (local.get $sa) (local.get $sb) (local.get $sc) (local.get $sd)))
        (local.set $t (call $rn_fold (local.get $ta) (local.get $tb) (local.get $tc) (local.get $td)))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $e (call $elem (local.get $dy) (local.get $j) (local.get $dt)))
            (local.set $h
              (f64.mul
                (f64.sub (call $elem (local.get $x) (local.get $j) (local.get $dt)) (local.get $m))
                (local.get $rs)))
            (local.set $g (f64.mul (local.get $e) (f64.load (local.get $wp))))
            (local.set $s (f64.add (local.get $s) (local.get $g)))
            (local.set $t (f64.add (local.get $t) (f64.mul (local.get $g) (local.get $h))))
            (if (local.get $pf)
              (then
                (f64.store (local.get $ap)
                  (f64.add (f64.load (local.get $ap)) (f64.mul (local.get $e) (local.get $h))))
                (f64.store (local.get $bp) (f64.add (f64.load (local.get $bp)) (local.get $e)))))
            (local.set $wp (i32.add (local.get $wp) (i32.const 8)))
            (local.set $ap (i32.add (local.get $ap) (i32.const 8)))
            (local.set $bp (i32.add (local.get $bp) (i32.const 8)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $next)))
        (if (i32.and (local.get $flags) (i32.const 2))
          (then
            (local.set $aa (f64x2.splat (f64.div (local.get $s) (f64.convert_i32_u (local.get $n)))))
            (local.set $cc (f64x2.splat (f64.div (local.get $t) (f64.convert_i32_u (local.get $n)))))
            (local.set $p (local.get $dy))
            (local.set $q (local.get $x))
            (local.set $o (local.get $gi))
            (local.set $wp (local.get $w))
            (local.set $j (i32.const 0))
            (block $done
              (loop $next
                (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
                (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
                (local.set $u (call $ld4 (local.get $q) (local.get $dt)))
                (local.set $sa
                  (f64x2.mul (local.get $rr)
                    (f64x2.sub
                      (f64x2.sub
                        (f64x2.mul (call $lo (local.get $v)) (v128.load (local.get $wp)))
                        (local.get $aa))
                      (f64x2.mul
                        (f64x2.mul (f64x2.sub (call $lo (local.get $u)) (local.get $mm))
                          (local.get $rr))
                        (local.get $cc)))))
                (local.set $sb
                  (f64x2.mul (local.get $rr)
                    (f64x2.sub
                      (f64x2.sub
                        (f64x2.mul (call $hi2 (local.get $v) (local.get $p) (local.get $dt))
                          (v128.load offset=16 (local.get $wp)))
                        (local.get $aa))
                      (f64x2.mul
                        (f64x2.mul
                          (f64x2.sub (call $hi2 (local.get $u) (local.get $q) (local.get $dt))
                            (local.get $mm))
                          (local.get $rr))
                        (local.get $cc)))))
                (if (i32.lt_u (local.get $j) (local.get $n4))
                  (then (call $st4 (local.get $o) (local.get $dt) (local.get $sa) (local.get $sb)))
                  (else
                    (call $rn_st4n (local.get $o) (local.get $dt) (local.get $sa) (local.get $sb)
                      (i32.sub (local.get $n) (local.get $j)))))
                (local.set $p (i32.add (local.get $p) (local.get $es)))
                (local.set $q (i32.add (local.get $q) (local.get $es)))
                (local.set $o (i32.add (local.get $o) (local.get $es)))
                (local.set $wp (i32.add (local.get $wp) (i32.const 32)))
                (local.set $j (i32.add (local.get $j) (i32.const 4)))
                (br $next)))))
        (local.set $dy (i32.add (local.get $dy) (local.get $dys)))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $gi (i32.add (local.get $gi) (local.get $gis)))
        (local.set $mean (i32.add (local.get $mean) (i32.const 8)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 8)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  (func $ln_bwd__scaled16
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $gi i32)
    (param $gis i32) (param $n i32) (param $dt i32) (param $rows i32) (param $mean i32)
    (param $rstd i32) (param $w i32) (param $pw i32) (param $pb i32) (param $flags i32)
    (result i32)
    (i32.const 0))

  (func $ln_bwd__redo16
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $gi i32)
    (param $gis i32) (param $n i32) (param $dt i32) (param $rows i32) (param $mean i32)
    (param $rstd i32) (param $w i32) (param $pw i32) (param $pb i32) (param $flags i32)
    (result i32)
    (i32.const 0))

  ;; RMSNorm backward. Per row, with rs = rstd[r] and p = dy * x: S the eight-chain sum of
  ;; p * g; the column partials pg += p * rs (zeroed first); k = rs * rs * rs * S / n;
  ;; dx = rs * dy * g - x * k.
  (func (export "rms_bwd")
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $dx i32)
    (param $dxs i32) (param $n i32) (param $dt i32) (param $rows i32) (param $rstd i32)
    (param $g i32) (param $pg i32)
    (local $r i32) (local $es i32) (local $n8 i32) (local $n4 i32) (local $j i32)
    (local $p i32) (local $q i32) (local $o i32) (local $gp i32) (local $ap i32)
    (local $rs f64) (local $s f64) (local $e f64) (local $k f64)
    (local $v v128) (local $u v128) (local $d v128) (local $rr v128) (local $kk v128)
    (local $sa v128) (local $sb v128) (local $sc v128) (local $sd v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $n8 (i32.and (local.get $n) (i32.const -8)))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (call $rn_zero (local.get $pg) (local.get $n))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $rs (f64.load (local.get $rstd)))
        (local.set $rr (f64x2.splat (local.get $rs)))
        (local.set $sa (v128.const i64x2 0 0))
        (local.set $sb (v128.const i64x2 0 0))
        (local.set $sc (v128.const i64x2 0 0))
        (local.set $sd (v128.const i64x2 0 0))
        (local.set $p (local.get $dy))
        (local.set $q (local.get $x))
        (local.set $gp (local.get $g))
        (local.set $ap (local.get $pg))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n8)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $u (call $ld4 (local.get $q) (local.get $dt)))
            (local.set $d (f64x2.mul (call $lo (local.get $v)) (call $lo (local.get $u))))
            (local.set $sa
              (f64x2.add (local.get $sa) (f64x2.mul (local.get $d) (v128.load (local.get $gp)))))
            (v128.store (local.get $ap)
              (f64x2.add (v128.load (local.get $ap)) (f64x2.mul (local.get $d) (local.get $rr))))
            (local.set $d
              (f64x2.mul (call $hi2 (local.get $v) (local.get $p) (local.get $dt))
                (call $hi2 (local.get $u) (local.get $q) (local.get $dt))))
            (local.set $sb
              (f64x2.add (local.get $sb)
                (f64x2.mul (local.get $d) (v128.load offset=16 (local.get $gp)))))
            (v128.store offset=16 (local.get $ap)
              (f64x2.add (v128.load offset=16 (local.get $ap))
                (f64x2.mul (local.get $d) (local.get $rr))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $u (call $ld4 (local.get $q) (local.get $dt)))
            (local.set $d (f64x2.mul (call $lo (local.get $v)) (call $lo (local.get $u))))
            (local.set $sc
              (f64x2.add (local.get $sc)
                (f64x2.mul (local.get $d) (v128.load offset=32 (local.get $gp)))))
            (v128.store offset=32 (local.get $ap)
              (f64x2.add (v128.load offset=32 (local.get $ap))
                (f64x2.mul (local.get $d) (local.get $rr))))
            (local.set $d
              (f64x2.mul (call $hi2 (local.get $v) (local.get $p) (local.get $dt))
                (call $hi2 (local.get $u) (local.get $q) (local.get $dt))))
            (local.set $sd
              (f64x2.add (local.get $sd)
                (f64x2.mul (local.get $d) (v128.load offset=48 (local.get $gp)))))
            (v128.store offset=48 (local.get $ap)
              (f64x2.add (v128.load offset=48 (local.get $ap))
                (f64x2.mul (local.get $d) (local.get $rr))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $gp (i32.add (local.get $gp) (i32.const 64)))
            (local.set $ap (i32.add (local.get $ap) (i32.const 64)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $next)))
        (local.set $s (call $rn_fold (local.get $sa) (local.get $sb) (local.get $sc) (local.get $sd)))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $e
              (f64.mul (call $elem (local.get $dy) (local.get $j) (local.get $dt))
                (call $elem (local.get $x) (local.get $j) (local.get $dt))))
            (local.set $s (f64.add (local.get $s) (f64.mul (local.get $e) (f64.load (local.get $gp)))))
            (f64.store (local.get $ap)
              (f64.add (f64.load (local.get $ap)) (f64.mul (local.get $e) (local.get $rs))))
            (local.set $gp (i32.add (local.get $gp) (i32.const 8)))
            (local.set $ap (i32.add (local.get $ap) (i32.const 8)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $next)))
        (local.set $k
          (f64.div
            (f64.mul (f64.mul (f64.mul (local.get $rs) (local.get $rs)) (local.get $rs))
              (local.get $s))
            (f64.convert_i32_u (local.get $n))))
        (local.set $kk (f64x2.splat (local.get $k)))
        (local.set $p (local.get $dy))
        (local.set $q (local.get $x))
        (local.set $o (local.get $dx))
        (local.set $gp (local.get $g))
        (local.set $j (i32.const 0))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
            (local.set $u (call $ld4 (local.get $q) (local.get $dt)))
            (local.set $sa
              (f64x2.sub
                (f64x2.mul (f64x2.mul (local.get $rr) (call $lo (local.get $v)))
                  (v128.load (local.get $gp)))
                (f64x2.mul (call $lo (local.get $u)) (local.get $kk))))
            (local.set $sb
              (f64x2.sub
                (f64x2.mul
                  (f64x2.mul (local.get $rr) (call $hi2 (local.get $v) (local.get $p) (local.get $dt)))
                  (v128.load offset=16 (local.get $gp)))
                (f64x2.mul (call $hi2 (local.get $u) (local.get $q) (local.get $dt))
                  (local.get $kk))))
            (if (i32.lt_u (local.get $j) (local.get $n4))
              (then (call $st4 (local.get $o) (local.get $dt) (local.get $sa) (local.get $sb)))
              (else
                (call $rn_st4n (local.get $o) (local.get $dt) (local.get $sa) (local.get $sb)
                  (i32.sub (local.get $n) (local.get $j)))))
            (local.set $p (i32.add (local.get $p) (local.get $es)))
            (local.set $q (i32.add (local.get $q) (local.get $es)))
            (local.set $o (i32.add (local.get $o) (local.get $es)))
            (local.set $gp (i32.add (local.get $gp) (i32.const 32)))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $next)))
        (local.set $dy (i32.add (local.get $dy) (local.get $dys)))
        (local.set $x (i32.add (local.get $x) (local.get $xs)))
        (local.set $dx (i32.add (local.get $dx) (local.get $dxs)))
        (local.set $rstd (i32.add (local.get $rstd) (i32.const 8)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  (func $rms_bwd__scaled16
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $dx i32)
    (param $dxs i32) (param $n i32) (param $dt i32) (param $rows i32) (param $rstd i32)
    (param $g i32) (param $pg i32) (result i32)
    (i32.const 0))

  (func $rms_bwd__redo16
    (param $dy i32) (param $dys i32) (param $x i32) (param $xs i32) (param $dx i32)
    (param $dxs i32) (param $n i32) (param $dt i32) (param $rows i32) (param $rstd i32)
    (param $g i32) (param $pg i32) (result i32)
    (i32.const 0))
)
