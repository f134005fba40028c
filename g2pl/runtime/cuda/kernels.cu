// Raw CUDA kernels of the CuPy backend: the primitives that dominate a graph superstep.
//
// Written so the same source also runs on a CPU (the test suite executes it sequentially under a
// shim, without a GPU): grid-stride loops only, no __syncthreads, no shared memory, no warp
// intrinsics, atomics only atomicAdd/Min/Max/CAS/Or on 32/64-bit integers.  No #include: NVRTC has
// no host headers.  Every kernel is `extern "C"` with plain C parameter types (the loader and the
// test shim read the signatures from this file).
//
//   seg_chunks_OP_T[_g32|_g64] + seg_rows_OP_T   segmented reduction per CSR row (values per entry,
//                                                 or gathered table[idx[j]]): deterministic, exact
//   seg_chunks_sum_f32w_g32|_g64 + seg_rows_sum_f64  a float32 table's gathered sum, in float64
//   pack_bits + pull_any[_rows]_g32|_g64          bottom-up pull with early exit over a bitmap
//   scatter_min|max_T_g32|_g64                    out[recv[k]] = min/max(out[recv[k]], vals[k])
//   float_bins                                    an exact float64 sum's exponent bins

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

#define GRID_STRIDE(i, n) \
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < (n); i += (i64)blockDim.x * gridDim.x)

// ---- reduction operators: In (the value read), Out (the result and the partials), conv, op
//
// min/max keep NumPy's sequential rule, (a is NaN || a < b) ? a : b: a NaN propagates, and among
// equal values (0.0 and -0.0) the later wins.  The rule is associative, so combining the partials
// of consecutive chunks in order gives np.minimum.reduceat's answer bit for bit.

template <typename T> struct MinOp {
    typedef T In;
    typedef T Out;
    static __device__ __forceinline__ T conv(T v) { return v; }
    static __device__ __forceinline__ T op(T a, T b) { return (a != a || a < b) ? a : b; }
};

template <typename T> struct MaxOp {
    typedef T In;
    typedef T Out;
    static __device__ __forceinline__ T conv(T v) { return v; }
    static __device__ __forceinline__ T op(T a, T b) { return (a != a || a > b) ? a : b; }
};

// sums in U: unsigned for integers, so they wrap as NumPy's do
template <typename T, typename U> struct SumOp {
    typedef T In;
    typedef T Out;
    static __device__ __forceinline__ T conv(T v) { return v; }
    static __device__ __forceinline__ T op(T a, T b) { return (T)((U)a + (U)b); }
};

