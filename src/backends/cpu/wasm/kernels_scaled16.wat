;; The scaled float16 path's predicates and the redo tests of kernels.wat's dispatcher: functions spliced into kernels.wat's module by the build
;; (scripts/build_wasm.ts KERNEL_WAT_PATHS, in that order, before every other pass), so
;; they use its codecs and get its dispatch by `$dt` and its inlining. kernels.wat's header
;; states the conventions (addresses, dtypes, association of sums, slack).

(module
  ;; ---------------------------------------------------------------------------------
  ;; Scaled float16 (dt 1)
  ;;
  ;; The exact float16 decode ($ld4, dt 3) costs a float32 multiply and four integer
  ;; operations for Inf/NaN per vector, which made float16 sums 1.6x as slow as bfloat16
  ;; (row_stats 0.89 against 0.57 ns per element, one thread). Without them the lanes hold the
  ;; value times 2^-112, and since every kernel is a chain of float64 additions,
  ;; subtractions and multiplications, scaling its inputs by powers of two scales each
  ;; rounded result by the same power, bit for bit, as long as no value leaves the normal
  ;; float64 range. So for dt 1 the kernels scale what meets the decoded values (means and
  ;; accumulators by 2^-112, dot-product accumulators by 2^-224; write constants by 2^112,
  ;; which makes x * k the same product as before) and scale the sums back at the end.
  ;; The dispatcher (scripts/build_wasm.ts) takes this path when `$<kernel>__scaled16` holds:
  ;; - means and accumulators are 0 or at least 2^-200 in magnitude (and finite): with the
  ;;   decoded values multiples of 2^-136, every difference, product and sum then stays a
  ;;   multiple of 2^-500 (squares of differences from a computed mean, of 2^-440): normal
  ;;   float64, where scaling is exact (the means callers pass come from float32, float16
  ;;   or bfloat16 tensors, or from the data: 0 or at least 2^-149);
  ;; - write constants are below 2^900 in magnitude or not finite, so they scale up exactly;
  ;; - (writes) no float16 input of the call is Inf or NaN (exponent 31, which this decode
  ;;   leaves finite); the vectors past the end of a block are not checked, as nothing
  ;;   reads back what they produce.
  ;; Otherwise it runs the exact path (dt 3). The reductions check their inputs after the
  ;; kernel instead: when `$<kernel>__redo16` finds an Inf or NaN, the call runs again on
  ;; the exact path, which rewrites everything the first run wrote (pix_sums, which adds to
  ;; its accumulators, first takes back the copy its predicate kept). The data is then in
  ;; cache, whereas a check before the kernel reads a block from memory that the kernel
  ;; then reads again, without its arithmetic to hide the wait. The writes keep the check
  ;; before (they may write in place, so they could not run again). A check folded into the
  ;; kernels' loops (a running maximum of the decoded lanes) cost more than it saved. The
  ;; figures of these choices are in bench/RESULTS.md ("Why the constants are what they are").
  ;; The scaled path is 10-25% faster per element than the exact one (bench/RESULTS.md).

  ;; Whether the n float16 elements at byte address p hold no Inf or NaN: the largest
  ;; magnitude bits, 32 elements per step in two chains (half the cost of 8 per step), then
  ;; 8, then one at a time.
  (func $finite16 (param $p i32) (param $n i32) (result i32)
    (local $end i32)
    (local $max v128)
    (local $max1 v128)
    (local $mask v128)
    (local.set $mask (v128.const i32x4 0x7fff7fff 0x7fff7fff 0x7fff7fff 0x7fff7fff))
    (local.set $end
      (i32.add (local.get $p) (i32.shl (i32.and (local.get $n) (i32.const -32)) (i32.const 1))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $max
          (i16x8.max_u
            (i16x8.max_u (local.get $max)
              (v128.and (v128.load (local.get $p)) (local.get $mask)))
            (v128.and (v128.load offset=16 (local.get $p)) (local.get $mask))))
        (local.set $max1
          (i16x8.max_u
            (i16x8.max_u (local.get $max1)
              (v128.and (v128.load offset=32 (local.get $p)) (local.get $mask)))
            (v128.and (v128.load offset=48 (local.get $p)) (local.get $mask))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br $next)))
    (local.set $end
      (i32.add (local.get $end) (i32.shl (i32.and (local.get $n) (i32.const 24)) (i32.const 1))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $max
          (i16x8.max_u (local.get $max) (v128.and (v128.load (local.get $p)) (local.get $mask))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $next)))
    (local.set $end
      (i32.add (local.get $end) (i32.shl (i32.and (local.get $n) (i32.const 7)) (i32.const 1))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (if (i32.eq (i32.and (i32.load16_u (local.get $p)) (i32.const 0x7c00)) (i32.const 0x7c00))
          (then (return (i32.const 0))))
        (local.set $p (i32.add (local.get $p) (i32.const 2)))
        (br $next)))
    (i32.eqz (v128.any_true
      (i16x8.gt_u (i16x8.max_u (local.get $max) (local.get $max1))
        (v128.const i32x4 0x7bff7bff 0x7bff7bff 0x7bff7bff 0x7bff7bff)))))

  ;; Whether a mean or accumulator v scales down by 2^-112 or 2^-224 on the scaled path.
  (func $smallOk (param $v f64) (result i32)
    (i32.or (f64.eq (local.get $v) (f64.const 0))
      (i32.and (f64.ge (f64.abs (local.get $v)) (f64.const 0x1p-200))
        (f64.lt (f64.abs (local.get $v)) (f64.const inf)))))

  ;; Whether the n float64 values at byte address a all pass $smallOk.
  (func $smallOkAll (param $a i32) (param $n i32) (result i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $a) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (if (i32.eqz (call $smallOk (f64.load (local.get $a)))) (then (return (i32.const 0))))
        (local.set $a (i32.add (local.get $a) (i32.const 8)))
        (br $next)))
    (i32.const 1))

  ;; Whether a write constant k scales up by 2^112 exactly (below 2^900, or Inf or NaN).
  (func $bigOk (param $k f64) (result i32)
    (i32.eqz
      (i32.and (f64.ge (f64.abs (local.get $k)) (f64.const 0x1p900))
        (f64.lt (f64.abs (local.get $k)) (f64.const inf)))))

  ;; Whether constant k of the packed pixel constants (count per vector, see the pixel
  ;; writes) passes $bigOk for the cs channels.
  (func $bigOkPacked (param $cst i32) (param $cs i32) (param $count i32) (param $k i32)
    (result i32)
    (local $a i32)
    (local $end i32)
    (local $j i32)
    (local.set $a (i32.add (local.get $cst) (i32.shl (local.get $k) (i32.const 5))))
    (local.set $end
      (i32.add (local.get $a) (i32.mul (i32.shl (local.get $cs) (i32.const 3)) (local.get $count))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (local.set $j (i32.const 0))
        (block $lanes
          (loop $lane
            (br_if $lanes (i32.ge_u (local.get $j) (i32.const 32)))
            (if (i32.eqz (call $bigOk (f64.load (i32.add (local.get $a) (local.get $j)))))
              (then (return (i32.const 0))))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $lane)))
        (local.set $a (i32.add (local.get $a) (i32.shl (local.get $count) (i32.const 5))))
        (br $next)))
    (i32.const 1))

  ;; Multiplies the n float64 values at byte address a (n even) by the power of two f.
  (func $scaleAll (param $a i32) (param $n i32) (param $f f64)
    (local $end i32)
    (local $v v128)
    (local.set $v (f64x2.splat (local.get $f)))
    (local.set $end (i32.add (local.get $a) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (v128.store (local.get $a) (f64x2.mul (v128.load (local.get $a)) (local.get $v)))
        (local.set $a (i32.add (local.get $a) (i32.const 16)))
        (br $next))))

  ;; Multiplies the per-channel arrays of the pixel reductions at acc (sums, dots, means;
  ;; cs entries each) by the power of two f, the dots by f * f.
  (func $scaleMoments (param $acc i32) (param $cs i32) (param $f f64)
    (local $cb i32)
    (local.set $cb (i32.shl (local.get $cs) (i32.const 3)))
    (call $scaleAll (local.get $acc) (local.get $cs) (local.get $f))
    (call $scaleAll (i32.add (local.get $acc) (local.get $cb)) (local.get $cs)
      (f64.mul (local.get $f) (local.get $f)))
    (call $scaleAll (i32.add (local.get $acc) (i32.shl (local.get $cb) (i32.const 1)))
      (local.get $cs) (local.get $f)))

  ;; Multiplies constant k of the packed pixel constants by the power of two f.
  (func $scalePacked (param $cst i32) (param $cs i32) (param $count i32) (param $k i32)
    (param $f f64)
    (local $a i32)
    (local $end i32)
    (local $v v128)
    (local.set $v (f64x2.splat (local.get $f)))
    (local.set $a (i32.add (local.get $cst) (i32.shl (local.get $k) (i32.const 5))))
    (local.set $end
      (i32.add (local.get $a) (i32.mul (i32.shl (local.get $cs) (i32.const 3)) (local.get $count))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (v128.store (local.get $a) (f64x2.mul (v128.load (local.get $a)) (local.get $v)))
        (v128.store offset=16 (local.get $a)
          (f64x2.mul (v128.load offset=16 (local.get $a)) (local.get $v)))
        (local.set $a (i32.add (local.get $a) (i32.shl (local.get $count) (i32.const 5))))
        (br $next))))

  ;; Copies n float64 values (n even) from byte address a to b (disjoint).
  (func $copy64 (param $a i32) (param $b i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $a) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (v128.store (local.get $b) (v128.load (local.get $a)))
        (local.set $a (i32.add (local.get $a) (i32.const 16)))
        (local.set $b (i32.add (local.get $b) (i32.const 16)))
        (br $next))))

  ;; The predicates of the scaled path and the redo tests, one each per kernel with a dt
  ;; (same parameters). The reductions check their float16 inputs for Inf and NaN after the
  ;; kernel ($readRedo): a redo rewrites all they wrote. The writes check them before
  ;; ($inputsFinite), as they may write in place.
  (func $readRedo (param $a i32) (param $b i32) (param $count i32) (result i32)
    (i32.eqz (call $inputsFinite (local.get $a) (local.get $b) (local.get $count))))

  ;; Whether count float16 elements at a and at b hold no Inf or NaN (b = a for one input).
  (func $inputsFinite (param $a i32) (param $b i32) (param $count i32) (result i32)
    (if (result i32) (call $finite16 (local.get $a) (local.get $count))
      (then
        (i32.or (i32.eq (local.get $a) (local.get $b))
          (call $finite16 (local.get $b) (local.get $count))))
      (else (i32.const 0))))

  (func $decode__scaled16 (param $src i32) (param $dst i32) (param $n i32) (param $dt i32)
    (result i32)
    ;; The codec tests read the decoded values themselves: always exact.
    (i32.const 0))

  (func $decode__redo16 (param $src i32) (param $dst i32) (param $n i32) (param $dt i32)
    (result i32)
    (i32.const 0))

  (func $encode__scaled16 (param $src i32) (param $dst i32) (param $n i32) (param $dt i32)
    (param $pairs i32) (result i32)
    ;; Encoding decodes nothing.
    (i32.const 0))

  (func $encode__redo16 (param $src i32) (param $dst i32) (param $n i32) (param $dt i32)
    (param $pairs i32) (result i32)
    (i32.const 0))

  (func $row_sums__scaled16
    (param $dy i32) (param $x i32) (param $n i32) (param $dt i32) (param $mean f64)
    (param $res i32) (result i32)
    (call $smallOk (local.get $mean)))

  (func $row_sums__redo16
    (param $dy i32) (param $x i32) (param $n i32) (param $dt i32) (param $mean f64)
    (param $res i32) (result i32)
    (call $readRedo (local.get $dy) (local.get $x) (local.get $n)))

  (func $row_stats__scaled16 (param $x i32) (param $n i32) (param $dt i32) (param $res i32)
    (result i32)
    (i32.const 1))

  (func $row_stats__redo16 (param $x i32) (param $n i32) (param $dt i32) (param $res i32)
    (result i32)
    (call $readRedo (local.get $x) (local.get $x) (local.get $n)))

  (func $row_normalize__scaled16
    (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64) (result i32)
    (i32.and (call $bigOk (local.get $k0)) (call $finite16 (local.get $x) (local.get $n))))

  (func $row_normalize__redo16
    (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64) (result i32)
    (i32.const 0))

  (func $row_gradient__scaled16
    (param $dy i32) (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64) (param $k2 f64) (result i32)
    (i32.and (i32.and (call $bigOk (local.get $k0)) (call $bigOk (local.get $k1)))
      (call $inputsFinite (local.get $dy) (local.get $x) (local.get $n))))

  (func $row_gradient__redo16
    (param $dy i32) (param $x i32) (param $out i32) (param $n i32) (param $dt i32)
    (param $k0 f64) (param $k1 f64) (param $k2 f64) (result i32)
    (i32.const 0))

  (func $row_scale__scaled16
    (param $dy i32) (param $out i32) (param $n i32) (param $dt i32) (param $k0 f64)
    (result i32)
    (i32.and (call $bigOk (local.get $k0)) (call $finite16 (local.get $dy) (local.get $n))))

  (func $row_scale__redo16
    (param $dy i32) (param $out i32) (param $n i32) (param $dt i32) (param $k0 f64)
    (result i32)
    (i32.const 0))

  ;; pix_sums adds to its sums and dots: when the scaled path is taken, they are copied to
  ;; $sumsCopy (the caller leaves room for five arrays), from where a redo takes them back.
  (func $sumsCopy (param $acc i32) (param $cs i32) (result i32)
    ;; The fourth and fifth per-channel arrays (8 cs bytes each).
    (i32.add (local.get $acc) (i32.mul (local.get $cs) (i32.const 24))))

  (func $pix_sums__scaled16
    (param $dy i32) (param $x i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $acc i32) (result i32)
    (local $cb i32)
    (local.set $cb (i32.shl (local.get $cs) (i32.const 3)))
    (if (i32.eqz
          (i32.and (call $smallOkAll (local.get $acc) (local.get $C))
            (i32.and (call $smallOkAll (i32.add (local.get $acc) (local.get $cb)) (local.get $C))
              (call $smallOkAll (i32.add (local.get $acc) (i32.shl (local.get $cb) (i32.const 1)))
                (local.get $C)))))
      (then (return (i32.const 0))))
    (call $copy64 (local.get $acc) (call $sumsCopy (local.get $acc) (local.get $cs))
      (i32.shl (local.get $cs) (i32.const 1)))
    (i32.const 1))

  (func $pix_sums__redo16
    (param $dy i32) (param $x i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $acc i32) (result i32)
    (if (i32.eqz
          (call $readRedo (local.get $dy) (local.get $x) (i32.mul (local.get $P) (local.get $C))))
      (then (return (i32.const 0))))
    (call $copy64 (call $sumsCopy (local.get $acc) (local.get $cs)) (local.get $acc)
      (i32.shl (local.get $cs) (i32.const 1)))
    (i32.const 1))

  (func $pix_stats__scaled16
    (param $x i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32) (param $acc i32)
    (result i32)
    (i32.const 1))

  (func $pix_stats__redo16
    (param $x i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32) (param $acc i32)
    (result i32)
    (call $readRedo (local.get $x) (local.get $x) (i32.mul (local.get $P) (local.get $C))))

  (func $pix_normalize__scaled16
    (param $x i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $cst i32) (result i32)
    (i32.and
      (call $bigOkPacked (local.get $cst) (local.get $cs) (i32.const 2) (i32.const 0))
      (call $finite16 (local.get $x) (i32.mul (local.get $P) (local.get $C)))))

  (func $pix_normalize__redo16
    (param $x i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $cst i32) (result i32)
    (i32.const 0))

  (func $pix_gradient__scaled16
    (param $dy i32) (param $x i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32)
    (param $dt i32) (param $cst i32) (result i32)
    (i32.and
      (i32.and
        (call $bigOkPacked (local.get $cst) (local.get $cs) (i32.const 3) (i32.const 0))
        (call $bigOkPacked (local.get $cst) (local.get $cs) (i32.const 3) (i32.const 1)))
      (call $inputsFinite (local.get $dy) (local.get $x)
        (i32.mul (local.get $P) (local.get $C)))))

  (func $pix_gradient__redo16
    (param $dy i32) (param $x i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32)
    (param $dt i32) (param $cst i32) (result i32)
    (i32.const 0))

  (func $pix_scale__scaled16
    (param $dy i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $cst i32) (result i32)
    (i32.and
      (call $bigOkPacked (local.get $cst) (local.get $cs) (i32.const 1) (i32.const 0))
      (call $finite16 (local.get $dy) (i32.mul (local.get $P) (local.get $C)))))

  (func $pix_scale__redo16
    (param $dy i32) (param $out i32) (param $P i32) (param $C i32) (param $cs i32) (param $dt i32)
    (param $cst i32) (result i32)
    (i32.const 0))
)
