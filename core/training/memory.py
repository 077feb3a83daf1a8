"""Keep what a CPU training step builds, so that the next step need not build it again: freed memory and matmul kernels.

glibc's malloc hands large blocks (from 128 KB, rising to at most 32 MB as it learns) to the kernel with mmap,
and gives them back on free; a step allocates and frees hundreds of activation tensors of the batch's shape,
so each one came back as fresh pages, zeroed by the kernel on first touch: ~17,000 minor page faults a
news-small bf16 step on 2 threads, and ~20 ms of its ~80 ms fused loss (measured here, torch 2.13). With
mmap and trimming off, freed blocks are reused by the next step: ~5,500 faults (the rest: the heap growing
to a longer batch's size, and this VM's memory reclaimer paging out kept blocks now and then); the step
ran ~1.05x faster. The heap then keeps its peak size, as a long-running process would anyway.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3          # mallopt parameters, glibc's malloc.h
LARGEST = 1 << 30                                     # 1 GiB: no single tensor of our steps is that big


def keep_freed_memory() -> bool:
    """Tell glibc's malloc to keep blocks up to 1 GiB in the heap. False (and nothing done) off glibc."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):      # not glibc (macOS, musl, Windows): leave the allocator be
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, LARGEST)) and bool(mallopt(M_TRIM_THRESHOLD, 2 * LARGEST))


# oneDNN (torch's bf16 matmuls on a CPU) builds a kernel for each matmul shape and keeps 1,024 of them. Our batches
# come in ~150 (B, S, T) shapes an epoch, the same ones every epoch, and each shape needs ~25 kernels (forward
# and backward): the default cache thrashes and nearly every step builds its kernels afresh. Measured here (d_model
# 384, bf16, 2 threads, 50 shapes, third pass): 1.07 s a step with 16,384 kernels kept, 1.20 s with the default;
# building every kernel afresh (capacity 0) made a step 1.4x slower. Peak memory did not grow.
KERNEL_CACHE = 16384
KERNEL_CACHE_VARIABLES = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY",     # oneDNN's own primitive cache
                          "LRU_CACHE_CAPACITY")                  # ideep's (torch's oneDNN wrapper), same default


def keep_matmul_kernels(capacity: int = KERNEL_CACHE) -> None:
    """Let oneDNN keep `capacity` matmul kernels, unless the user set it. Call before the first matmul: oneDNN reads
    the variable once."""
    for name in KERNEL_CACHE_VARIABLES:
        os.environ.setdefault(name, str(capacity))
