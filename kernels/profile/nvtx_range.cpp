#include "kernels/profile/nvtx_range.h"

#include <nvtx3/nvToolsExt.h>

namespace fx::gpu {
namespace {

nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA(kNvtxDomain);
  return handle;
}

}  // namespace

NvtxRange::NvtxRange(const char* name) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = name;
  nvtxDomainRangePushEx(domain(), &attributes);
}

NvtxRange::~NvtxRange() { nvtxDomainRangePop(domain()); }

}  // namespace fx::gpu
