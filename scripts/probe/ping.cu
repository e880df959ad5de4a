// Plain CUDA C++ ping probe: the floor of a host <-> resident-kernel round
// trip through page-locked mapped host memory, with no Rust in the way, so that the
// Rust ring (gpu_kernels::persist) can be compared with the same machine's floor.
//
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o ping ping.cu && ./ping
//
// Variants (one line each: p50/p99/p99.9 in µs over N pings after a warm-up):
//   lane     one block, lane 0 polls a u64 seq (volatile), answers with a volatile
//            store of seq (no fence): the probe the latency targets
//            first assumed ("1.85 µs").
//   fence    as lane, __threadfence_system() before the answer's seq.
//   relsys   as lane, the answer's seq by st.release.sys.
//   pair     warp 0 polls 16-byte [tag, word] pairs (ld.volatile.v2.u64), as the Rust
//            ring does; answer by st.release.sys.
//   grid     132 blocks (1 per SM), block 0 polls, broadcasts through device memory,
//            every block reads `mb` MB of device memory and arrives on an atomic
//            counter; block 0 answers.
// Each on cached and on write-combined request memory.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstring>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1);} } while (0)

enum { LANE = 0, FENCE = 1, RELSYS = 2, PAIR = 3, GRID = 4, WIDE = 5 };

