// Times compiled kernels from different compilers (Triton's cubins from its cache, our generated kernels
// compiled with nvcc -cubin) in one process under one protocol: medians of 50 runs, each after a 256 MB memset
// (do_bench's flush), in interleaved rounds so that a drift over time touches every kernel alike.
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/microbench/cubin_race.cu -lcuda -o /tmp/race && /tmp/race SPEC [ROUNDS] [FLUSH]
// FLUSH: memset (the default, do_bench's: it leaves the L2 full of dirty lines, which the timed kernel's traffic
// evicts to DRAM) or read (a kernel reads the 256 MB instead: the L2 is left holding clean lines, so the timed
// kernel's DRAM traffic is its own).
// SPEC, one item per line ('#' starts a comment):
//   buffer NAME BYTES [random]            device memory, zeroed or filled with uniform floats in [-3, 3)
//   kernel LABEL FILE FUNCTION GRID BLOCK SHMEM ARG...   ARG: a buffer name, u32:N, or null
//   same LABEL_A LABEL_B BUFFER            after one run of each, BUFFER must agree (max |diff| printed)
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_; cuGetErrorString(r_, &s_); std::printf("%s: %s\n", #x, s_); std::exit(1); } } while (0)
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)

struct Buffer { void* ptr = nullptr; size_t bytes = 0; };
struct Kernel {
  std::string label;
  CUfunction fn{};
  unsigned grid = 0, block = 0, shmem = 0;
  std::vector<unsigned long long> words;  // each argument stored in 8 bytes; u32 arguments use the low half
  std::vector<void*> args;
  void launch() const {
    CU(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shmem, nullptr, const_cast<void**>(args.data()), nullptr));
  }
};

__global__ void fill_uniform(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned s = (unsigned)i * 2654435761u ^ seed;
    s ^= s >> 16; s *= 0x7feb352du; s ^= s >> 15; s *= 0x846ca68bu; s ^= s >> 16;
    p[i] = (s >> 8) * (6.0f / 16777216.0f) - 3.0f;
  }
}

__global__ void read_flush(const float4* p, size_t n4, float* sink) {
  float s = 0.0f;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
    const float4 v = p[i];
    s += v.x + v.y + v.z + v.w;
  }
  if (s == 12345.0f) *sink = s;  // never true for the zeroed buffer: keeps the loads
}

