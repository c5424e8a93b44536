// fusion_harness: Fusion Explorer's executor behind a C ABI, for harnesses that time its plans in their own
// process next to other work: bench/python/race.py loads it with ctypes and races the fused plan, as
// `fusion-cli run` tunes it, against torch.compile's code after the same cache flush, run by run. One handle is
// one graph with its two plans (unfused, fused), their kernels compiled and their buffers allocated on device 0.
//
//   fx_harness* h = fx_harness_open("sample_graphs/swiglu_bf16.json", "{\"warmup_ms\": 25, \"repeat_ms\": 100}");
//   fx_harness_prepare(h, n, names, device_pointers);  // inputs copied in, layouts tuned, both plans verified
//   fx_harness_enqueue(h, 1);                          // the fused plan on fx_harness_stream(h); no wait
//   fx_harness_close(h);
//
// Every call that can fail returns NULL or nonzero and leaves its reason, naming what was wrong, for
// fx_harness_last_error() in the calling thread. A CUDA fault that kills the context makes every later call fail.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fx_harness fx_harness;

// The reason of the calling thread's last failure ("" if none); valid until its next call.
const char* fx_harness_last_error(void);

// Loads a graph file (a plain graph is auto-fused, a fused graph file keeps its fusion section, as `fusion-cli
// run`) and compiles both plans. options_json (NULL or "" for the defaults) is an object with any of:
// "device" (the cost-model preset or file; default: the one fusion-cli picks for this GPU), "auto" (auto-fuse
// even a fused graph file), "warmup_ms", "repeat_ms", "rest_ms", "tuning_rest_ms" (how long layouts and library
// calls are compared, and the rests before the timing and before a GEMM's comparison, as fusion-cli run's
// options), "cold_l2" (the 256 MB flush before each tuning run), "autotune" (default true), "layout" (force
// layout k from 1 of every kernel that has several; 1 is the default layout, the merged call of a horizontal
// GEMM), "seed". Unknown keys and values of the wrong type are refused.
fx_harness* fx_harness_open(const char* graph_file, const char* options_json);

// Allocates, fills the inputs (the `count` named ones copied from the caller's device buffers, each the input's
// size, dtype and layout as fx_harness_describe gives them, contiguous; the others seeded as fusion-cli run fills
// them), tunes the layouts, runs both plans once and checks them against each other. The device is synchronised
// first, so work still writing the inputs on other streams finishes before they are copied. 0 when the checks pass, 1 when one fails (the reason names it), -1 on
// error. May be called again, with other inputs.
int fx_harness_prepare(fx_harness* h, int count, const char* const* names, void* const* device_pointers);

// A JSON object (valid until the next call on h): the graph, its inputs and outputs (name, dtype, shape, bytes),
// each plan's steps (name, kind, library, path: the layout or call kept), and after fx_harness_prepare its
// checks. NULL on error.
const char* fx_harness_describe(fx_harness* h);

// The cudaStream_t every plan launch goes on: order the caller's own work on it.
void* fx_harness_stream(fx_harness* h);

// Enqueues every step of plan 0 (unfused) or 1 (fused) on the stream and returns at once. 0 or -1.
int fx_harness_enqueue(fx_harness* h, int plan);

// Copies a value's buffer in a plan (an input, an output, an intermediate the plan stores in the graph's own
// layout; not one it keeps channels-last only) to the caller's device memory, `bytes` being its size; waits for
// the stream first. 0 or -1.
int fx_harness_copy_value(fx_harness* h, int plan, const char* name, void* device_destination, size_t bytes);

// From now on plan 0 or 1 writes the `count` named graph outputs into the caller's device buffers (each the
// output's size, contiguous, aligned to 256 bytes as torch's allocations are) instead of its own, until bound
// again; count 0 gives every output its own buffer back, and so does fx_harness_prepare. A harness that gives
// the other side new output memory for each measurement can give the plan the same (where buffers lie moves a
// memory-bound kernel's time by up to 0.6%). Refused, binding nothing: a name that is not a graph output the
// plan writes, a null or misaligned pointer, two outputs whose buffers overlap, one of the parts a horizontal
// GEMM writes at equal spacing in its own buffer. 0 or -1.
int fx_harness_bind_outputs(fx_harness* h, int plan, int count, const char* const* names,
                            void* const* device_pointers);

void fx_harness_close(fx_harness* h);

#ifdef __cplusplus
}
#endif
