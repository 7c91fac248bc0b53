//! The guest's allocator: dlmalloc, as Rust's standard library uses in
//! wasm, but starting in the memory the module already has.
//!
//! The standard allocator grows the linear memory for its very first byte,
//! though the module starts with free pages after its stack and data. A
//! grow is cheap for the guest and not for the host: pages beyond a
//! memory's initial size are made accessible when it grows and
//! inaccessible again when the instance is recycled for the next run (two
//! `mprotect`s and a TLB shootdown per run), which was most of a fresh
//! run's first event. This allocator hands dlmalloc the free tail of the
//! initial memory (from the linker's `__heap_base` to the end) first and
//! grows the memory only when that is used up, so a run whose events fit in
//! the tail never grows.
//!
//! [`hook!`](crate::hook) installs it as the global allocator with the
//! `initial-heap` feature (on by default); turn the feature off to keep the
//! standard one, or to install your own. Only for `wasm32-unknown-unknown`:
//! on the WASI targets the standard allocator is wasi-libc's `malloc`, which
//! wasi-libc itself uses and which manages the memory past `__heap_base`
//! too, so a second allocator there would share the tail with it. Guests are
//! single-threaded: in a build with wasm threads (`+atomics`) it is not
//! installed.

#[cfg(all(
    target_arch = "wasm32",
    target_os = "unknown",
    not(target_feature = "atomics")
))]
use core::alloc::{GlobalAlloc, Layout};
use core::cell::{Cell, UnsafeCell};

/// How much dlmalloc asks for at a time, at least.
const GRANULARITY: usize = 4096;

/// The wasm page: what `memory.grow` counts in.
#[cfg(target_arch = "wasm32")]
const WASM_PAGE: usize = 64 << 10;

/// dlmalloc on the initial memory's free tail, then on grown pages.
#[cfg_attr(
    not(all(
        target_arch = "wasm32",
        target_os = "unknown",
        not(target_feature = "atomics")
    )),
    allow(
        dead_code,
        reason = "only wasm32-unknown-unknown guests allocate with it"
    )
)]
pub struct InitialHeap(UnsafeCell<dlmalloc::Dlmalloc<Memory>>);

// SAFETY: only where guests are single-threaded (wasm32 with no
// `+atomics`): no two calls can run at once. Elsewhere the type is not
// `Sync` and cannot be a global allocator.
#[cfg(all(
    target_arch = "wasm32",
    target_os = "unknown",
    not(target_feature = "atomics")
))]
unsafe impl Sync for InitialHeap {}

impl InitialHeap {
    /// The allocator, before its first allocation.
    #[must_use]
    pub const fn new() -> InitialHeap {
        let mut heap = dlmalloc::Dlmalloc::new_with_allocator(Memory {
            tail: Cell::new(Tail::Unknown),
        });
        // Ask for memory a host page at a time, not a wasm page: the tail
        // is often less than 64 KiB.
        let _ = heap.set_granularity(GRANULARITY);
        InitialHeap(UnsafeCell::new(heap))
    }
}

impl Default for InitialHeap {
    fn default() -> InitialHeap {
        InitialHeap::new()
    }
}

// SAFETY: each call has the only access to the dlmalloc state (a single
// thread, as the `Sync` above; no reentry: dlmalloc does not allocate), and
// forwards the layout's size and alignment as dlmalloc's contract asks.
#[cfg(all(
    target_arch = "wasm32",
    target_os = "unknown",
    not(target_feature = "atomics")
))]
unsafe impl GlobalAlloc for InitialHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { (*self.0.get()).malloc(layout.size(), layout.align()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { (*self.0.get()).calloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { (*self.0.get()).free(ptr, layout.size(), layout.align()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe { (*self.0.get()).realloc(ptr, layout.size(), layout.align(), new_size) }
    }
}

/// Where dlmalloc gets its regions: the tail once, then `memory.grow`.
struct Memory {
    tail: Cell<Tail>,
}

/// The free tail of the initial memory.
#[derive(Clone, Copy)]
enum Tail {
    /// Not looked at yet: nothing has grown the memory.
    Unknown,
    /// From `start`, `len` bytes, not handed out yet.
    Free { start: usize, len: usize },
    /// Handed out, or there is none.
    Gone,
}

impl Memory {
    /// The free tail of the initial memory, if it is not handed out yet
    /// and holds `size` bytes. Its bounds are taken at the first request,
    /// before anything grows the memory: taken after a grow they would
    /// reach over the grown pages, which dlmalloc already has.
    fn tail(&self, size: usize) -> Option<(usize, usize)> {
        let (start, len) = match self.tail.get() {
            Tail::Gone => return None,
            Tail::Free { start, len } => (start, len),
            Tail::Unknown => {
                let free = bounds().and_then(|(start, end)| Some((start, end.checked_sub(start)?)));
                let Some((start, len)) = free else {
                    self.tail.set(Tail::Gone);
                    return None;
                };
                self.tail.set(Tail::Free { start, len });
                (start, len)
            }
        };
        if len < size {
            return None;
        }
        self.tail.set(Tail::Gone);
        Some((start, len))
    }
}

// SAFETY: every region handed out is memory nothing else uses: the tail
// past the linker's heap base, once, then pages `memory.grow` just added.
unsafe impl dlmalloc::Allocator for Memory {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        match self.tail(size) {
            Some((start, len)) => (start as *mut u8, len, 0),
            None => grow(size),
        }
    }

    fn remap(&self, _ptr: *mut u8, _old: usize, _new: usize, _can_move: bool) -> *mut u8 {
        core::ptr::null_mut()
    }

    fn free_part(&self, _ptr: *mut u8, _old: usize, _new: usize) -> bool {
        false
    }

    fn free(&self, _ptr: *mut u8, _size: usize) -> bool {
        false
    }

    fn can_release_part(&self, _flags: u32) -> bool {
        false
    }

    fn allocates_zeros(&self) -> bool {
        // Fresh pages and the untouched tail of a fresh instance are zero.
        true
    }

    fn page_size(&self) -> usize {
        // Small, so a tail smaller than a wasm page still serves; `grow`
        // rounds up to whole wasm pages.
        GRANULARITY
    }
}

#[cfg(target_arch = "wasm32")]
fn bounds() -> Option<(usize, usize)> {
    unsafe extern "C" {
        // Where the linker placed the end of the stack and data.
        static __heap_base: u8;
    }
    // wasm-ld aligns it to 16 already; dlmalloc needs 8.
    let start = ((&raw const __heap_base) as usize).checked_next_multiple_of(16)?;
    let end = core::arch::wasm32::memory_size(0).checked_mul(WASM_PAGE)?;
    Some((start, end))
}

#[cfg(not(target_arch = "wasm32"))]
fn bounds() -> Option<(usize, usize)> {
    None
}

#[cfg(target_arch = "wasm32")]
fn grow(size: usize) -> (*mut u8, usize, u32) {
    let pages = size.div_ceil(WASM_PAGE);
    let previous = core::arch::wasm32::memory_grow(0, pages);
    match (
        previous.checked_mul(WASM_PAGE),
        pages.checked_mul(WASM_PAGE),
    ) {
        (Some(base), Some(len)) if previous != usize::MAX => (base as *mut u8, len, 0),
        _ => (core::ptr::null_mut(), 0, 0),
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn grow(_size: usize) -> (*mut u8, usize, u32) {
    (core::ptr::null_mut(), 0, 0)
}
