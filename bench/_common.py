"""Helpers shared by the throughput benches: logical CPU devices, interleaved timing, memory
readings and result tables.

Everything here runs eagerly on the host. `split_cpu` must run before TensorFlow initialises
its devices (before the first op, strategy or `list_logical_devices` call).
"""
import os
import resource
import statistics
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_RATIO = 0.95


def use_repo_checkout():
    """Makes `import tpu_estimator_compat` load this checkout, installed or not."""
    if REPO_ROOT not in sys.path:
        sys.path.insert(0, REPO_ROOT)


def split_cpu(count):
    """Splits the physical CPU into `count` logical devices; returns their names.

    Raises:
      RuntimeError: TensorFlow already initialised its devices with fewer than `count` CPUs.
    """
    import tensorflow as tf  # noqa: PLC0415  (callers set TF_CPP_MIN_LOG_LEVEL first)
    physical = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            physical, [tf.config.LogicalDeviceConfiguration()] * count)
    except RuntimeError:
        if len(tf.config.list_logical_devices("CPU")) < count:
            raise RuntimeError(
                f"Cannot split the CPU into {count} logical devices: TensorFlow already "
                "initialised its devices. Call split_cpu() before any TensorFlow op runs."
            ) from None
    return [d.name for d in tf.config.list_logical_devices("CPU")][:count]


def current_rss_mb():
    """Resident set size of this process now, in MB (Linux /proc)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb():
    """Peak resident set size of this process so far, in MB (ru_maxrss is in KB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Timings:
    """Wall times and RSS growth of each candidate's repetitions."""

    def __init__(self, names):
        self.seconds = {name: [] for name in names}
        self.rss_growth_mb = {name: 0.0 for name in names}

    def median(self, name):
        return statistics.median(self.seconds[name])


def interleaved(candidates, repeats):
    """Times `repeats` calls of each zero-argument callable in `candidates` ({name: fn}).

    Calls are interleaved so that every candidate sees the same machine load: round r runs
    the candidates in order for even r and in reverse order for odd r (ABBA...), which also
    cancels a linear drift in load. Warm up (trace, first execution) before calling this.

    Returns:
      A `Timings` with one wall time per repetition and candidate.
    """
    names = list(candidates)
    timings = Timings(names)
    for round_index in range(repeats):
        for name in names if round_index % 2 == 0 else reversed(names):
            rss_before = current_rss_mb()
            start = time.perf_counter()
            candidates[name]()
            timings.seconds[name].append(time.perf_counter() - start)
            timings.rss_growth_mb[name] += current_rss_mb() - rss_before
    return timings


def cpu_seconds():
    """CPU seconds (user + system) this process and its threads have used."""
    times = os.times()
    return times.user + times.system


def settle(quiet_cpu_s=0.03, interval_s=0.5, limit_s=20.0):
    """Waits (untimed) until this process's background work stops: until its CPU time grows
    by less than `quiet_cpu_s` in `interval_s`, at most `limit_s`. Returns the CPU seconds
    used meanwhile.

    A side whose iterator outlives its repetition (a hand-written loop's) refills its
    tf.data buffers in the background after it: without settling, that work is timed in the
    next side's repetition and the refilled buffers are not timed at all.
    """
    cpu_s = cpu_seconds
    start_cpu, started = cpu_s(), time.perf_counter()
    last = start_cpu
    while time.perf_counter() - started < limit_s:
        time.sleep(interval_s)
        now = cpu_s()
        if now - last < quiet_cpu_s:
            break
        last = now
    return last - start_cpu


def format_table(headers, rows):
    """A plain-text table: first column left-aligned, the others right-aligned."""
    cells = [list(map(str, headers))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(row, widths)))

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule] + [line(row) for row in cells[1:]])


def verdict(ratio, target=TARGET_RATIO):
    return "PASS" if ratio >= target else "BELOW TARGET"


def time_engine_phases():
    """Wraps this package's engine so that the first train() call's phases are noted in the
    returned dict: `trace_<mode>` (the engine's step trace, the first of each mode: model_fn on
    every replica, variable creation), `loop_trace` (the train loop's tf.function traced),
    `first_run` (that loop's first execution; `first_run_end(_cpu)`: the clock and the
    process's CPU seconds when it ended) and `meta_graph` (the checkpoints' `.meta` graph
    made, whether from the traced step or by calling model_fn again).

    Internals on purpose: these phases happen inside one public call with no hook or option
    between them (a SessionRunHook's callbacks run inside the trace), so only the engine's
    `ModelEngine._trace` and `loops.make_train_loop` can split them. Call before the
    estimator's first call.
    """
    from tpu_estimator_compat.engine import loops  # noqa: PLC0415
    from tpu_estimator_compat.engine import meta_graph  # noqa: PLC0415
    from tpu_estimator_compat.engine import model_engine  # noqa: PLC0415
    phases = {}
    original_trace, original_make_loop = model_engine.ModelEngine._trace, loops.make_train_loop
    original_meta_graph = meta_graph.train_meta_graph

    def timed_meta_graph(*meta_args):
        start = time.perf_counter()
        try:
            return original_meta_graph(*meta_args)
        finally:
            phases.setdefault("meta_graph", time.perf_counter() - start)

    def timed_trace(self, mode, *trace_args, **kwargs):
        start = time.perf_counter()
        try:
            return original_trace(self, mode, *trace_args, **kwargs)
        finally:
            phases.setdefault(f"trace_{mode}", time.perf_counter() - start)

    def timed_make_loop(*loop_args, **loop_kwargs):
        loop = original_make_loop(*loop_args, **loop_kwargs)

        def first_call_timed(iterator, num_steps):
            if "loop_trace" in phases:
                return loop(iterator, num_steps)
            start = time.perf_counter()
            loop.get_concrete_function(iterator, num_steps)
            phases["loop_trace"] = time.perf_counter() - start
            start = time.perf_counter()
            result = loop(iterator, num_steps)
            float(result.loss)
            phases["first_run_end"], phases["first_run_end_cpu"] = (time.perf_counter(),
                                                                    cpu_seconds())
            phases["first_run"] = phases["first_run_end"] - start
            return result
        return first_call_timed

    model_engine.ModelEngine._trace = timed_trace  # pylint: disable=protected-access
    loops.make_train_loop = timed_make_loop
    meta_graph.train_meta_graph = timed_meta_graph
    return phases
