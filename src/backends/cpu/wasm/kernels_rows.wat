;; The row kernels (n elements at unit stride): functions spliced into kernels.wat's module by the build
;; (scripts/build_wasm.ts KERNEL_WAT_PATHS, in that order, before every other pass), so
;; they use its codecs and get its dispatch by `$dt` and its inlining. kernels.wat's header
;; states the conventions (addresses, dtypes, association of sums, slack).

(module
  ;; ---------------------------------------------------------------------------------
  ;; Row kernels: n elements at unit stride, per-row constants as parameters.

  ;; res[0] = sum(dy), res[1] = sum(dy * (x - mean)) over n elements.
  (func (export "row_sums")
    (param $dy i32) (param $x i32) (param $n i32) (param $dt i32) (param $mean f64)
    (param $res i32)
    (local $es i32)
    (local $end i32)
    (local $j i32)
    (local $m v128)
    (local $v v128)
    (local $w v128)
    (local $d v128)
    (local $sa v128) (local $sb v128) (local $sc v128) (local $sd v128)
    (local $ta v128) (local $tb v128) (local $tc v128) (local $td v128)
    (local $sum f64)
    (local $dot f64)
    (local $e f64)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then (local.set $mean (f64.mul (local.get $mean) (f64.const 0x1p-112)))))
    (local.set $m (f64x2.splat (local.get $mean)))
    (local.set $end (i32.and (local.get $n) (i32.const -8)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $end)))
        ;; Each vector of dy and of x is loaded (and decoded) once for both of its halves.
        (local.set $v (call $ld4 (local.get $dy) (local.get $dt)))
        (local.set $w (call $ld4 (local.get $x) (local.get $dt)))
        (local.set $d (call $lo (local.get $v)))
        (local.set $sa (f64x2.add (local.get $sa) (local.get $d)))
        (local.set $ta (f64x2.add (local.get $ta)
          (f64x2.mul (local.get $d) (f64x2.sub (call $lo (local.get $w)) (local.get $m)))))
        (local.set $d (call $hi2 (local.get $v) (local.get $dy) (local.get $dt)))
        (local.set $sb (f64x2.add (local.get $sb) (local.get $d)))
        (local.set $tb (f64x2.add (local.get $tb)
          (f64x2.mul (local.get $d)
            (f64x2.sub (call $hi2 (local.get $w) (local.get $x) (local.get $dt)) (local.get $m)))))
        (local.set $v (call $ld4 (i32.add (local.get $dy) (local.get $es)) (local.get $dt)))
        (local.set $w (call $ld4 (i32.add (local.get $x) (local.get $es)) (local.get $dt)))
        (local.set $d (call $lo (local.get $v)))
        (local.set $sc (f64x2.add (local.get $sc) (local.get $d)))
        (local.set $tc (f64x2.add (local.get $tc)
          (f64x2.mul (local.get $d) (f64x2.sub (call $lo (local.get $w)) (local.get $m)))))
        (local.set $d
          (call $hi2 (local.get $v) (i32.add (local.get $dy) (local.get $es)) (local.get $dt)))
        (local.set $sd (f64x2.add (local.get $sd) (local.get $d)))
        (local.set $td (f64x2.add (local.get $td)
          (f64x2.mul (local.get $d)
            (f64x2.sub
              (call $hi2 (local.get $w) (i32.add (local.get $x) (local.get $es)) (local.get $dt))
              (local.get $m)))))
        (local.set $dy (i32.add (local.get $dy) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $x (i32.add (local.get $x) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $next)))
    (local.set $sa
      (f64x2.add
        (f64x2.add (local.get $sa) (local.get $sb))
        (f64x2.add (local.get $sc) (local.get $sd))))
    (local.set $ta
      (f64x2.add
        (f64x2.add (local.get $ta) (local.get $tb))
        (f64x2.add (local.get $tc) (local.get $td))))
    (local.set $sum
      (f64.add (f64x2.extract_lane 0 (local.get $sa)) (f64x2.extract_lane 1 (local.get $sa))))
    (local.set $dot
      (f64.add (f64x2.extract_lane 0 (local.get $ta)) (f64x2.extract_lane 1 (local.get $ta))))
    (local.set $j (i32.const 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (i32.sub (local.get $n) (local.get $end))))
        (local.set $e (call $elem (local.get $dy) (local.get $j) (local.get $dt)))
        (local.set $sum (f64.add (local.get $sum) (local.get $e)))
        (local.set $dot
          (f64.add (local.get $dot)
            (f64.mul (local.get $e)
              (f64.sub (call $elem (local.get $x) (local.get $j) (local.get $dt))
                (local.get $mean)))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $next)))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (local.set $sum (f64.mul (local.get $sum) (f64.const 0x1p112)))
        (local.set $dot (f64.mul (local.get $dot) (f64.const 0x1p224)))))
    (f64.store (local.get $res) (local.get $sum))
    (f64.store offset=8 (local.get $res) (local.get $dot)))

  ;; res[0] = sum(x), res[1] = sum((x - sum / n)^2) over n > 0 elements (two passes).
  (func (export "row_stats") (param $x i32) (param $n i32) (param $dt i32) (param $res i32)
    (local $es i32)
    (local $end i32)
    (local $j i32)
    (local $p i32)
    (local $v v128)
    (local $m v128)
    (local $d v128)
    (local $sa v128) (local $sb v128) (local $sc v128) (local $sd v128)
    (local $sum f64)
    (local $mean f64)
    (local $e f64)
    (local $t f64)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (local.set $end (i32.and (local.get $n) (i32.const -8)))
    (local.set $p (local.get $x))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $end)))
        (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
        (local.set $sa (f64x2.add (local.get $sa) (call $lo (local.get $v))))
        (local.set $sb
          (f64x2.add (local.get $sb) (call $hi2 (local.get $v) (local.get $p) (local.get $dt))))
        (local.set $v (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt)))
        (local.set $sc (f64x2.add (local.get $sc) (call $lo (local.get $v))))
        (local.set $sd
          (f64x2.add (local.get $sd)
            (call $hi2 (local.get $v) (i32.add (local.get $p) (local.get $es)) (local.get $dt))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $next)))
    (local.set $sa
      (f64x2.add
        (f64x2.add (local.get $sa) (local.get $sb))
        (f64x2.add (local.get $sc) (local.get $sd))))
    (local.set $sum
      (f64.add (f64x2.extract_lane 0 (local.get $sa)) (f64x2.extract_lane 1 (local.get $sa))))
    (local.set $j (local.get $end))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $sum
          (f64.add (local.get $sum) (call $elem (local.get $x) (local.get $j) (local.get $dt))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $next)))
    (local.set $mean (f64.div (local.get $sum) (f64.convert_i32_u (local.get $n))))
    (local.set $m (f64x2.splat (local.get $mean)))
    (local.set $sa (v128.const i64x2 0 0))
    (local.set $sb (v128.const i64x2 0 0))
    (local.set $sc (v128.const i64x2 0 0))
    (local.set $sd (v128.const i64x2 0 0))
    (local.set $j (i32.const 0))
    (local.set $p (local.get $x))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $end)))
        (local.set $v (call $ld4 (local.get $p) (local.get $dt)))
        (local.set $d (f64x2.sub (call $lo (local.get $v)) (local.get $m)))
        (local.set $sa (f64x2.add (local.get $sa) (f64x2.mul (local.get $d) (local.get $d))))
        (local.set $d
          (f64x2.sub (call $hi2 (local.get $v) (local.get $p) (local.get $dt)) (local.get $m)))
        (local.set $sb (f64x2.add (local.get $sb) (f64x2.mul (local.get $d) (local.get $d))))
        (local.set $v (call $ld4 (i32.add (local.get $p) (local.get $es)) (local.get $dt)))
        (local.set $d (f64x2.sub (call $lo (local.get $v)) (local.get $m)))
        (local.set $sc (f64x2.add (local.get $sc) (f64x2.mul (local.get $d) (local.get $d))))
        (local.set $d
          (f64x2.sub
            (call $hi2 (local.get $v) (i32.add (local.get $p) (local.get $es))
              (local.get $dt)) (local.get $m)))
        (local.set $sd (f64x2.add (local.get $sd) (f64x2.mul (local.get $d) (local.get $d))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $next)))
    (local.set $sa
      (f64x2.add
        (f64x2.add (local.get $sa) (local.get $sb))
        (f64x2.add (local.get $sc) (local.get $sd))))
    (local.set $e
      (f64.add (f64x2.extract_lane 0 (local.get $sa)) (f64x2.extract_lane 1 (local.get $sa))))
    (local.set $j (local.get $end))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $t
          (f64.sub (call $elem (local.get $x) (local.get $j) (local.get $dt)) (local.get $mean)))
        (local.set $e (f64.add (local.get $e) (f64.mul (local.get $t) (local.get $t))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $next)))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (local.set $sum (f64.mul (local.get $sum) (f64.const 0x1p112)))
        (local.set $e (f64.mul (local.get $e) (f64.const 0x1p224)))))
    (f64.store (local.get $res) (local.get $sum))
    (f64.store offset=8 (local.get $res) (local.get $e)))

  ;; out = x * k0 + k1 (see formulas.ts for the folded constants).
  (func (export "row_normalize")
    (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64)
    (local $es i32)
    (local $j i32)
    (local $v v128) (local $v1 v128)
    (local $a v128) (local $b v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then (local.set $k0 (f64.mul (local.get $k0) (f64.const 0x1p112)))))
    (local.set $a (f64x2.splat (local.get $k0)))
    (local.set $b (f64x2.splat (local.get $k1)))
    ;; float16/bfloat16: two vectors at a time while the second starts before n (one test
    ;; for the exact conversion per pair, see $st4x2), then the last one. float32 goes one
    ;; vector at a time (pairs made its row_normalize slower).
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.or (i32.eqz (local.get $dt))
          (i32.ge_s (i32.add (local.get $j) (i32.const 4)) (local.get $n))))
        (local.set $v (call $ld4 (local.get $x) (local.get $dt)))
        (local.set $v1 (call $ld4 (i32.add (local.get $x) (local.get $es)) (local.get $dt)))
        (call $st4x2 (local.get $out) (i32.add (local.get $out) (local.get $es)) (local.get $dt)
          (call $normK (call $lo (local.get $v)) (local.get $a) (local.get $b))
          (call $normK (call $hi2 (local.get $v) (local.get $x) (local.get $dt))
            (local.get $a) (local.get $b))
          (call $normK (call $lo (local.get $v1)) (local.get $a) (local.get $b))
          (call $normK
            (call $hi2 (local.get $v1) (i32.add (local.get $x) (local.get $es)) (local.get $dt))
            (local.get $a) (local.get $b)))
        (local.set $x (i32.add (local.get $x) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $out (i32.add (local.get $out) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $j) (local.get $n)))
        (local.set $v (call $ld4 (local.get $x) (local.get $dt)))
        (call $st4 (local.get $out) (local.get $dt)
          (call $normK (call $lo (local.get $v)) (local.get $a) (local.get $b))
          (call $normK (call $hi2 (local.get $v) (local.get $x) (local.get $dt))
            (local.get $a) (local.get $b)))
        (local.set $x (i32.add (local.get $x) (local.get $es)))
        (local.set $out (i32.add (local.get $out) (local.get $es)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next))))

  ;; out = dy * k0 + (x * k1 + k2) (see formulas.ts for the folded constants).
  (func $grad (param $d v128) (param $x v128) (param $k0 v128) (param $k1 v128)
    (param $k2 v128) (result v128)
    (f64x2.add (f64x2.mul (local.get $d) (local.get $k0))
      (f64x2.add (f64x2.mul (local.get $x) (local.get $k1)) (local.get $k2))))

  (func (export "row_gradient")
    (param $dy i32) (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64) (param $k2 f64)
    (local $es i32)
    (local $j i32)
    (local $v v128) (local $w v128) (local $v1 v128) (local $w1 v128)
    (local $a v128) (local $b v128) (local $c v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then
        (local.set $k0 (f64.mul (local.get $k0) (f64.const 0x1p112)))
        (local.set $k1 (f64.mul (local.get $k1) (f64.const 0x1p112)))))
    (local.set $a (f64x2.splat (local.get $k0)))
    (local.set $b (f64x2.splat (local.get $k1)))
    (local.set $c (f64x2.splat (local.get $k2)))
    ;; float16/bfloat16: two vectors at a time while the second starts before n (one test
    ;; for the exact conversion per pair, see $st4x2), then the last one. float32 goes one
    ;; vector at a time (pairs made its row_normalize slower).
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.or (i32.eqz (local.get $dt))
          (i32.ge_s (i32.add (local.get $j) (i32.const 4)) (local.get $n))))
        (local.set $v (call $ld4 (local.get $dy) (local.get $dt)))
        (local.set $w (call $ld4 (local.get $x) (local.get $dt)))
        (local.set $v1 (call $ld4 (i32.add (local.get $dy) (local.get $es)) (local.get $dt)))
        (local.set $w1 (call $ld4 (i32.add (local.get $x) (local.get $es)) (local.get $dt)))
        (call $st4x2 (local.get $out) (i32.add (local.get $out) (local.get $es)) (local.get $dt)
          (call $grad (call $lo (local.get $v)) (call $lo (local.get $w))
            (local.get $a) (local.get $b) (local.get $c))
          (call $grad (call $hi2 (local.get $v) (local.get $dy) (local.get $dt))
            (call $hi2 (local.get $w) (local.get $x) (local.get $dt))
            (local.get $a) (local.get $b) (local.get $c))
          (call $grad (call $lo (local.get $v1)) (call $lo (local.get $w1))
            (local.get $a) (local.get $b) (local.get $c))
          (call $grad
            (call $hi2 (local.get $v1) (i32.add (local.get $dy) (local.get $es)) (local.get $dt))
            (call $hi2 (local.get $w1) (i32.add (local.get $x) (local.get $es)) (local.get $dt))
            (local.get $a) (local.get $b) (local.get $c)))
        (local.set $dy (i32.add (local.get $dy) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $x (i32.add (local.get $x) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $out (i32.add (local.get $out) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $j) (local.get $n)))
        (local.set $v (call $ld4 (local.get $dy) (local.get $dt)))
        (local.set $w (call $ld4 (local.get $x) (local.get $dt)))
        (call $st4 (local.get $out) (local.get $dt)
          (call $grad (call $lo (local.get $v)) (call $lo (local.get $w))
            (local.get $a) (local.get $b) (local.get $c))
          (call $grad (call $hi2 (local.get $v) (local.get $dy) (local.get $dt))
            (call $hi2 (local.get $w) (local.get $x) (local.get $dt))
            (local.get $a) (local.get $b) (local.get $c)))
        (local.set $dy (i32.add (local.get $dy) (local.get $es)))
        (local.set $x (i32.add (local.get $x) (local.get $es)))
        (local.set $out (i32.add (local.get $out) (local.get $es)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next))))

  ;; out = dy * k0.
  (func (export "row_scale")
    (param $dy i32) (param $out i32) (param $n i32) (param $dt i32) (param $k0 f64)
    (local $es i32)
    (local $j i32)
    (local $v v128) (local $v1 v128)
    (local $a v128)
    (local.set $es (i32.shl (i32.const 4) (call $shift (local.get $dt))))
    (if (i32.eq (local.get $dt) (i32.const 1))
      (then (local.set $k0 (f64.mul (local.get $k0) (f64.const 0x1p112)))))
    (local.set $a (f64x2.splat (local.get $k0)))
    ;; float16/bfloat16: two vectors at a time while the second starts before n (one test
    ;; for the exact conversion per pair, see $st4x2), then the last one. float32 goes one
    ;; vector at a time (pairs made its row_normalize slower).
    (block $pairs
      (loop $pair
        (br_if $pairs (i32.or (i32.eqz (local.get $dt))
          (i32.ge_s (i32.add (local.get $j) (i32.const 4)) (local.get $n))))
        (local.set $v (call $ld4 (local.get $dy) (local.get $dt)))
        (local.set $v1 (call $ld4 (i32.add (local.get $dy) (local.get $es)) (local.get $dt)))
        (call $st4x2 (local.get $out) (i32.add (local.get $out) (local.get $es)) (local.get $dt)
          (f64x2.mul (call $lo (local.get $v)) (local.get $a))
          (f64x2.mul (call $hi2 (local.get $v) (local.get $dy) (local.get $dt)) (local.get $a))
          (f64x2.mul (call $lo (local.get $v1)) (local.get $a))
          (f64x2.mul
            (call $hi2 (local.get $v1) (i32.add (local.get $dy) (local.get $es)) (local.get $dt))
            (local.get $a)))
        (local.set $dy (i32.add (local.get $dy) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $out (i32.add (local.get $out) (i32.shl (local.get $es) (i32.const 1))))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $pair)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $j) (local.get $n)))
        (local.set $v (call $ld4 (local.get $dy) (local.get $dt)))
        (call $st4 (local.get $out) (local.get $dt)
          (f64x2.mul (call $lo (local.get $v)) (local.get $a))
          (f64x2.mul (call $hi2 (local.get $v) (local.get $dy) (local.get $dt)) (local.get $a)))
        (local.set $dy (i32.add (local.get $dy) (local.get $es)))
        (local.set $out (i32.add (local.get $out) (local.get $es)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $next))))
)
