;; bench:float16's "library float16 no test" row (bench/float16_floor.ts): the library's
;; $st4x2 (src/backends/cpu/wasm/kernels.wat) without the test that sends a pair of
;; vectors to the exact conversion when a lane is on a tie, subnormal, overflowing or not
;; finite. Every lane takes the cheap path ($near8), so the results are wrong for those
;; lanes: this only measures what the test costs, an upper bound on what any cheaper test
;; could save. The build puts it in place of kernels.wat's $st4x2 (overrideFunctions).
(module
  (func $st4x2 (param $p0 i32) (param $p1 i32) (param $dt i32)
    (param $lo0 v128) (param $hi0 v128) (param $lo1 v128) (param $hi1 v128)
    (local $w0 v128)
    (local $w1 v128)
    (local $r v128)
    (local.set $w0 (call $demote4 (local.get $lo0) (local.get $hi0)))
    (local.set $w1 (call $demote4 (local.get $lo1) (local.get $hi1)))
    (if (i32.eqz (local.get $dt))
      (then
        (v128.store (local.get $p0) (local.get $w0))
        (v128.store (local.get $p1) (local.get $w1))
        (return)))
    (local.set $r (call $near8 (local.get $dt) (local.get $w0) (local.get $w1)))
    (v128.store64_lane 0 (local.get $p0) (local.get $r))
    (v128.store64_lane 1 (local.get $p1) (local.get $r)))
)
