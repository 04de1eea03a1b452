;; bench:float16's "library float16 no test" row (bench/float16_floor.ts): the library
;; (src/backends/cpu/wasm/kernels.wat) with its $inexact, the test that sends a vector to the
;; exact conversion when a lane is on a tie, subnormal, overflowing or not finite, replaced
;; by one that never fires (Binaryen folds the test and its branch away). Every lane takes
;; the cheap path ($near), so the results are wrong for those lanes: this only measures what
;; the test costs, an upper bound on what any cheaper test could save. The build puts it in
;; place of kernels.wat's $inexact (overrideFunctions).
(module
  (func $inexact (param $dt i32) (param $w v128) (result v128)
    (v128.const i64x2 0 0))
)
