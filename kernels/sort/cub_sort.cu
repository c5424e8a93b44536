// CUB segmented sort per row. Segments are rows of equal length, so the offsets are i * length; they are
// written to the workspace by a small kernel (CUB reads begin and end offsets from memory).
#include "kernels/sort/cub_sort.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cub/device/device_segmented_sort.cuh>

namespace fx::gpu {
namespace {

constexpr std::size_t kAlign = 256;

std::size_t aligned(std::size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

__global__ void row_offsets(long long* offsets, long long rows, long long length) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i <= rows; i += (long long)gridDim.x * blockDim.x) {
    offsets[i] = i * length;
  }
}

std::size_t key_size(SortKey k) {
  switch (k) {
    case SortKey::f32:
    case SortKey::i32: return 4;
    case SortKey::f16:
    case SortKey::bf16: return 2;
    case SortKey::i64: return 8;
    case SortKey::u8: return 1;
  }
  return 0;
}

// CUB's call for one key type; a null `temp` asks for the temporary storage size only.
template <typename Key>
cudaError_t sort_keys(const RowSort& s, void* temp, std::size_t& temp_bytes, const void* in, void* out,
                      const long long* offsets, cudaStream_t stream) {
  const Key* keys_in = static_cast<const Key*>(in);
  Key* keys_out = static_cast<Key*>(out);
  const long long items = s.rows * s.length;
  if (s.descending) {
    return cub::DeviceSegmentedSort::SortKeysDescending(temp, temp_bytes, keys_in, keys_out, items, s.rows, offsets,
                                                        offsets + 1, stream);
  }
  return cub::DeviceSegmentedSort::SortKeys(temp, temp_bytes, keys_in, keys_out, items, s.rows, offsets, offsets + 1,
                                            stream);
}

cudaError_t dispatch(const RowSort& s, void* temp, std::size_t& temp_bytes, const void* in, void* out,
                     const long long* offsets, cudaStream_t stream) {
  switch (s.key) {
    case SortKey::f32: return sort_keys<float>(s, temp, temp_bytes, in, out, offsets, stream);
    case SortKey::f16: return sort_keys<__half>(s, temp, temp_bytes, in, out, offsets, stream);
    case SortKey::bf16: return sort_keys<__nv_bfloat16>(s, temp, temp_bytes, in, out, offsets, stream);
    case SortKey::i32: return sort_keys<int>(s, temp, temp_bytes, in, out, offsets, stream);
    case SortKey::i64: return sort_keys<long long>(s, temp, temp_bytes, in, out, offsets, stream);
    case SortKey::u8: return sort_keys<unsigned char>(s, temp, temp_bytes, in, out, offsets, stream);
  }
  return cudaErrorInvalidValue;
}

struct Layout {
  std::size_t offsets = 0, temp = 0, sorted = 0, total = 0, temp_bytes = 0;
};

cudaError_t layout_of(const RowSort& s, Layout& l) {
  std::size_t temp_bytes = 0;
  const cudaError_t r = dispatch(s, nullptr, temp_bytes, nullptr, nullptr, nullptr, nullptr);
  if (r != cudaSuccess) return r;
  l.temp_bytes = temp_bytes;
  l.offsets = 0;
  l.temp = aligned(static_cast<std::size_t>(s.rows + 1) * sizeof(long long));
  l.sorted = l.temp + aligned(temp_bytes);
  const bool cut = s.keep > 0 && s.keep < s.length;
  l.total = l.sorted + (cut ? aligned(static_cast<std::size_t>(s.rows * s.length) * key_size(s.key)) : 0);
  return cudaSuccess;
}

}  // namespace

cudaError_t row_sort_workspace_bytes(const RowSort& s, std::size_t& bytes) {
  Layout l;
  const cudaError_t r = layout_of(s, l);
  bytes = l.total;
  return r;
}

cudaError_t row_sort(const RowSort& s, const void* in, void* out, void* workspace, std::size_t workspace_bytes,
                     cudaStream_t stream) {
  Layout l;
  if (cudaError_t r = layout_of(s, l); r != cudaSuccess) return r;
  if (workspace_bytes < l.total) return cudaErrorInvalidValue;
  char* ws = static_cast<char*>(workspace);
  auto* offsets = reinterpret_cast<long long*>(ws + l.offsets);
  const long long blocks = (s.rows + 1 + 255) / 256;
  row_offsets<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), 256, 0, stream>>>(offsets, s.rows, s.length);
  if (cudaError_t r = cudaGetLastError(); r != cudaSuccess) return r;
  const bool cut = s.keep > 0 && s.keep < s.length;
  void* sorted = cut ? ws + l.sorted : out;
  std::size_t temp_bytes = l.temp_bytes;
  if (cudaError_t r = dispatch(s, ws + l.temp, temp_bytes, in, sorted, offsets, stream); r != cudaSuccess) return r;
  if (!cut) return cudaSuccess;
  // topk: the first `keep` of every sorted row, a strided copy.
  const std::size_t elem = key_size(s.key);
  return cudaMemcpy2DAsync(out, static_cast<std::size_t>(s.keep) * elem, sorted, static_cast<std::size_t>(s.length) * elem,
                           static_cast<std::size_t>(s.keep) * elem, static_cast<std::size_t>(s.rows),
                           cudaMemcpyDeviceToDevice, stream);
}

}  // namespace fx::gpu
