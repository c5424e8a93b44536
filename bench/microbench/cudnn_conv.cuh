// Shared by conv_algos.cu and conv_host_time.cu: cuDNN's error check, and the descriptors of one legacy
// convolution call (x, y, per-channel bias, filters, the convolution, ReLU) created and set in one go.
#pragma once

#include <cudnn.h>

#include <cstdio>
#include <cstdlib>

#define CD(x) do { cudnnStatus_t s_ = (x); if (s_ != CUDNN_STATUS_SUCCESS) { std::printf("%s: %s line %d\n", #x, cudnnGetErrorString(s_), __LINE__); std::exit(1); } } while (0)

struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t relu = nullptr;
  int out = 0;  // the output's height and width

  // x [n, c, hw, hw] and the k filters of c x r x r in x_format, y [n, k, out, out] in y_format; one stride and
  // one padding on both axes.
  ConvDescriptors(cudnnTensorFormat_t x_format, cudnnTensorFormat_t y_format, int n, int c, int hw, int k, int r,
                  int stride, int pad, cudnnMathType_t math)
      : out((hw + 2 * pad - r) / stride + 1) {
    CD(cudnnCreateTensorDescriptor(&x)); CD(cudnnCreateTensorDescriptor(&y)); CD(cudnnCreateTensorDescriptor(&bias));
    CD(cudnnCreateFilterDescriptor(&w)); CD(cudnnCreateConvolutionDescriptor(&conv));
    CD(cudnnCreateActivationDescriptor(&relu));
    CD(cudnnSetTensor4dDescriptor(x, x_format, CUDNN_DATA_FLOAT, n, c, hw, hw));
    CD(cudnnSetTensor4dDescriptor(y, y_format, CUDNN_DATA_FLOAT, n, k, out, out));
    CD(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, k, 1, 1));
    CD(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, x_format, k, c, r, r));
    CD(cudnnSetConvolution2dDescriptor(conv, pad, pad, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CD(cudnnSetConvolutionMathType(conv, math));
    CD(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
  ~ConvDescriptors() {
    cudnnDestroyTensorDescriptor(x); cudnnDestroyTensorDescriptor(y); cudnnDestroyTensorDescriptor(bias);
    cudnnDestroyFilterDescriptor(w); cudnnDestroyConvolutionDescriptor(conv); cudnnDestroyActivationDescriptor(relu);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
};
