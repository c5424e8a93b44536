"""The GPU's SM clock and what held it back while PyTorch's side of the benchmark was timed: NVML through ctypes
(no pynvml needed), sampled on a thread, summarised as fusion-cli run summarises its own timing
(kernels/profile/gpu_clocks.h; its JSON's timing.gpu_clocks). Compute-bound bf16 GEMMs run at the H100's power
limit and slow down the longer the GPU has been busy (qkv_bf16's three GEMMs 0.2625 ms in a burst, 0.2848 after
1.5 s: bench/microbench/gemm_regime.py), so a ratio of two times holds only where both ran at the same clocks.
No torch here: the summary is unit-tested without a GPU (test_graph_parse.py)."""
import ctypes
import statistics
import threading

GPU_IDLE = 0x1
# nvmlClocksEventReason* bits (stable C API values) and the words fusion-cli's report uses for them.
REASONS = ((0x2, "the applications clock setting"), (0x4, "the power cap"), (0x8, "a hardware slowdown"),
           (0x10, "sync boost"), (0x20, "thermal slowdown (software)"), (0x40, "thermal slowdown (hardware)"),
           (0x80, "the power brake"), (0x100, "the display clock setting"))
NVML_CLOCK_SM = 1


def reason_names(bits):
    return [name for bit, name in REASONS if bits & bit]


def summarize(samples):
    """[(sm_mhz, reasons)] -> {"samples", "busy_samples", "sm_mhz_median", "sm_mhz_min", "sm_mhz_max",
    "held_back_by"}, the idle samples counted but left out of the clocks (as ClockSpan::add does); None for no
    samples. The median is the upper one, as fusion-cli's."""
    if not samples:
        return None
    busy = [(mhz, r) for mhz, r in samples if not r & GPU_IDLE]
    out = {"samples": len(samples), "busy_samples": len(busy), "sm_mhz_median": None, "sm_mhz_min": None,
           "sm_mhz_max": None, "held_back_by": []}
    if busy:
        clocks = sorted(mhz for mhz, _ in busy)
        bits = 0
        for _, r in busy:
            bits |= r
        out.update(sm_mhz_median=clocks[len(clocks) // 2], sm_mhz_min=clocks[0], sm_mhz_max=clocks[-1],
                   held_back_by=reason_names(bits))
    return out


class Monitor:
    """NVML for one device (by PCI bus id where given, else NVML's index). `available` False with `why_not`
    where NVML cannot be opened; never raises."""

    def __init__(self, pci_bus_id=None, index=0):
        self.why_not, self._handle, self._nvml = "", None, None
        try:
            nvml = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as e:
            self.why_not = f"NVML not found ({e})"
            return
        try:
            reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                nvml.nvmlDeviceGetCurrentClocksThrottleReasons
            if nvml.nvmlInit_v2() != 0:
                self.why_not = "NVML did not start"
                return
            handle = ctypes.c_void_p()
            status = (nvml.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(handle)) if pci_bus_id
                      else nvml.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(handle)))
            if status != 0:
                self.why_not = f"NVML has no device {pci_bus_id or index} (status {status})"
                return
        except AttributeError as e:
            self.why_not = f"the driver's NVML lacks a function ({e})"
            return
        self._nvml, self._handle, self._reasons = nvml, handle, reasons

    @property
    def available(self):
        return self._handle is not None

    def sample(self):
        """(sm_mhz, reasons) or None."""
        if not self.available:
            return None
        mhz, bits = ctypes.c_uint(), ctypes.c_ulonglong()
        if self._nvml.nvmlDeviceGetClockInfo(self._handle, NVML_CLOCK_SM, ctypes.byref(mhz)) != 0 or \
                self._reasons(self._handle, ctypes.byref(bits)) != 0:
            return None
        return mhz.value, bits.value


class Watch:
    """`with Watch(monitor) as w: ...` samples every `period` seconds on a thread; w.summary afterwards
    (summarize's dict, or None where the monitor is not available)."""

    def __init__(self, monitor, period=0.005):
        self.monitor, self.period, self.samples, self.summary = monitor, period, [], None
        self._stop = threading.Event()
        self._thread = None

    def _run(self):
        while True:
            s = self.monitor.sample()
            if s:
                self.samples.append(s)
            if self._stop.wait(self.period):
                break

    def __enter__(self):
        if self.monitor is not None and self.monitor.available:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread:
            self._stop.set()
            self._thread.join()
            s = self.monitor.sample()  # the state as the work ended
            if s:
                self.samples.append(s)
            self.summary = summarize(self.samples)
        return False


def median_of(summaries):
    """The median of the rounds' median clocks (None where no round has one)."""
    values = [s["sm_mhz_median"] for s in summaries if isinstance(s, dict) and s.get("sm_mhz_median")]
    return statistics.median(values) if values else None
