"""`cupy.RawModule` / `cupy.RawKernel` of the stand-in: the CUDA C++ source runs on the CPU.

The same source a GPU compiles with NVRTC is compiled here with g++ under `cuda_shim.h` (CUDA's
qualifiers defined away, `blockIdx`/`threadIdx`/... as globals, the atomics done sequentially), with a
generated `extern "C"` launcher per kernel that runs every thread of every block one after another.
The shared library is cached in the temp folder, keyed by a hash of the source, the shim and this
file.  Kernels are read from the preprocessed source: `extern "C" __global__ void name(params)`.

Strict as the rest of the stand-in: launches take CuPy's `kernel((grid,), (block,), args)`; a host
`numpy.ndarray` argument raises TypeError as CuPy does, and so does anything CuPy would pass with a
silently wrong meaning (a Python scalar whose width the kernel does not take, an array of another
dtype than the parameter points to, a non-contiguous array, a wrong number of arguments).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as _np

SHIM = Path(__file__).resolve().parents[1] / "cuda_shim.h"
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)')
_PARAM = re.compile(r"^(.*?[\s*])(\w+)$")
_CTYPES = {"char": _np.int8, "signed char": _np.int8, "unsigned char": _np.uint8, "short": _np.int16,
           "unsigned short": _np.uint16, "int": _np.int32, "unsigned int": _np.uint32, "unsigned": _np.uint32,
           "long long": _np.int64, "long long int": _np.int64, "unsigned long long": _np.uint64,
           "unsigned long long int": _np.uint64, "float": _np.float32, "double": _np.float64, "bool": _np.bool_}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict"}
_MAX_BLOCK = 1024
_lock = threading.Lock()  # the shim's thread indices are globals: one launch at a time
_libs: dict[str, ctypes.CDLL] = {}


class _Param:
    """One kernel parameter: its C type as written, and the NumPy dtype it holds or points to."""

    def __init__(self, text: str) -> None:
        m = _PARAM.match(" ".join(text.split()))
        if m is None:
            raise NotImplementedError(f"kernel parameter {text!r}: no name")
        self.ctype = m.group(1).strip()
        self.pointer = self.ctype.count("*")
        base = " ".join(w for w in self.ctype.replace("*", " ").split() if w not in _QUALIFIERS)
        if base not in _CTYPES or self.pointer > 1:
            raise NotImplementedError(f"kernel parameter {text!r}: type {base!r} is not supported here")
        self.dtype = _np.dtype(_CTYPES[base])


def _gxx(args: list[str], **kw: Any) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["g++", *args], capture_output=True, text=True, **kw)
    except FileNotFoundError:
        raise RuntimeError("the stand-in runs CUDA kernels on the CPU through g++, which is not installed "
                           "(apt-get install g++)") from None


def _signatures(code: str, defines: list[str]) -> dict[str, list[_Param]]:
    """Kernel name -> parameters, from the source after macro expansion (g++ -E; the source has no
    #include, as NVRTC needs)."""
    r = _gxx(["-E", "-P", "-x", "c++", "-std=c++17", *defines, "-"], input=code)
    if r.returncode:
        raise RuntimeError(f"preprocessing the kernel source failed:\n{r.stderr}")
    sigs = {}
    for name, params in _KERNEL.findall(r.stdout):
        ps = [p.strip() for p in params.split(",") if p.strip()]
        sigs[name] = [_Param(p) for p in ps if p != "void"]
    return sigs


def _launchers(sigs: dict[str, list[_Param]]) -> str:
    out = []
    for name, params in sigs.items():
        args = ", ".join(f"*({p.ctype}*)a[{i}]" for i, p in enumerate(params))
        out.append(f'extern "C" void g2pl_launch_{name}(unsigned int grid, unsigned int block, void** a) {{\n'
                   f"    g2pl_launch(grid, block, [&] {{ {name}({args}); }});\n}}\n")
    return "".join(out)


def _build(code: str, defines: list[str]) -> tuple[ctypes.CDLL, dict[str, list[_Param]]]:
    """The shared library of `code` (built once, cached on disk) and its kernels' parameters."""
    sigs = _signatures(code, defines)
    key = hashlib.sha256("\0".join([code, SHIM.read_text(), Path(__file__).read_text(), *defines])
                         .encode()).hexdigest()[:24]
    lib = _libs.get(key)
    if lib is None:
        folder = Path(tempfile.gettempdir()) / f"g2pl-strict-cupy-{os.getuid()}"
        folder.mkdir(exist_ok=True)
        so = folder / f"{key}.so"
        if not so.exists():
            src = folder / f"{key}.{os.getpid()}.cpp"
            src.write_text(f'#include "cuda_shim.h"\n{code}\n{_launchers(sigs)}')
            tmp = folder / f"{key}.{os.getpid()}.so"
            r = _gxx(["-O2", "-std=c++17", "-shared", "-fPIC", "-x", "c++", f"-I{SHIM.parent}", *defines,
                      "-o", str(tmp), str(src)])
            if r.returncode:
                raise RuntimeError(f"compiling the kernels for the CPU failed:\n{r.stderr}")
            os.replace(tmp, so)  # atomic: processes building the same library at once both succeed
            src.unlink()
        lib = _libs[key] = ctypes.CDLL(str(so))
    return lib, sigs


def _dim(d: Any, what: str) -> int:
    """CuPy's grid/block: a tuple of 1-3 ints.  Only 1-D launches run here."""
    if not isinstance(d, tuple) or not 1 <= len(d) <= 3 or not all(isinstance(v, (int, _np.integer)) for v in d):
        raise TypeError(f"{what} must be a tuple of 1 to 3 ints, not {d!r}")
    if any(int(v) != 1 for v in d[1:]):
        raise NotImplementedError(f"the stand-in runs 1-D launches only ({what} {d!r})")
    x = int(d[0])
    if x < 1 or (what == "block" and x > _MAX_BLOCK) or x >= 2**31:
        raise ValueError(f"invalid {what} dimension {x} (CUDA_ERROR_INVALID_VALUE)")
    return x


class RawKernel:
    """A kernel of a RawModule; calling it launches it: `kernel((grid,), (block,), (arg, ...))`."""

    def __init__(self, code: str, name: str, options: tuple = (), backend: str = "nvrtc", **kw: Any) -> None:
        mod = RawModule(code=code, options=options, backend=backend)
        self.code, self.name = code, name
        self._fn, self._params = mod._function(name)

    @classmethod
    def _from(cls, code: str, name: str, fn: Any, params: list[_Param]) -> RawKernel:
        k = object.__new__(cls)
        k.code, k.name, k._fn, k._params = code, name, fn, params
        return k

    def __call__(self, grid: tuple, block: tuple, args: tuple, *, shared_mem: int = 0, stream: Any = None,
                 enable_cooperative_groups: bool = False) -> None:
        from . import ndarray

        g, b = _dim(grid, "grid"), _dim(block, "block")
        if shared_mem:
            raise NotImplementedError("the stand-in runs kernels without shared memory")
        args = tuple(args)
        if len(args) != len(self._params):
            raise TypeError(f"{self.name} takes {len(self._params)} arguments, {len(args)} given")
        values = []
        for i, (x, p) in enumerate(zip(args, self._params)):
            where = f"{self.name} argument {i} ({p.ctype})"
            if isinstance(x, ndarray):
                if not p.pointer:
                    raise TypeError(f"{where}: a device array where the kernel takes a value")
                if x.dtype != p.dtype:
                    raise TypeError(f"{where}: a {x.dtype} array where the kernel points to {p.dtype}")
                if not x._a.flags.c_contiguous:
                    raise ValueError(f"{where}: a non-contiguous array (the kernel reads it densely)")
                values.append(ctypes.c_void_p(x._a.ctypes.data))
            elif isinstance(x, _np.generic):
                if p.pointer or x.dtype != p.dtype:
                    raise TypeError(f"{where}: a {x.dtype} scalar (pass the parameter's own NumPy type)")
                values.append(_np.ctypeslib.as_ctypes_type(p.dtype)(x.item()))
            else:  # host arrays as CuPy refuses them; Python scalars have no width a kernel can check
                raise TypeError(f"Unsupported type {type(x)}")
        ptrs = (ctypes.c_void_p * max(len(values), 1))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        with _lock:
            self._fn(ctypes.c_uint(g), ctypes.c_uint(b), ptrs)


class RawModule:
    """CUDA C++ source compiled for the CPU; `get_function(name)` gives its `extern "C"` kernels."""

    def __init__(self, code: str | None = None, *, path: str | None = None, options: tuple = (),
                 backend: str = "nvrtc", translate_cucomplex: bool = False, log_stream: Any = None,
                 name_expressions: Any = None, jitify: bool = False) -> None:
        if (code is None) == (path is None):
            raise TypeError("One of `code` and `path` must be given")
        if path is not None:
            raise NotImplementedError("the stand-in compiles source code only (a cubin cannot run on the CPU)")
        if name_expressions or jitify:
            raise NotImplementedError("the stand-in takes extern \"C\" kernels only")
        self.code, self.options = code, tuple(options)
        self._defines = [o for o in self.options if o.startswith("-D")]
        self._lib: ctypes.CDLL | None = None
        self._sigs: dict[str, list[_Param]] = {}

    def _function(self, name: str) -> tuple[Any, list[_Param]]:
        if self._lib is None:
            self._lib, self._sigs = _build(self.code, self._defines)
        if name not in self._sigs:
            raise RuntimeError(f"CUDA_ERROR_NOT_FOUND: named symbol not found ({name})")
        fn = getattr(self._lib, f"g2pl_launch_{name}")
        fn.restype = None
        fn.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p]
        return fn, self._sigs[name]

    def get_function(self, name: str) -> RawKernel:
        fn, params = self._function(name)
        return RawKernel._from(self.code, name, fn, params)
