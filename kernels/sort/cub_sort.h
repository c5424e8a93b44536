// sort and topk of each row of a row-major tensor (the last axis), through CUB's segmented sort (in the
// toolkit's CCCL). Compiled by nvcc (cub_sort.cu); this header stays C++17 and free of CUB so the executor
// (C++20) can include it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fx::gpu {

enum class SortKey : std::uint8_t { f32, f16, bf16, i32, i64, u8 };

struct RowSort {
  SortKey key = SortKey::f32;
  std::int64_t rows = 1, length = 1;  // the input is rows x length
  std::int64_t keep = 0;              // topk: the first `keep` of each sorted row are written; 0: all of them
  bool descending = false;
};

// Bytes of device workspace row_sort() needs: row offsets, CUB's temporary storage and, for topk, the sorted
// rows before they are cut to k. Asks CUB (no launch); needs the device to be current.
cudaError_t row_sort_workspace_bytes(const RowSort& s, std::size_t& bytes);

// Sorts every row of `in` into `out` (rows x length, or rows x keep for topk) on `stream`. Returns the first
// CUDA error met (the caller checks it with FX_CUDA_CALL).
cudaError_t row_sort(const RowSort& s, const void* in, void* out, void* workspace, std::size_t workspace_bytes,
                     cudaStream_t stream);

}  // namespace fx::gpu
