"""CUDA C++ sources of the CuPy backend's raw kernels (loaded by g2pl.runtime.raw_kernels)."""
