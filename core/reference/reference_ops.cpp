// The reference evaluator's non-elementwise ops: reductions and normalisations, matmul and conv2d, layout ops,
// sort, topk and max_pool2d. Plain loops in double precision.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "core/reference/reference.h"

namespace fx::reference_detail {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

HostTensor make(const Node& node) { return HostTensor{node.type, std::vector<double>(at(node.type.numel()))}; }

std::size_t axis_of(const Node& node, std::size_t rank) {
  return static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), rank));
}

// sum/mean/max/min over a set of axes: every input element folds into the output element with the
// reduced coordinates dropped (or kept as 0 with keepdim: the same flat index either way).
HostTensor reduce(const Node& node, const HostTensor& x) {
  const Shape& s = x.type.shape;
  std::vector<bool> reduced(s.size(), false);
  for (auto a : node.attrs.get_ints("axis")) reduced[static_cast<std::size_t>(*normalize_axis(a, s.size()))] = true;
  Shape kept(s);
  std::int64_t count = 1;
  for (std::size_t d = 0; d < s.size(); ++d) {
    if (reduced[d]) count *= s[d], kept[d] = 1;
  }
  const OpId op = node.op_id();
  const bool is_sum = op == OpId::sum || op == OpId::mean;
  HostTensor out = make(node);
  const double init = is_sum ? 0.0 : op == OpId::max ? -INFINITY : INFINITY;
  std::fill(out.values.begin(), out.values.end(), init);
  const auto kept_strides = strides_of(kept);
  std::vector<std::int64_t> c(s.size(), 0);
  for (std::int64_t i = 0; i < x.type.numel(); ++i) {
    std::int64_t o = 0;
    for (std::size_t d = 0; d < s.size(); ++d) o += reduced[d] ? 0 : c[d] * kept_strides[d];
    double& acc = out.values[at(o)];
    const double v = x.values[at(i)];
    if (is_sum) {
      acc += v;
    } else if (std::isnan(v) || std::isnan(acc)) {
      acc = kNaN;
    } else {
      acc = op == OpId::max ? std::max(acc, v) : std::min(acc, v);
    }
    for (std::size_t d = s.size(); d-- > 0;) {
      if (++c[d] < s[d]) break;
      c[d] = 0;
    }
  }
  if (op == OpId::mean) {
    for (double& v : out.values) v /= static_cast<double>(count);
  }
  return out;
}

HostTensor softmax(const Node& node, const HostTensor& x) {
  const AxisSplit a = split_at(x.type.shape, axis_of(node, x.type.shape.size()));
  HostTensor out = make(node);
  for (std::int64_t o = 0; o < a.outer; ++o) {
    for (std::int64_t i = 0; i < a.inner; ++i) {
      auto idx = [&](std::int64_t j) { return at((o * a.length + j) * a.inner + i); };
      double m = -INFINITY, sum = 0;
      for (std::int64_t j = 0; j < a.length; ++j) m = std::max(m, x.values[idx(j)]);
      for (std::int64_t j = 0; j < a.length; ++j) sum += std::exp(x.values[idx(j)] - m);
      for (std::int64_t j = 0; j < a.length; ++j) out.values[idx(j)] = std::exp(x.values[idx(j)] - m) / sum;
    }
  }
  return out;
}

// layernorm over dims [axis, rank) (population variance), rmsnorm over the last dim; gamma/beta per element
// of the normalised dims.
HostTensor normalise(const Node& node, const std::vector<const HostTensor*>& in) {
  const Shape& s = in[0]->type.shape;
  const bool layer = node.op_id() == OpId::layernorm;
  const std::size_t axis = layer ? axis_of(node, s.size()) : s.size() - 1;
  const AxisSplit a = split_at(s, axis);
  const std::int64_t rows = a.outer, len = a.length * a.inner;
  const double eps = node.attrs.get_number("eps");
  HostTensor out = make(node);
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* x = in[0]->values.data() + r * len;
    double mean = 0, sq = 0;
    if (layer) {
      for (std::int64_t j = 0; j < len; ++j) mean += x[j];
      mean /= static_cast<double>(len);
    }
    for (std::int64_t j = 0; j < len; ++j) sq += (x[j] - mean) * (x[j] - mean);
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(len) + eps);
    for (std::int64_t j = 0; j < len; ++j) {
      double y = (x[j] - mean) * rstd;
      if (in.size() > 1) y *= in[1]->values[at(j)];
      if (in.size() > 2) y += in[2]->values[at(j)];
      out.values[at(r * len + j)] = y;
    }
  }
  return out;
}

