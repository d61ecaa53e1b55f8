// One warp-wide shared-memory instruction per launch, at per-lane byte offsets read from a
// cases file, so that Nsight Compute's per-kernel wavefront counters measure exactly that
// instruction. Built and driven by tools/bank_probe.py.
//
// cases file: one case per line: "<ld|st> <4|8|16> o0 o1 ... o31" (offset -1 = inactive lane).
// Each case is one kernel launch, in file order; "nop" lines launch a kernel with no
// shared-memory access (the counters' baseline).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(2);                                                                            \
    }                                                                                     \
  } while (0)

constexpr int kSmemBytes = 48 * 1024;

template <int W, bool STORE>
__global__ void probe(const int* __restrict__ offs, unsigned* __restrict__ out) {
  __shared__ __align__(128) unsigned char smem[kSmemBytes];
  const int lane = threadIdx.x;
  const int off = offs[lane];
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem)) + (off < 0 ? 0 : off);
  unsigned a = lane, b = lane * 3u, c = lane * 5u, d = lane * 7u;
  if constexpr (STORE) {
    if constexpr (W == 4) {
      asm volatile("{ .reg .pred p; setp.ge.s32 p, %0, 0; @p st.shared.u32 [%1], %2; }"
                   :: "r"(off), "r"(addr), "r"(a) : "memory");
    } else if constexpr (W == 8) {
      asm volatile("{ .reg .pred p; setp.ge.s32 p, %0, 0; @p st.shared.v2.u32 [%1], {%2, %3}; }"
                   :: "r"(off), "r"(addr), "r"(a), "r"(b) : "memory");
    } else {
      asm volatile("{ .reg .pred p; setp.ge.s32 p, %0, 0; @p st.shared.v4.u32 [%1], {%2, %3, %4, %5}; }"
                   :: "r"(off), "r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
    }
  } else {
    if constexpr (W == 4) {
      asm volatile("{ .reg .pred p; setp.ge.s32 p, %1, 0; @p ld.shared.u32 %0, [%2]; }"
                   : "+r"(a) : "r"(off), "r"(addr) : "memory");
    } else if constexpr (W == 8) {
      asm volatile("{ .reg .pred p; setp.ge.s32 p, %2, 0; @p ld.shared.v2.u32 {%0, %1}, [%3]; }"
                   : "+r"(a), "+r"(b) : "r"(off), "r"(addr) : "memory");
    } else {
      asm volatile("{ .reg .pred p; setp.ge.s32 p, %4, 0; @p ld.shared.v4.u32 {%0, %1, %2, %3}, [%5]; }"
                   : "+r"(a), "+r"(b), "+r"(c), "+r"(d) : "r"(off), "r"(addr) : "memory");
    }
    out[lane] = a ^ b ^ c ^ d;
  }
}

__global__ void nop(const int* __restrict__ offs, unsigned* __restrict__ out) {
  out[threadIdx.x] = offs[threadIdx.x];
}

__global__ void smem_base(unsigned* out) {
  __shared__ __align__(128) unsigned char smem[16];
  out[0] = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  smem[threadIdx.x] = 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CASES\n", argv[0]);
    return 1;
  }
  FILE* f = fopen(argv[1], "r");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  int* d_offs;
  unsigned* d_out;
  CHECK(cudaMalloc(&d_offs, 32 * sizeof(int)));
  CHECK(cudaMalloc(&d_out, 32 * sizeof(unsigned)));
  char op[8];
  int width, n = 0;
  int offs[32];
  while (fscanf(f, "%7s", op) == 1) {
    if (strcmp(op, "nop") == 0) {
      nop<<<1, 32>>>(d_offs, d_out);
    } else {
      if (fscanf(f, "%d", &width) != 1) break;
      for (int i = 0; i < 32; ++i)
        if (fscanf(f, "%d", &offs[i]) != 1) return 3;
      CHECK(cudaMemcpy(d_offs, offs, sizeof(offs), cudaMemcpyHostToDevice));
      const bool st = strcmp(op, "st") == 0;
      if (width == 4) st ? probe<4, true><<<1, 32>>>(d_offs, d_out) : probe<4, false><<<1, 32>>>(d_offs, d_out);
      else if (width == 8) st ? probe<8, true><<<1, 32>>>(d_offs, d_out) : probe<8, false><<<1, 32>>>(d_offs, d_out);
      else if (width == 16) st ? probe<16, true><<<1, 32>>>(d_offs, d_out) : probe<16, false><<<1, 32>>>(d_offs, d_out);
      else return 4;
    }
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    ++n;
  }
  unsigned base = 0;
  smem_base<<<1, 1>>>(d_out);
  CHECK(cudaMemcpy(&base, d_out, sizeof(base), cudaMemcpyDeviceToHost));
  fprintf(stderr, "launched %d cases; shared window base offset %u\n", n, base);
  return 0;
}
