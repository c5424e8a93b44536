// "0.1670 ms", as the reports give a timed choice. No CUDA here: the vendor-free report lines use it too.
#pragma once

#include <cstdio>
#include <string>

namespace fx::gpu {

inline std::string ms_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f ms", ms);
  return text;
}

}  // namespace fx::gpu