HostTensor matmul(const Node& node, const HostTensor& a, const HostTensor& b) {
  const Shape &sa = a.type.shape, &sb = b.type.shape, &so = node.type.shape;
  const bool ta = node.attrs.get_bool("transpose_a"), tb = node.attrs.get_bool("transpose_b");
  const std::int64_t M = so[so.size() - 2], N = so.back();
  const std::int64_t K = ta ? sa[sa.size() - 2] : sa.back();
  const Shape batch(so.begin(), so.end() - 2), ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  HostTensor out = make(node);
  const std::int64_t batches = numel(batch);
  std::vector<std::int64_t> c(batch.size(), 0);
  for (std::int64_t p = 0; p < batches; ++p) {
    const double* A = a.values.data() + broadcast_offset(ba, batch, c) * M * K;
    const double* B = b.values.data() + broadcast_offset(bb, batch, c) * K * N;
    double* Y = out.values.data() + p * M * N;
    for (std::int64_t i = 0; i < M; ++i) {
      for (std::int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (std::int64_t k = 0; k < K; ++k) acc += A[ta ? k * M + i : i * K + k] * B[tb ? j * K + k : k * N + j];
        Y[i * N + j] = acc;
      }
    }
    for (std::size_t d = batch.size(); d-- > 0;) {
      if (++c[d] < batch[d]) break;
      c[d] = 0;
    }
  }
  return out;
}

// Cross-correlation, NCHW input, OIHW weight [O, C/groups, R, S], optional bias [O].
HostTensor conv2d(const Node& node, const std::vector<const HostTensor*>& in) {
  const Shape &xs = in[0]->type.shape, &ws = in[1]->type.shape, &ys = node.type.shape;
  const auto [sh, sw] = node.attrs.get_int_pair("stride");
  const auto [ph, pw] = node.attrs.get_int_pair("padding");
  const auto [dh, dw] = node.attrs.get_int_pair("dilation");
  const std::int64_t groups = node.attrs.get_int("groups"), C = xs[1], H = xs[2], W = xs[3];
  const std::int64_t O = ws[0], cg = ws[1], R = ws[2], S = ws[3], P = ys[2], Q = ys[3], og = O / groups;
  HostTensor out = make(node);
  for (std::int64_t n = 0; n < xs[0]; ++n)
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q) {
          double acc = in.size() > 2 ? in[2]->values[at(o)] : 0.0;
          for (std::int64_t ci = 0; ci < cg; ++ci)
            for (std::int64_t r = 0; r < R; ++r)
              for (std::int64_t s = 0; s < S; ++s) {
                const std::int64_t h = p * sh - ph + r * dh, w = q * sw - pw + s * dw;
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                const std::int64_t c = (o / og) * cg + ci;
                acc += in[0]->values[at(((n * C + c) * H + h) * W + w)] * in[1]->values[at(((o * cg + ci) * R + r) * S + s)];
              }
          out.values[at(((n * O + o) * P + p) * Q + q)] = acc;
        }
  return out;
}

HostTensor transpose(const Node& node, const HostTensor& x) {
  const auto perm = node.attrs.get_ints("perm");
  const Shape& so = node.type.shape;
  const auto in_strides = strides_of(x.type.shape);
  HostTensor out = make(node);
  std::vector<std::int64_t> c(so.size(), 0);
  for (std::int64_t i = 0; i < node.type.numel(); ++i) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < so.size(); ++d) off += c[d] * in_strides[static_cast<std::size_t>(*normalize_axis(perm[d], so.size()))];
    out.values[at(i)] = x.values[at(off)];
    for (std::size_t d = so.size(); d-- > 0;) {
      if (++c[d] < so[d]) break;
      c[d] = 0;
    }
  }
  return out;
}

HostTensor concat(const Node& node, const std::vector<const HostTensor*>& in) {
  const std::size_t axis = axis_of(node, node.type.shape.size());
  const AxisSplit a = split_at(node.type.shape, axis);
  HostTensor out = make(node);
  std::int64_t offset = 0;  // along the axis
  for (const HostTensor* t : in) {
    const AxisSplit b = split_at(t->type.shape, axis);
    for (std::int64_t o = 0; o < b.outer; ++o)
      for (std::int64_t j = 0; j < b.length; ++j)
        for (std::int64_t i = 0; i < b.inner; ++i)
          out.values[at((o * a.length + offset + j) * a.inner + i)] = t->values[at((o * b.length + j) * b.inner + i)];
    offset += b.length;
  }
  return out;
}

