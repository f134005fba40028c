"""Install the strict CuPy stand-in as `cupy`/`cupyx` for a block, and take it away afterwards.

    with standin() as cupy:   # `import cupy` inside gives the stand-in
        ...

The stand-in's modules are loaded once and reused by every `standin()` block, so device arrays and
classes stay the same objects across blocks (a graph cached on the device in one block is still a
device array in the next).  Outside a block `sys.modules` is as before: a real CuPy that was imported
stays, and one that was not is not shadowed.  `real_cupy()` imports the real CuPy, if installed,
even when this folder is on `sys.path`.

Import this file by path rather than putting this folder on `sys.path`: that would make a plain
`import cupy` find the stand-in everywhere in the process.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

HERE = str(Path(__file__).resolve().parent)
_NAMES = ("cupy", "cupyx")
_loaded: dict[str, ModuleType] = {}


def _ours(name: str) -> bool:
    return name.split(".")[0] in _NAMES


def _take_out() -> dict[str, ModuleType]:
    """Remove every cupy/cupyx module from sys.modules and return them."""
    gone = {k: v for k, v in sys.modules.items() if _ours(k)}
    for k in gone:
        del sys.modules[k]
    return gone


def _file_of(mod: ModuleType) -> str:
    """A module's `__file__`, read without loading it: CuPy 14 loads `cupyx`, `cupy.testing` and
    others lazily (importlib.util.LazyLoader), and any attribute read of such a module once it has
    left `sys.modules` raises ValueError ("substituted in sys.modules during a lazy load")."""
    try:
        return object.__getattribute__(mod, "__dict__").get("__file__") or ""
    except Exception:  # an exotic module object: not the stand-in
        return ""


def _without_here() -> list[str]:
    return [p for p in sys.path if str(Path(p or ".").resolve()) != HERE]


def _load() -> dict[str, ModuleType]:
    """Import the stand-in's modules once (with this folder first on sys.path only meanwhile)."""
    if not _loaded:
        saved, path = _take_out(), sys.path[:]
        try:
            # a stand-in already imported through sys.path is adopted, so the process has one ndarray class
            sys.modules.update({k: v for k, v in saved.items() if _file_of(v).startswith(HERE)})
            sys.path[:] = [HERE, *path]
            importlib.import_module("cupy")
            importlib.import_module("cupyx.scipy.sparse")
            _loaded.update({k: v for k, v in sys.modules.items() if _ours(k)})
            if not getattr(_loaded["cupy"], "_STANDIN", False):
                raise ImportError(f"{HERE}/cupy is not the stand-in")
        finally:
            sys.path[:] = path
            _take_out()
            sys.modules.update(saved)
    return _loaded


@contextmanager
def standin() -> Iterator[ModuleType]:
    """The stand-in as `cupy`, `cupyx` and their submodules for the block; sys.modules restored after."""
    mods = _load()
    saved = _take_out()
    sys.modules.update(mods)
    try:
        yield mods["cupy"]
    finally:
        _take_out()
        sys.modules.update(saved)


def real_cupy() -> tuple[ModuleType, ModuleType] | None:
    """(cupy, cupyx.scipy.sparse) of a real CuPy installation, or None; sys.modules restored after."""
    saved, path = _take_out(), sys.path[:]
    sys.path[:] = _without_here()
    try:
        cupy = importlib.import_module("cupy")
        sparse = importlib.import_module("cupyx.scipy.sparse")
        return None if getattr(cupy, "_STANDIN", False) else (cupy, sparse)
    except ImportError:
        return None
    finally:
        sys.path[:] = path
        real = {k: v for k, v in sys.modules.items() if _ours(k)}
        _take_out()
        sys.modules.update(saved or real)