int main(int argc, char** argv) {
  if (argc < 2) { std::printf("usage: race SPEC [ROUNDS] [memset|read]\n"); return 2; }
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string flush_mode = argc > 3 ? argv[3] : "memset";
  if (flush_mode != "memset" && flush_mode != "read") { std::printf("FLUSH: memset or read\n"); return 2; }
  CK(cudaFree(nullptr));  // the primary context, shared with the driver API calls below
  std::map<std::string, Buffer> buffers;
  std::map<std::string, CUmodule> modules;
  std::vector<Kernel> kernels;
  struct Same { std::string a, b, buffer; };
  std::vector<Same> sames;
  std::ifstream spec(argv[1]);
  std::string line;
  unsigned seed = 1;
  while (std::getline(spec, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream in(line);
    std::string what;
    if (!(in >> what)) continue;
    if (what == "buffer") {
      std::string name, fill;
      Buffer b;
      in >> name >> b.bytes >> fill;
      CK(cudaMalloc(&b.ptr, b.bytes));
      CK(cudaMemset(b.ptr, 0, b.bytes));
      if (fill == "random") fill_uniform<<<1024, 256>>>(static_cast<float*>(b.ptr), b.bytes / 4, seed++);
      buffers[name] = b;
    } else if (what == "kernel") {
      Kernel k;
      std::string file, function, arg;
      in >> k.label >> file >> function >> k.grid >> k.block >> k.shmem;
      if (!modules.count(file)) CU(cuModuleLoad(&modules[file], file.c_str()));
      CU(cuModuleGetFunction(&k.fn, modules[file], function.c_str()));
      if (k.shmem > 48 * 1024) CU(cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k.shmem));
      while (in >> arg) {
        if (arg.rfind("u32:", 0) == 0) k.words.push_back(std::stoull(arg.substr(4)));
        else if (arg == "null") k.words.push_back(0);
        else if (buffers.count(arg)) k.words.push_back(reinterpret_cast<unsigned long long>(buffers[arg].ptr));
        else { std::printf("%s: no buffer %s\n", k.label.c_str(), arg.c_str()); return 2; }
      }
      kernels.push_back(std::move(k));
    } else if (what == "same") {
      Same s;
      in >> s.a >> s.b >> s.buffer;
      sames.push_back(s);
    } else {
      std::printf("spec: unknown item '%s'\n", what.c_str());
      return 2;
    }
  }
  for (Kernel& k : kernels)
    for (auto& w : k.words) k.args.push_back(&w);
  CK(cudaDeviceSynchronize());
  auto find = [&](const std::string& label) -> const Kernel& {
    for (const Kernel& k : kernels) if (k.label == label) return k;
    std::printf("no kernel %s\n", label.c_str());
    std::exit(2);
  };
  for (const Same& s : sames) {
    const Buffer& b = buffers.at(s.buffer);
    std::vector<float> want(b.bytes / 4), got(b.bytes / 4);
    find(s.a).launch();
    CK(cudaMemcpy(want.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemset(b.ptr, 0, b.bytes));
    find(s.b).launch();
    CK(cudaMemcpy(got.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost));
    double err = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      err = std::isnan(got[i]) != std::isnan(want[i]) ? INFINITY : std::max(err, (double)std::fabs(got[i] - want[i]));
      scale = std::max(scale, (double)std::fabs(want[i]));
    }
    std::printf("same %s %s %s: max |diff| %.3g (max |value| %.3g)\n", s.a.c_str(), s.b.c_str(), s.buffer.c_str(), err, scale);
  }
  void* flush;
  CK(cudaMalloc(&flush, 256u << 20));
  CK(cudaMemset(flush, 0, 256u << 20));
  float* sink;
  CK(cudaMalloc(&sink, sizeof(float)));
  constexpr int kRuns = 50;
  std::vector<cudaEvent_t> s(kRuns), e(kRuns);
  for (int i = 0; i < kRuns; ++i) { CK(cudaEventCreate(&s[i])); CK(cudaEventCreate(&e[i])); }
  std::vector<std::vector<float>> medians(kernels.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t ki = 0; ki < kernels.size(); ++ki) {
      const Kernel& k = kernels[(ki + r) % kernels.size()];  // rotate the order per round
      for (int w = 0; w < 10; ++w) k.launch();
      for (int i = 0; i < kRuns; ++i) {
        if (flush_mode == "memset") CK(cudaMemsetAsync(flush, 0, 256u << 20));
        else read_flush<<<1024, 256>>>(static_cast<const float4*>(flush), (256u << 20) / 16, sink);
        CK(cudaGetLastError());
        CK(cudaEventRecord(s[i]));
        k.launch();
        CK(cudaEventRecord(e[i]));
      }
      CK(cudaDeviceSynchronize());
      std::vector<float> t(kRuns);
      for (int i = 0; i < kRuns; ++i) CK(cudaEventElapsedTime(&t[i], s[i], e[i]));
      std::sort(t.begin(), t.end());
      medians[(ki + r) % kernels.size()].push_back(t[kRuns / 2]);
    }
  }
  std::printf("%-28s %10s %10s %10s   (%d rounds of %d runs, each after a %s flush)\n", "kernel", "median ms", "min", "max",
              rounds, kRuns, flush_mode.c_str());
  for (size_t ki = 0; ki < kernels.size(); ++ki) {
    auto m = medians[ki];
    std::sort(m.begin(), m.end());
    std::printf("%-28s %10.4f %10.4f %10.4f\n", kernels[ki].label.c_str(), m[m.size() / 2], m.front(), m.back());
  }
  return 0;
}