HostTensor slice(const Node& node, const HostTensor& x) {
  const std::size_t axis = axis_of(node, x.type.shape.size());
  const AxisSplit a = split_at(x.type.shape, axis), b = split_at(node.type.shape, axis);
  std::int64_t start = node.attrs.get_int("start");
  start = std::clamp(start < 0 ? start + a.length : start, std::int64_t{0}, a.length);
  const std::int64_t step = node.attrs.get_int("step");
  HostTensor out = make(node);
  for (std::int64_t o = 0; o < b.outer; ++o)
    for (std::int64_t j = 0; j < b.length; ++j)
      for (std::int64_t i = 0; i < b.inner; ++i)
        out.values[at((o * b.length + j) * b.inner + i)] = x.values[at((o * a.length + start + j * step) * a.inner + i)];
  return out;
}

// sort (ascending unless descending) and topk (the k largest, largest first) along one axis.
HostTensor sort_along(const Node& node, const HostTensor& x) {
  const std::size_t axis = axis_of(node, x.type.shape.size());
  const AxisSplit a = split_at(x.type.shape, axis), b = split_at(node.type.shape, axis);
  const bool descending = node.op_id() == OpId::topk || node.attrs.get_bool("descending");
  HostTensor out = make(node);
  std::vector<double> fibre(static_cast<std::size_t>(a.length));
  for (std::int64_t o = 0; o < a.outer; ++o)
    for (std::int64_t i = 0; i < a.inner; ++i) {
      for (std::int64_t j = 0; j < a.length; ++j) fibre[at(j)] = x.values[at((o * a.length + j) * a.inner + i)];
      if (descending) {
        std::sort(fibre.begin(), fibre.end(), std::greater<>());
      } else {
        std::sort(fibre.begin(), fibre.end());
      }
      for (std::int64_t j = 0; j < b.length; ++j) out.values[at((o * b.length + j) * b.inner + i)] = fibre[at(j)];
    }
  return out;
}

// max_pool2d over NCHW: padding is -infinity; a NaN in a window makes its maximum NaN (as PyTorch's).
HostTensor max_pool2d(const Node& node, const HostTensor& x) {
  const Shape &xs = x.type.shape, &ys = node.type.shape;
  const auto [kh, kw] = node.attrs.get_int_pair("kernel_size");
  const auto [sh, sw] = node.attrs.get_int_pair("stride");
  const auto [ph, pw] = node.attrs.get_int_pair("padding");
  const auto [dh, dw] = node.attrs.get_int_pair("dilation");
  const std::int64_t H = xs[2], W = xs[3], P = ys[2], Q = ys[3];
  HostTensor out = make(node);
  for (std::int64_t nc = 0; nc < xs[0] * xs[1]; ++nc)
    for (std::int64_t p = 0; p < P; ++p)
      for (std::int64_t q = 0; q < Q; ++q) {
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t r = 0; r < kh; ++r)
          for (std::int64_t s = 0; s < kw; ++s) {
            const std::int64_t h = p * sh - ph + r * dh, w = q * sw - pw + s * dw;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const double v = x.values[at((nc * H + h) * W + w)];
            if (v > m || std::isnan(v)) m = v;
          }
        out.values[at((nc * P + p) * Q + q)] = m;
      }
  return out;
}

}  // namespace

HostTensor evaluate_reduction(const Node& node, const std::vector<const HostTensor*>& in) {
  switch (node.op_id()) {
    case OpId::softmax: return softmax(node, *in[0]);
    case OpId::layernorm:
    case OpId::rmsnorm: return normalise(node, in);
    default: return reduce(node, *in[0]);
  }
}

HostTensor evaluate_contraction(const Node& node, const std::vector<const HostTensor*>& in) {
  if (node.op_id() == OpId::matmul) return matmul(node, *in[0], *in[1]);
  return conv2d(node, in);
}

HostTensor evaluate_layout(const Node& node, const std::vector<const HostTensor*>& in) {
  switch (node.op_id()) {
    case OpId::transpose: return transpose(node, *in[0]);
    case OpId::concat: return concat(node, in);
    case OpId::slice: return slice(node, *in[0]);
    default: return HostTensor{node.type, in[0]->values};  // reshape: the same row-major values
  }
}

HostTensor evaluate_opaque(const Node& node, const std::vector<const HostTensor*>& in) {
  switch (node.op_id()) {
    case OpId::sort:
    case OpId::topk: return sort_along(node, *in[0]);
    case OpId::max_pool2d: return max_pool2d(node, *in[0]);
    default:
      throw std::invalid_argument("a custom op (" + node.attrs.get_string("label") +
                                  ") has no semantics the reference could evaluate");
  }
}

}  // namespace fx::reference_detail