__device__ __forceinline__ unsigned long long ld_vol(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void ld_vol_pair(const unsigned long long* p, unsigned long long& a,
                                            unsigned long long& b) {
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}
__device__ __forceinline__ void st_vol(unsigned long long* p, unsigned long long v) {
    asm volatile("st.volatile.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_rel_sys(unsigned long long* p, unsigned long long v) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_vol_pair(unsigned long long* p, unsigned long long a,
                                            unsigned long long b) {
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" :: "l"(p), "l"(a), "l"(b) : "memory");
}
__device__ __forceinline__ unsigned ld_acq_gpu(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// req: slot of 2 u64 ([seq, word]); resp: [seq, word]. Request seq = round + 1; a request
// word of ~0 stops the kernel.
__global__ void ping(const unsigned long long* req, unsigned long long* resp, int mode,
                     unsigned long long* bcast, unsigned* arrived, const float4* data,
                     size_t data_n, float* sink, int pw, int stagger) {
    __shared__ unsigned long long sh;
    __shared__ volatile unsigned long long seen;
    if (threadIdx.x == 0) seen = 0;
    __syncthreads();
    __shared__ float red[32];
    unsigned blocks = gridDim.x;
    bool b0 = blockIdx.x == 0;
    for (unsigned long long round = 0;; ++round) {
        unsigned long long want = round + 1;
        if (mode == WIDE) {
            // Lanes 0..pw-1 of warp 0 each poll one 16-byte pair of the slot (pair 0 is
            // [seq, word], the others [seq, 0]): a poll reads 16 * pw bytes.
            if (threadIdx.x < 32) {
                unsigned long long t, w = 0;
                for (;;) {
                    if (threadIdx.x < pw) ld_vol_pair(req + 2 * threadIdx.x, t, w); else { t = want; }
                    if (__all_sync(0xffffffff, t == want)) break;
                }
                w = __shfl_sync(0xffffffff, w, 0);
                if (threadIdx.x == 0) sh = w;
            }
        } else if (mode == PAIR || mode == GRID) {
            // `pw` warps poll independently (lane 0 of each loads the pair); the first
            // to see the new tag publishes the word in shared memory.
            if (threadIdx.x < 32 * pw && (threadIdx.x & 31) == 0) {
                const unsigned long long* src = b0 ? req : bcast;
                unsigned long long t, w;
                // Stagger: warp k starts polling k/pw of a bus round trip later, so that
                // the polls sample the slot at evenly spread times.
                long long until = clock64() + (long long)(threadIdx.x / 32) * stagger / pw;
                while (clock64() < until) {}
                for (;;) {
                    if (seen == want) break;
                    ld_vol_pair(src, t, w);
                    if (t == want) { sh = w; __threadfence_block(); seen = want; break; }
                }
            }
        } else if (threadIdx.x == 0) {
            for (;;) {
                if (ld_vol(req) == want) break;
            }
            sh = ld_vol(req + 1);
        }
        __syncthreads();
        unsigned long long w = sh;
        if (mode == GRID && b0 && blocks > 1 && threadIdx.x == 0) st_vol_pair(bcast, want, w);
        if (w == ~0ull) return;
        if (mode == GRID) {
            float acc = 0.f;
            for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < data_n; i += (size_t)blocks * blockDim.x) {
                float4 v = data[i];
                acc += v.x + v.y + v.z + v.w;
            }
            for (int o = 16; o; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
            if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = acc;
            __syncthreads();
            if (threadIdx.x == 0) {
                float s = 0.f;
                for (int i = 0; i < blockDim.x / 32; ++i) s += red[i];
                if (s == 12345.f) *sink = s;  // keeps the reads
                if (!b0) {
                    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(arrived) : "memory");
                } else {
                    unsigned all = (unsigned)want * (blocks - 1);
                    while (ld_acq_gpu(arrived) != all) {}
                }
            }
        }
        if (b0 && threadIdx.x == 0) {
            st_vol(resp + 1, w + 1);
            if (mode == LANE) st_vol(resp, want);
            else if (mode == FENCE) { __threadfence_system(); st_vol(resp, want); }
            else st_rel_sys(resp, want);
        }
        __syncthreads();
    }
}

static double pct(std::vector<double>& v, double p) {
    std::sort(v.begin(), v.end());
    return v[(size_t)((v.size() - 1) * p + 0.5)];
}

static const char* NAMES[] = {"lane", "fence", "relsys", "pair", "grid", "wide"};

static void run(int mode, bool wc, int blocks, int threads, double mb, int n, int pw = 1, int stagger = 0) {
    unsigned long long *req, *resp, *dreq, *dresp;
    CK(cudaHostAlloc(&req, 1024, cudaHostAllocMapped | (wc ? cudaHostAllocWriteCombined : 0)));
    CK(cudaHostAlloc(&resp, 64, cudaHostAllocMapped));
    memset(req, 0, 1024);
    memset(resp, 0, 64);
    CK(cudaHostGetDevicePointer(&dreq, req, 0));
    CK(cudaHostGetDevicePointer(&dresp, resp, 0));
    unsigned long long* bcast;
    unsigned* arrived;
    float* sink;
    CK(cudaMalloc(&bcast, 64));
    CK(cudaMalloc(&arrived, 64));
    CK(cudaMalloc(&sink, 64));
    CK(cudaMemset(bcast, 0, 64));
    CK(cudaMemset(arrived, 0, 64));
    size_t data_n = (size_t)(mb * 1048576.0 / 16.0);
    float4* data = nullptr;
    if (data_n) {
        CK(cudaMalloc(&data, data_n * 16));
        CK(cudaMemset(data, 1, data_n * 16));
    }
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaDeviceSynchronize());
    ping<<<blocks, threads, 0, s>>>(dreq, dresp, mode, bcast, arrived, data, data_n, sink, pw, stagger);
    CK(cudaGetLastError());
    volatile unsigned long long* vreq = req;
    volatile unsigned long long* vresp = resp;
    std::vector<double> lat;
    lat.reserve(n);
    int warm = 2000;
    for (int i = 0; i < warm + n; ++i) {
        unsigned long long seq = i + 1;
        auto t0 = std::chrono::steady_clock::now();
        vreq[1] = (unsigned long long)i;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        for (int j = 1; j < (mode == WIDE ? pw : 1); ++j) vreq[2 * j] = seq;
        vreq[0] = seq;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        unsigned spins = 0;
        while (vresp[0] != seq) {
            if ((++spins & 0xffff) == 0 &&
                std::chrono::steady_clock::now() - t0 > std::chrono::seconds(3)) {
                fprintf(stderr, "%s: no answer to %llu\n", NAMES[mode], seq);
                exit(1);
            }
        }
        auto t1 = std::chrono::steady_clock::now();
        if (vresp[1] != (unsigned long long)i + 1) { fprintf(stderr, "bad answer\n"); exit(1); }
        if (i >= warm) lat.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    unsigned long long seq = warm + n + 1;
    vreq[1] = ~0ull;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (int j = 1; j < (mode == WIDE ? pw : 1); ++j) vreq[2 * j] = seq;
    vreq[0] = seq;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    CK(cudaStreamSynchronize(s));
    printf("%s,%s,%d,%d,%d,%d,%.2f,%.2f,%.2f,%.2f\n", NAMES[mode], wc ? "write-combined" : "cached", blocks,
           threads, pw, stagger, mb, pct(lat, 0.5), pct(lat, 0.99), pct(lat, 0.999));
    fflush(stdout);
    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(req));
    CK(cudaFreeHost(resp));
    CK(cudaFree(bcast));
    CK(cudaFree(arrived));
    CK(cudaFree(sink));
    if (data) CK(cudaFree(data));
}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# device: %s, %d SMs; %d pings per line\n", p.name, p.multiProcessorCount, n);
    printf("mode,requests,blocks,threads,poll_warps,stagger_cycles,mb,p50_us,p99_us,p999_us\n");
    int sms = p.multiProcessorCount;
    for (int pw : {1, 4, 8, 16, 32}) run(WIDE, false, 1, 256, 0, n, pw);
    for (int pw : {1, 32}) run(WIDE, true, 1, 256, 0, n, pw);
    for (int pw : {1, 2, 4}) run(PAIR, false, 1, 512, 0, n, pw, 0);
    for (int wc = 0; wc < 2; ++wc) {
        run(LANE, wc, 1, 32, 0, n);
        run(FENCE, wc, 1, 32, 0, n);
        run(RELSYS, wc, 1, 32, 0, n);
        run(PAIR, wc, 1, 32, 0, n);
        run(GRID, wc, 1, 256, 0, n);
        run(GRID, wc, sms, 256, 0, n);
        run(GRID, wc, sms, 256, 1, n);
        run(GRID, wc, sms, 256, 4, n);
    }
    return 0;
}