struct CountOp {
    typedef u8 In;
    typedef i64 Out;
    static __device__ __forceinline__ i64 conv(u8 v) { return v != 0; }
    static __device__ __forceinline__ i64 op(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
};

typedef MinOp<int> MinI32;
typedef MinOp<i64> MinI64;
typedef MinOp<double> MinF64;
typedef MinOp<u8> MinU8;
typedef MaxOp<int> MaxI32;
typedef MaxOp<i64> MaxI64;
typedef MaxOp<double> MaxF64;
typedef MaxOp<u8> MaxU8;
typedef SumOp<int, u32> SumI32;
typedef SumOp<i64, u64> SumI64;
typedef SumOp<double, double> SumF64;

// sums of float32 values in float64, each widened exactly (a narrowed message, `float32(...)`): the
// bits of SumF64 over the widened values, from half the bytes read
struct SumF32AsF64 {
    typedef float In;
    typedef double Out;
    static __device__ __forceinline__ double conv(float v) { return (double)v; }
    static __device__ __forceinline__ double op(double a, double b) { return a + b; }
};

// ---- entry loaders: the value of entry j

template <typename T> struct Direct {
    const T* v;
    __device__ __forceinline__ T operator()(i64 j) const { return v[j]; }
};

template <typename T, typename I> struct Gather {
    const T* table;
    const I* idx;
    __device__ __forceinline__ T operator()(i64 j) const { return table[idx[j]]; }
};

// the largest row r in [r0, n) with indptr[r] <= j (given indptr[r0] <= j < indptr[n])
__device__ __forceinline__ i64 row_of(const i64* indptr, i64 r0, i64 n, i64 j) {
    i64 a = r0, b = n;
    while (b - a > 1) {
        i64 m = a + (b - a) / 2;
        if (indptr[m] <= j) a = m; else b = m;
    }
    return a;
}

// ---- segmented reduction, phase 1: one thread per chunk of `chunk` consecutive entries.
// Rows wholly inside the chunk go to out; the part of a row that began in an earlier chunk goes to
// lead[c], the part of a row that goes on past the chunk to trail[c].  A hub row is thus read by
// many threads, each a fixed amount of work.

template <class Op, class Load>
__device__ __forceinline__ void seg_chunks(const i64* indptr, i64 n, i64 total, i64 chunk, Load load,
                                           typename Op::Out* out, typename Op::Out* lead,
                                           typename Op::Out* trail) {
    typedef typename Op::Out A;
    if (n <= 0) return;
    const i64 first = indptr[0], last = indptr[n];
    const i64 nchunks = (total + chunk - 1) / chunk;
    GRID_STRIDE(c, nchunks) {
        const i64 cs = c * chunk;
        const i64 lo = cs > first ? cs : first;
        i64 hi = cs + chunk;
        if (hi > total) hi = total;
        if (hi > last) hi = last;
        if (lo >= hi) continue;
        i64 r = row_of(indptr, 0, n, lo);
        i64 j = lo;
        for (;;) {
            const i64 rs = indptr[r], re = indptr[r + 1];
            const i64 e = re < hi ? re : hi;
            A acc = Op::conv(load(j));
            for (i64 k = j + 1; k < e; ++k) acc = Op::op(acc, Op::conv(load(k)));
            if (rs < cs) lead[c] = acc;
            else if (re > hi) trail[c] = acc;
            else out[r] = acc;
            j = e;
            if (j >= hi) break;
            ++r;  // the next row with entries: usually the next row, else skip the empty ones
            if (indptr[r + 1] <= j) r = row_of(indptr, r, n, j);
        }
    }
}

// phase 2: one thread per row; empty rows get fill, rows over several chunks combine their trail and
// leads in entry order (so float sums add in the same order on every run)
template <class Op>
__device__ __forceinline__ void seg_rows(const i64* indptr, i64 n, i64 chunk, typename Op::Out* out,
                                         const typename Op::Out* lead, const typename Op::Out* trail,
                                         typename Op::Out fill) {
    typedef typename Op::Out A;
    GRID_STRIDE(r, n) {
        const i64 a = indptr[r], b = indptr[r + 1];
        if (a >= b) {
            out[r] = fill;
            continue;
        }
        const i64 ca = a / chunk, cb = (b - 1) / chunk;
        if (ca == cb) continue;  // written by phase 1
        A acc = trail[ca];
        for (i64 c = ca + 1; c <= cb; ++c) acc = Op::op(acc, lead[c]);
        out[r] = acc;
    }
}

#define SEG_ROWS(NAME, OP, OUT)                                                                          \
    extern "C" __global__ void seg_rows_##NAME(const long long* indptr, long long n, long long chunk,    \
                                               OUT* out, const OUT* lead, const OUT* trail, OUT fill) { \
        seg_rows<OP>(indptr, n, chunk, out, lead, trail, fill);                                          \
    }

#define SEG_DIRECT(NAME, OP, IN, OUT)                                                                    \
    extern "C" __global__ void seg_chunks_##NAME(const long long* indptr, long long n, long long total, \
                                                 long long chunk, const IN* vals, OUT* out, OUT* lead,   \
                                                 OUT* trail) {                                           \
        Direct<IN> load = {vals};                                                                        \
        seg_chunks<OP>(indptr, n, total, chunk, load, out, lead, trail);                                 \
    }

#define SEG_GATHER(NAME, OP, IN, OUT, SFX, IDX)                                                          \
    extern "C" __global__ void seg_chunks_##NAME##_##SFX(const long long* indptr, long long n,          \
                                                         long long total, long long chunk,              \
                                                         const IN* table, const IDX* idx, OUT* out,      \
                                                         OUT* lead, OUT* trail) {                        \
        Gather<IN, IDX> load = {table, idx};                                                             \
        seg_chunks<OP>(indptr, n, total, chunk, load, out, lead, trail);                                 \
    }

