//! The `memd` binary's allocator: the system's, with every large block
//! offered to the kernel for 2 MiB pages (`madvise(MADV_HUGEPAGE)`).
//!
//! A one-shot `memd search` at 100,000 facts fills about 280 MiB of fresh
//! memory (LanceDB's vector index, the words file, the model's session),
//! and in 4 KiB pages the faults were most of its time. The same binary
//! run under glibc's `glibc.malloc.hugetlb=1` (which does this for every
//! block glibc maps) was faster at the median of 20 paired runs
//! (`farm-bench`; measured in BENCHMARKS.md, in the section on "2 MiB
//! pages and reading ahead"). Done here, it needs no environment
//! variable.
//!
//! Only blocks of [`LARGE`] or more, and only the whole 2 MiB pages inside
//! each, so no other block's memory changes how it is backed. A large
//! block written only in part holds 2 MiB for each huge page it touches.
//! Where the kernel has no huge pages to give (or transparent huge
//! pages are off: `/sys/kernel/mm/transparent_hugepage/enabled` set to
//! `never`, the way to turn this off), `madvise` changes nothing and the
//! block is used as it is; its error is ignored for that reason.
//!
//! The cost: where the kernel compacts memory to find a huge page for an
//! advised block (`defrag` set to `madvise`, Debian's default), a fault
//! can wait for it. One run in 20 took about 0.3 s in the pairing above,
//! each the first after a pause. The daemon's steady state is unchanged:
//! in `memd bench search-path` at 1,000 facts, append → searchable is no
//! slower with the advice than without (same section).

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks this large or larger are advised; 2 MiB pages need a block of
/// at least one page, and the cost of the call (one system call) is
/// nothing beside filling this much memory.
pub const LARGE: usize = 4 << 20;

/// A transparent huge page on x86-64 and most aarch64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// The system allocator, advising large blocks ([module docs](self)).
pub struct Huge;

// SAFETY: every call is forwarded to `System` with its own arguments; the
// advice only touches whole pages inside a block just allocated, which is
// not yet in use by anything, and changes no byte of it.
unsafe impl GlobalAlloc for Huge {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as given.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        advise(p, new_size);
        p
    }
}

/// Advise the whole huge pages inside `[p, p + len)`, when `len` is large.
fn advise(p: *mut u8, len: usize) {
    if p.is_null() || len < LARGE {
        return;
    }
    let (start, end) = inner_pages(p as usize, len);
    if end > start {
        // SAFETY: [start, end) lies inside the block just allocated, and
        // MADV_HUGEPAGE changes how it is backed, never what it holds.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// The whole huge pages inside `len` bytes from `at`: `start..end`, empty
/// when there are none.
fn inner_pages(at: usize, len: usize) -> (usize, usize) {
    let start = at.next_multiple_of(HUGE_PAGE);
    let end = (at + len) / HUGE_PAGE * HUGE_PAGE;
    (start, end.max(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_huge_pages_inside_the_block_are_advised() {
        let m = HUGE_PAGE;
        assert_eq!(inner_pages(m, 2 * m), (m, 3 * m));
        assert_eq!(inner_pages(m + 1, 2 * m), (2 * m, 3 * m));
        assert_eq!(inner_pages(m + 1, m), (2 * m, 2 * m), "none whole: empty");
        assert_eq!(inner_pages(3 * m - 8, m + 16), (3 * m, 4 * m));
        assert_eq!(
            inner_pages(3 * m - 8, m),
            (3 * m, 3 * m),
            "across a boundary: none whole"
        );
    }

    /// A large block from the allocator is usable whole, zeroed when
    /// asked, and keeps its bytes when it grows.
    #[test]
    fn large_blocks_hold_what_is_written_and_grow_with_it() {
        let layout = Layout::from_size_align(LARGE + 12345, 8).unwrap();
        // SAFETY: a non-zero layout; each block is freed with its layout.
        unsafe {
            let p = Huge.alloc_zeroed(layout);
            assert!(!p.is_null());
            let bytes = std::slice::from_raw_parts_mut(p, layout.size());
            assert!(bytes.iter().all(|&b| b == 0));
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = (i % 251) as u8;
            }
            let q = Huge.realloc(p, layout, 3 * LARGE);
            assert!(!q.is_null());
            let grown = std::slice::from_raw_parts(q, layout.size());
            assert!(grown.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            Huge.dealloc(q, Layout::from_size_align(3 * LARGE, 8).unwrap());
        }
    }
}
