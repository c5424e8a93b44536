// Holding a stream back while the host enqueues work, so that the GPU never waits for the host inside a timed
// window (the executor's layout tuning), or so that the host's own cost of enqueuing can be measured alone (the
// convolution benchmarks: host time per cuDNN call).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "kernels/common/cuda_call.h"

namespace fx::gpu {

// Holds a stream's work back until the host has enqueued all of a timed run, so that the GPU never waits for
// the host inside the timed window: a way whose launches cost the host more (three launches, one a cuDNN call)
// would otherwise be charged for them whenever the host fell behind the GPU, and a convolution's ways could
// time at up to twice their time in the plan. The host function waits at most 100 ms, so a call that waits on
// the stream cannot hang the run; such a wait is counted (timeouts()): the window it held back waited for the
// host, and the run lost 100 ms. A kernel's first launch is one such call where CUDA loads kernels lazily (the
// default since CUDA 12.2: loading may wait for the work already enqueued), so a kernel is first launched
// outside any gate.
class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream) {
    auto* held = new std::shared_ptr<std::atomic<bool>>(open_);  // the host function's reference
    const cudaError_t e = cudaLaunchHostFunc(stream, &StreamGate::wait, held);
    if (e != cudaSuccess) delete held;
    FX_CUDA_CALL(e);
  }
  ~StreamGate() { open(); }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void open() { open_->store(true, std::memory_order_release); }
  // How many gates, in this process, opened by timing out instead of by open().
  static std::uint64_t timeouts() { return timeouts_.load(std::memory_order_relaxed); }

 private:
  static void CUDART_CB wait(void* data) {
    const auto* held = static_cast<std::shared_ptr<std::atomic<bool>>*>(data);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    while (!(*held)->load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    if (!(*held)->load(std::memory_order_acquire)) timeouts_.fetch_add(1, std::memory_order_relaxed);
    delete held;
  }

  static inline std::atomic<std::uint64_t> timeouts_{0};

  std::shared_ptr<std::atomic<bool>> open_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace fx::gpu