#define SEG_ALL(NAME, OP, T)                    \
    SEG_ROWS(NAME, OP, T)                       \
    SEG_DIRECT(NAME, OP, T, T)                  \
    SEG_GATHER(NAME, OP, T, T, g32, int)        \
    SEG_GATHER(NAME, OP, T, T, g64, long long)

SEG_ALL(min_i32, MinI32, int)
SEG_ALL(min_i64, MinI64, long long)
SEG_ALL(min_f64, MinF64, double)
SEG_ALL(min_u8, MinU8, unsigned char)
SEG_ALL(max_i32, MaxI32, int)
SEG_ALL(max_i64, MaxI64, long long)
SEG_ALL(max_f64, MaxF64, double)
SEG_ALL(max_u8, MaxU8, unsigned char)
SEG_ALL(sum_i32, SumI32, int)
SEG_ALL(sum_i64, SumI64, long long)
SEG_ALL(sum_f64, SumF64, double)
SEG_GATHER(sum_f32w, SumF32AsF64, float, double, g32, int)
SEG_GATHER(sum_f32w, SumF32AsF64, float, double, g64, long long)
SEG_ROWS(count, CountOp, long long)
SEG_DIRECT(count, CountOp, unsigned char, long long)

// ---- bottom-up pull (Beamer's BFS step): per row, is any neighbour's bit set?  A row stops at its
// first hit; the frontier is a bitmap (bit i of word i >> 5 is x[i]), 32 times smaller than bools.

extern "C" __global__ void pack_bits(const unsigned char* x, long long n, unsigned int* words) {
    const i64 nw = (n + 31) >> 5;
    GRID_STRIDE(w, nw) {
        const i64 base = w << 5;
        const i64 m = n - base < 32 ? n - base : 32;
        u32 word = 0;
        for (i64 b = 0; b < m; ++b) word |= (u32)(x[base + b] != 0) << b;
        words[w] = word;
    }
}

template <typename I>
__device__ __forceinline__ u8 any_bit(const i64* indptr, const I* nbr, const u32* words, i64 r) {
    const i64 e = indptr[r + 1];
    for (i64 j = indptr[r]; j < e; ++j) {
        const i64 s = (i64)nbr[j];
        if ((words[s >> 5] >> (s & 31)) & 1u) return 1;
    }
    return 0;
}

#define PULL_ANY(SFX, IDX)                                                                             \
    extern "C" __global__ void pull_any_##SFX(const long long* indptr, long long n, const IDX* nbr,   \
                                              const unsigned int* words, unsigned char* out) {         \
        GRID_STRIDE(r, n) out[r] = any_bit<IDX>(indptr, nbr, words, r);                               \
    }                                                                                                  \
    extern "C" __global__ void pull_any_rows_##SFX(const long long* indptr, const long long* rows,     \
                                                   long long m, const IDX* nbr,                        \
                                                   const unsigned int* words, unsigned char* out) {    \
        GRID_STRIDE(i, m) {                                                                            \
            const i64 r = rows[i];                                                                     \
            out[r] = any_bit<IDX>(indptr, nbr, words, r);                                              \
        }                                                                                              \
    }

PULL_ANY(g32, int)
PULL_ANY(g64, long long)

// ---- scatter min/max (the push direction), exact for float64: a compare-and-swap loop on the
// 64-bit pattern (an atomicMin through float32 would round).  A NaN wins and then stays; between
// zeros, -0.0 is the smaller, so the answer does not depend on the order the atomics land in.

template <bool MIN>
__device__ __forceinline__ bool f64_replaces(double v, double cur) {
    if (cur != cur) return false;
    if (v != v) return true;
    if (MIN ? v < cur : v > cur) return true;
    if (v != cur) return false;  // equal: only a zero of the other sign replaces
    const i64 bv = __double_as_longlong(v), bc = __double_as_longlong(cur);
    return MIN ? (bv < 0 && bc >= 0) : (bv >= 0 && bc < 0);
}

