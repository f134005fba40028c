// Lets CUDA C++ kernels compile with g++ and run sequentially on the CPU (the strict CuPy stand-in's
// RawModule).  The kernels must keep to what a sequential run can honour: grid-stride loops, no
// __syncthreads, no shared memory, no warp intrinsics.  Only the atomics CUDA itself declares are
// declared here, so a kernel using an overload CUDA lacks fails to compile here too.
#pragma once
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

struct g2pl_dim3 {
    unsigned int x, y, z;
};
// one launch at a time (the stand-in calls the launcher under a lock)
static g2pl_dim3 threadIdx, blockIdx, blockDim, gridDim;

#define G2PL_ATOMIC(NAME, T, EXPR) \
    inline T NAME(T* a, T v) { T old = *a; *a = (EXPR); return old; }

G2PL_ATOMIC(atomicAdd, int, old + v)
G2PL_ATOMIC(atomicAdd, unsigned int, old + v)
G2PL_ATOMIC(atomicAdd, unsigned long long, old + v)
G2PL_ATOMIC(atomicMin, int, v < old ? v : old)
G2PL_ATOMIC(atomicMin, unsigned int, v < old ? v : old)
G2PL_ATOMIC(atomicMin, long long, v < old ? v : old)
G2PL_ATOMIC(atomicMin, unsigned long long, v < old ? v : old)
G2PL_ATOMIC(atomicMax, int, v > old ? v : old)
G2PL_ATOMIC(atomicMax, unsigned int, v > old ? v : old)
G2PL_ATOMIC(atomicMax, long long, v > old ? v : old)
G2PL_ATOMIC(atomicMax, unsigned long long, v > old ? v : old)
G2PL_ATOMIC(atomicOr, int, old | v)
G2PL_ATOMIC(atomicOr, unsigned int, old | v)
G2PL_ATOMIC(atomicOr, unsigned long long, old | v)

#define G2PL_CAS(T) \
    inline T atomicCAS(T* a, T cmp, T v) { T old = *a; if (old == cmp) *a = v; return old; }
G2PL_CAS(int)
G2PL_CAS(unsigned int)
G2PL_CAS(unsigned long long)

inline long long __double_as_longlong(double x) {
    long long r;
    std::memcpy(&r, &x, sizeof r);
    return r;
}

inline double __longlong_as_double(long long x) {
    double r;
    std::memcpy(&r, &x, sizeof r);
    return r;
}

// a kernel launch: every thread of every block, one after another
template <typename F> inline void g2pl_launch(unsigned int grid, unsigned int block, F body) {
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    threadIdx = blockIdx = {0, 0, 0};
    for (unsigned int b = 0; b < grid; ++b) {
        blockIdx.x = b;
        for (unsigned int t = 0; t < block; ++t) {
            threadIdx.x = t;
            body();
        }
    }
}
