;; The WASI preview 1 functions the Go runtime imports, answered without any
;; capability: a clock that only counts its own readings, no arguments or environment, output discarded, randomness from a
;; fixed-seed xorshift. Used as the component's `wasi_snapshot_preview1`
;; adapter instead of wasmtime's, so the guard imports no WASI at all and the
;; Go runtime's start-up never calls back into Go (wasmtime's adapter
;; allocates its state through the module's `cabi_realloc`, which would
;; re-enter the Go runtime before it is initialised).
(module
  (import "env" "memory" (memory 0))
  (global $seed (mut i64) (i64.const 0x9e3779b97f4a7c15))

  (func (export "sched_yield") (result i32) (i32.const 0))
  (func (export "proc_exit") (param i32) (unreachable))

  (func (export "args_sizes_get") (param $argc i32) (param $size i32) (result i32)
    (i32.store (local.get $argc) (i32.const 0))
    (i32.store (local.get $size) (i32.const 0))
    (i32.const 0))
  (func (export "args_get") (param i32 i32) (result i32) (i32.const 0))
  (func (export "environ_sizes_get") (param $count i32) (param $size i32) (result i32)
    (i32.store (local.get $count) (i32.const 0))
    (i32.store (local.get $size) (i32.const 0))
    (i32.const 0))
  (func (export "environ_get") (param i32 i32) (result i32) (i32.const 0))

  ;; Go's runtime refuses a clock that reads zero: this one starts at 1 ns
  ;; and moves 1 µs per reading, knowing nothing of the host's time.
  (global $now (mut i64) (i64.const 1))
  (func (export "clock_time_get") (param i32 i64) (param $time i32) (result i32)
    (i64.store (local.get $time) (global.get $now))
    (global.set $now (i64.add (global.get $now) (i64.const 1000)))
    (i32.const 0))

  ;; Every byte written counts as written, and goes nowhere.
  (func (export "fd_write") (param i32) (param $iovs i32) (param $count i32) (param $written i32) (result i32)
    (local $total i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $count)))
        (local.set $total
          (i32.add (local.get $total) (i32.load offset=4 (local.get $iovs))))
        (local.set $iovs (i32.add (local.get $iovs) (i32.const 8)))
        (local.set $count (i32.sub (local.get $count) (i32.const 1)))
        (br $next)))
    (i32.store (local.get $written) (local.get $total))
    (i32.const 0))

  (func (export "random_get") (param $buf i32) (param $len i32) (result i32)
    (local $x i64)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $len)))
        (local.set $x (global.get $seed))
        (local.set $x (i64.xor (local.get $x) (i64.shl (local.get $x) (i64.const 13))))
        (local.set $x (i64.xor (local.get $x) (i64.shr_u (local.get $x) (i64.const 7))))
        (local.set $x (i64.xor (local.get $x) (i64.shl (local.get $x) (i64.const 17))))
        (global.set $seed (local.get $x))
        (i32.store8 (local.get $buf) (i32.wrap_i64 (local.get $x)))
        (local.set $buf (i32.add (local.get $buf) (i32.const 1)))
        (local.set $len (i32.sub (local.get $len) (i32.const 1)))
        (br $next)))
    (i32.const 0))

  ;; Nothing to wait for: "not supported" (ENOSYS).
  (func (export "poll_oneoff") (param i32 i32 i32 i32) (result i32) (i32.const 52))
)
