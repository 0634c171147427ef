"""engine._memory: glibc's thresholds raised once at import, so that freed arrays are reused."""

from engine import _memory


def test_thresholds_are_set_on_linux_unless_turned_off():
    assert _memory.keep_freed_memory(environ={"ENGINE_KEEP_FREED_MEMORY": "0"}) is False
    assert _memory.keep_freed_memory(environ={}, platform="emscripten") is False
    assert _memory.keep_freed_memory(environ={}, platform="darwin") is False
    import sys

    if sys.platform == "linux":
        import ctypes.util

        glibc = ctypes.util.find_library("c") == "libc.so.6"
        assert _memory.keep_freed_memory(environ={}) is glibc
