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

/// dlmalloc on the initial memory's free tail, then on grown pages. A
/// handle: the heap itself is one per guest, so [`start_up`] reaches it.
#[derive(Clone, Copy, Default)]
pub struct InitialHeap;

impl InitialHeap {
    /// The allocator, before its first allocation.
    #[must_use]
    pub const fn new() -> InitialHeap {
        InitialHeap
    }
}

/// Runs a pre-initialised guard's start-up (`init`) so that runs allocate
/// apart from what it builds; [`pre_initialize!`](crate::pre_initialize)
/// calls it. After the start-up, [`RUN_RESERVE`] bytes are grown for runs
/// (zero pages in the snapshot's initial memory, so a run allocates
/// without growing it), and runs allocate there (then from memory grown
/// after it), never from the holes the start-up's freed memory left among
/// what it built; a free of the start-up's memory during a run is not
/// reused.
///
/// Why: a run starts from the snapshot, copy-on-write, and the host resets
/// an instance's memory for the next run by copying back the pages the run
/// wrote, lowest first, as long as they lie in few stretches (wasmtime's
/// `PAGEMAP_SCAN` reset takes 32); past that, it unmaps the rest and the
/// next run faults each of those pages in again. A run allocating in holes
/// spread over megabytes of start-up writes pages all over them; one
/// allocating here writes one stretch. The start-up's memory freed during a
/// run (a buffer it built, grown) is not handed out again in that run: at
/// most the start-up's heap is lost that way, and the next run starts from
/// the snapshot anyway.
///
/// Where [`InitialHeap`] is not the allocator in use, only runs `init`.
pub fn start_up(init: impl FnOnce()) {
    init();
    #[cfg(all(
        target_arch = "wasm32",
        target_os = "unknown",
        not(target_feature = "atomics")
    ))]
    heap::HEAP.seal();
}

/// How much memory [`start_up`] sets aside for runs.
pub const RUN_RESERVE: usize = 256 << 10;

/// The allocator itself: only a `wasm32-unknown-unknown` guest with no
/// threads allocates with it.
#[cfg(all(
    target_arch = "wasm32",
    target_os = "unknown",
    not(target_feature = "atomics")
))]
mod heap {
    use core::alloc::{GlobalAlloc, Layout};
    use core::cell::{Cell, UnsafeCell};

    use super::{InitialHeap, RUN_RESERVE};

    /// How much dlmalloc asks for at a time, at least.
    const GRANULARITY: usize = 4096;

    /// The wasm page: what `memory.grow` counts in.
    const WASM_PAGE: usize = 64 << 10;

    pub(super) static HEAP: Heap = Heap::new();

    /// The heap behind every [`InitialHeap`].
    pub(super) struct Heap {
        /// Every allocation's, until [`start_up`] ends.
        start_up: UnsafeCell<dlmalloc::Dlmalloc<Memory>>,
        /// After [`start_up`]: every allocation's.
        run: UnsafeCell<dlmalloc::Dlmalloc<Memory>>,
        /// After [`start_up`]: the memory it had, `start..end`.
        sealed: Cell<Option<(usize, usize)>>,
    }

    // SAFETY: only where guests are single-threaded (wasm32 with no
    // `+atomics`): no two calls can run at once.
    unsafe impl Sync for Heap {}

    impl Heap {
        const fn new() -> Heap {
            const fn dlmalloc() -> dlmalloc::Dlmalloc<Memory> {
                let mut heap = dlmalloc::Dlmalloc::new_with_allocator(Memory {
                    tail: Cell::new(Tail::Unknown),
                });
                // Ask for memory a host page at a time, not a wasm page: the
                // tail is often less than 64 KiB.
                let _ = heap.set_granularity(GRANULARITY);
                heap
            }
            Heap {
                start_up: UnsafeCell::new(dlmalloc()),
                run: UnsafeCell::new(dlmalloc()),
                sealed: Cell::new(None),
            }
        }

        /// The heap allocations come from now.
        #[allow(
            clippy::mut_from_ref,
            reason = "single-threaded, no reentry (see the Sync impl)"
        )]
        fn current(&self) -> &mut dlmalloc::Dlmalloc<Memory> {
            let heap = if self.sealed.get().is_some() {
                self.run.get()
            } else {
                self.start_up.get()
            };
            // SAFETY: one thread, and no call here reenters another.
            unsafe { &mut *heap }
        }

        /// Whether `ptr` is the start-up's, once it has ended.
        fn is_start_up(&self, ptr: *mut u8) -> bool {
            self.sealed
                .get()
                .is_some_and(|(start, end)| (start..end).contains(&(ptr as usize)))
        }

        /// Ends the start-up: runs allocate from memory grown after all it
        /// holds, [`RUN_RESERVE`] at first.
        pub(super) fn seal(&self) {
            let end = core::arch::wasm32::memory_size(0) * WASM_PAGE;
            let (start, len, _) = grow(RUN_RESERVE);
            // With no room to reserve, runs grow the memory when they need to.
            let tail = if start.is_null() {
                Tail::Gone
            } else {
                Tail::Free {
                    start: start as usize,
                    len,
                }
            };
            // SAFETY: as in `current`.
            unsafe { &*self.run.get() }.allocator().tail.set(tail);
            self.sealed.set(Some((0, end)));
        }
    }

    // SAFETY: each call has the only access to the dlmalloc state (a single
    // thread, as `Heap`'s `Sync`; no reentry: dlmalloc does not allocate), and
    // forwards the layout's size and alignment as dlmalloc's contract asks.
    unsafe impl GlobalAlloc for InitialHeap {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            unsafe { HEAP.current().malloc(layout.size(), layout.align()) }
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            unsafe { HEAP.current().calloc(layout.size(), layout.align()) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            if !HEAP.is_start_up(ptr) {
                unsafe { HEAP.current().free(ptr, layout.size(), layout.align()) }
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if !HEAP.is_start_up(ptr) {
                return unsafe {
                    HEAP.current()
                        .realloc(ptr, layout.size(), layout.align(), new_size)
                };
            }
            // The start-up's memory moves to the run's heap.
            let moved = unsafe { HEAP.current().malloc(new_size, layout.align()) };
            if !moved.is_null() {
                unsafe {
                    core::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                }
            }
            moved
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
                    let free =
                        bounds().and_then(|(start, end)| Some((start, end.checked_sub(start)?)));
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
}
