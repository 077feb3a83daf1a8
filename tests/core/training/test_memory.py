"""keep_freed_memory: glibc's malloc told to keep freed blocks, and a quiet no-op where there is no glibc;
keep_matmul_kernels: oneDNN's kernel caches raised unless the user set them.

(Whether the kernel then spares the page faults is the kernel's business: this machine's memory reclaimer
pages kept blocks out now and then, so a test counting faults would flake. scripts/bench measures it.)
"""
import ctypes
import os
import platform

import pytest

from core.training import memory


class FakeLibc:
    def __init__(self):
        self.calls = []

    def mallopt(self, param, value):
        self.calls.append((param, value))
        return 1


def test_it_turns_off_mmap_for_blocks_below_a_gibibyte_and_trimming_below_two(monkeypatch):
    libc = FakeLibc()
    monkeypatch.setattr(ctypes, "CDLL", lambda name: libc)
    assert memory.keep_freed_memory() is True
    assert libc.calls == [(memory.M_MMAP_THRESHOLD, 1 << 30), (memory.M_TRIM_THRESHOLD, 2 << 30)]


def test_without_glibc_it_does_nothing_and_says_so(monkeypatch):
    def no_libc(name):
        raise OSError("no such library")
    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert memory.keep_freed_memory() is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="needs glibc's malloc")
def test_the_real_glibc_accepts_both_settings():
    assert memory.keep_freed_memory() is True


def test_it_raises_the_kernel_caches_unless_the_user_set_them(monkeypatch):
    monkeypatch.setattr(os, "environ", {"LRU_CACHE_CAPACITY": "7"})   # a copy: the real environment is left alone
    memory.keep_matmul_kernels()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == str(memory.KERNEL_CACHE)
    assert os.environ["LRU_CACHE_CAPACITY"] == "7"