template <bool MIN, typename I>
__device__ __forceinline__ void scatter_f64(i64 m, const I* recv, const double* vals, double* out) {
    GRID_STRIDE(k, m) {
        const double v = vals[k];
        u64* addr = (u64*)(out + recv[k]);
        u64 old = *(volatile u64*)addr;
        while (f64_replaces<MIN>(v, __longlong_as_double((i64)old))) {
            const u64 seen = atomicCAS(addr, old, (u64)__double_as_longlong(v));
            if (seen == old) break;
            old = seen;
        }
    }
}

#define SCATTER(SFX, IDX)                                                                              \
    extern "C" __global__ void scatter_min_f64_##SFX(long long m, const IDX* recv, const double* vals, \
                                                     double* out) {                                    \
        scatter_f64<true, IDX>(m, recv, vals, out);                                                    \
    }                                                                                                  \
    extern "C" __global__ void scatter_max_f64_##SFX(long long m, const IDX* recv, const double* vals, \
                                                     double* out) {                                    \
        scatter_f64<false, IDX>(m, recv, vals, out);                                                   \
    }                                                                                                  \
    extern "C" __global__ void scatter_min_i64_##SFX(long long m, const IDX* recv,                     \
                                                     const long long* vals, long long* out) {          \
        GRID_STRIDE(k, m) atomicMin(out + recv[k], vals[k]);                                           \
    }                                                                                                  \
    extern "C" __global__ void scatter_max_i64_##SFX(long long m, const IDX* recv,                     \
                                                     const long long* vals, long long* out) {          \
        GRID_STRIDE(k, m) atomicMax(out + recv[k], vals[k]);                                           \
    }                                                                                                  \
    extern "C" __global__ void scatter_min_i32_##SFX(long long m, const IDX* recv, const int* vals,    \
                                                     int* out) {                                       \
        GRID_STRIDE(k, m) atomicMin(out + recv[k], vals[k]);                                           \
    }                                                                                                  \
    extern "C" __global__ void scatter_max_i32_##SFX(long long m, const IDX* recv, const int* vals,    \
                                                     int* out) {                                       \
        GRID_STRIDE(k, m) atomicMax(out + recv[k], vals[k]);                                           \
    }

SCATTER(g32, int)
SCATTER(g64, long long)

// ---- an exact float64 sum's bins (kernels.float_bins, array_kernels.bins_total): each finite
// value is sign * m * 2^(s - 1074), m < 2^53, 0 <= s < 2046; its m's upper 27 and lower 26 bits, signed,
// are added at bin s and 2046 + s (as two's complement u64, which wraps exactly); NaN, +inf and -inf
// are counted at 4092, 4093 and 4094.  A thread keeps a running pair for the bin of its last value
// and adds it when the bin changes, so values of one exponent (the equal ranks of a vertex array's
// dangling vertices, say) cost a pair of atomics per thread, not per value.

extern "C" __global__ void float_bins(const long long* b, long long n, unsigned long long* bins) {
    int cur = -1;
    i64 acc_hi = 0, acc_lo = 0;
    GRID_STRIDE(i, n) {
        const i64 x = b[i];
        const int e = (int)((x >> 52) & 0x7FF);
        if (e == 0x7FF) {
            atomicAdd(bins + 4092 + ((x & 0xFFFFFFFFFFFFFLL) ? 0 : (x > 0 ? 1 : 2)), 1ULL);
            continue;
        }
        const i64 m = (x & 0xFFFFFFFFFFFFFLL) | ((i64)(e != 0) << 52);
        const int s = e > 0 ? e - 1 : 0;
        if (s != cur) {
            if (cur >= 0) {
                atomicAdd(bins + cur, (u64)acc_hi);
                atomicAdd(bins + 2046 + cur, (u64)acc_lo);
            }
            cur = s;
            acc_hi = 0;
            acc_lo = 0;
        }
        acc_hi += x < 0 ? -(m >> 26) : (m >> 26);
        acc_lo += x < 0 ? -(m & 0x3FFFFFFLL) : (m & 0x3FFFFFFLL);
    }
    if (cur >= 0) {
        atomicAdd(bins + cur, (u64)acc_hi);
        atomicAdd(bins + 2046 + cur, (u64)acc_lo);
    }
}
