;; GroupNorm's per-(n, c) rows in one call per work item (src/backends/cpu/kernels/
;; channel_units.ts drives them): `units` rows of `inner` elements, consecutive rows of a tensor
;; `*us` bytes apart, each row with its own results or its own constants, computed as one call
;; per row of channel_norms.wat's rows kernels computes it (the same bits). A call from
;; JavaScript per row cost more than a small row's work: GroupNorm [4,16,8,8] made 128 of them.
;; Spliced after channel_norms.wat, whose kernels these loop over.
(module
  ;; Per row u: (sum, m2) as float64 at out + 16u.
  (func (export "bn_stats_units")
    (param $x i32) (param $xus i32) (param $inner i32) (param $dt i32) (param $units i32)
    (param $out i32)
    (local $u i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $u) (local.get $units)))
        (call $bn_stats_rows_at
          (i32.add (local.get $x) (i32.mul (local.get $u) (local.get $xus)))
          (i32.const 0) (local.get $inner) (local.get $dt) (i32.const 1)
          (i32.add (local.get $out) (i32.shl (local.get $u) (i32.const 4))))
        (local.set $u (i32.add (local.get $u) (i32.const 1)))
        (br $next))))

  ;; Per row u, with the float64 mean at means + 8u: (sum(dy), sum(dy * (x - mean))) as
  ;; float64 at out + 16u.
  (func (export "bn_sums_units")
    (param $dy i32) (param $dyus i32) (param $x i32) (param $xus i32) (param $inner i32)
    (param $dt i32) (param $units i32) (param $means i32) (param $out i32)
    (local $u i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $u) (local.get $units)))
        (call $bn_sums_rows_at
          (i32.add (local.get $dy) (i32.mul (local.get $u) (local.get $dyus))) (i32.const 0)
          (i32.add (local.get $x) (i32.mul (local.get $u) (local.get $xus))) (i32.const 0)
          (local.get $inner) (local.get $dt) (i32.const 1)
          (f64.load (i32.add (local.get $means) (i32.shl (local.get $u) (i32.const 3))))
          (i32.add (local.get $out) (i32.shl (local.get $u) (i32.const 4))))
        (local.set $u (i32.add (local.get $u) (i32.const 1)))
        (br $next))))

  ;; A write of kind `op` (channel_norms.wat $bn_write_rows) over the rows, row u with its four
  ;; float64 constants at k + 32u.
  (func $bn_write_units
    (param $op i32) (param $dy i32) (param $dyus i32) (param $x i32) (param $xus i32)
    (param $o i32) (param $ous i32) (param $inner i32) (param $dt i32) (param $units i32)
    (param $k i32)
    (local $u i32) (local $kp i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $u) (local.get $units)))
        (local.set $kp (i32.add (local.get $k) (i32.shl (local.get $u) (i32.const 5))))
        (call $bn_write_rows (local.get $op)
          (i32.add (local.get $dy) (i32.mul (local.get $u) (local.get $dyus))) (i32.const 0)
          (i32.add (local.get $x) (i32.mul (local.get $u) (local.get $xus))) (i32.const 0)
          (i32.add (local.get $o) (i32.mul (local.get $u) (local.get $ous))) (i32.const 0)
          (local.get $inner) (local.get $dt) (i32.const 1)
          (f64.load (local.get $kp)) (f64.load offset=8 (local.get $kp))
          (f64.load offset=16 (local.get $kp)) (f64.load offset=24 (local.get $kp)))
        (local.set $u (i32.add (local.get $u) (i32.const 1)))
        (br $next))))

  ;; The normalize write of the rows (constants k0, k1, k2 of row u at k + 32u).
  (func (export "bn_norm_units")
    (param $x i32) (param $xus i32) (param $o i32) (param $ous i32) (param $inner i32)
    (param $dt i32) (param $units i32) (param $k i32)
    (call $bn_write_units (i32.const 0) (local.get $x) (local.get $xus) (local.get $x)
      (local.get $xus) (local.get $o) (local.get $ous) (local.get $inner) (local.get $dt)
      (local.get $units) (local.get $k)))

  ;; The gradient write of the rows (constants k0 .. k3 of row u at k + 32u).
  (func (export "bn_grad_units")
    (param $dy i32) (param $dyus i32) (param $x i32) (param $xus i32) (param $o i32)
    (param $ous i32) (param $inner i32) (param $dt i32) (param $units i32) (param $k i32)
    (call $bn_write_units (i32.const 1) (local.get $dy) (local.get $dyus) (local.get $x)
      (local.get $xus) (local.get $o) (local.get $ous) (local.get $inner) (local.get $dt)
      (local.get $units) (local.get $k)))

  ;; The swish write of the rows (constants k0 .. k3 of row u at k + 32u, k3 = -swishScale).
  (func (export "bn_swish_units")
    (param $x i32) (param $xus i32) (param $o i32) (param $ous i32) (param $inner i32)
    (param $dt i32) (param $units i32) (param $k i32)
    (call $bn_write_units (i32.const 3) (local.get $x) (local.get $xus) (local.get $x)
      (local.get $xus) (local.get $o) (local.get $ous) (local.get $inner) (local.get $dt)
      (local.get $units) (local.get $k)))

  ;; The scale write of the rows (constant k0 of row u at k + 32u).
  (func (export "bn_scale_units")
    (param $dy i32) (param $dyus i32) (param $o i32) (param $ous i32) (param $inner i32)
    (param $dt i32) (param $units i32) (param $k i32)
    (call $bn_write_units (i32.const 2) (local.get $dy) (local.get $dyus) (local.get $dy)
      (local.get $dyus) (local.get $o) (local.get $ous) (local.get $inner) (local.get $dt)
      (local.get $units) (local.get $k)))
)
