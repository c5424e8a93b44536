"""How bench.queued_ms queues PyTorch's runs ahead of the GPU: runs per spin and the spin's length. Plain
arithmetic, kept apart from bench.py (which needs torch and a GPU) so that the unit tests check it anywhere."""

# Launches (kernels, flushes, event records) queued_ms puts in the stream ahead of the GPU at most: the host
# blocks once CUDA's launch queue is full (about a thousand entries), and a blocked host is no longer ahead.
QUEUE_LAUNCHES = 512


# queued_ms's runs at most (the events it keeps) and at least (a median of a few is no median).
MAX_RUNS = 2000
MIN_RUNS = 10


def runs_for(rep_ms, run_s):
    """queued_ms's runs: as many as take rep_ms at run_s a run (flush included), do_bench's arithmetic
    (int(rep / estimate)), so that PyTorch's queued runs keep the GPU busy as long as its do_bench runs and
    fusion-cli's --repeat-ms rounds; within MIN_RUNS..MAX_RUNS."""
    n = int(rep_ms / (run_s * 1e3)) if run_s > 0 else MAX_RUNS
    return max(MIN_RUNS, min(MAX_RUNS, n))


def stretch(kernels, reps):
    """Runs per spin: as many as fit QUEUE_LAUNCHES with fn's kernels (8 where the profiler saw none), the flush
    and two events, at least one and at most reps."""
    return max(1, min(reps, QUEUE_LAUNCHES // ((kernels or 8) + 3)))


def spin_seconds(host_s, gpu_s, runs):
    """How long the spin must hold the stream so that the GPU finds each of `runs` runs queued when it gets
    there: the host enqueues run i by (i + 1) * host_s, the GPU reaches it at spin + i * gpu_s. Where the host
    is the faster (the GEMM samples) that is one run's host time, however long the stretch; where it is the
    slower (torch.compile's conv_bn_relu: five kernels of 78 us in all behind Python's guards), the whole
    stretch's lag. Doubled, plus 50 us, for the host's jitter."""
    return 2 * (host_s + max(0, runs - 1) * max(0.0, host_s - gpu_s)) + 50e-6
