"""Time to first step on deep models: `TPUEstimator.train()` called -> its first step done,
ours against the original, each run in a fresh process.

The models (`_deep_models.py`, TF1 model_fns, tiny widths and batches of 2 so that building
dominates): BERT-style encoders of several depths (`bert6` ... `bert48`: the depth sweep),
`resnet50` (batch norm) and `detection` (BiFPN, batch norm, many small ops). Sides:

  ours       this package's TPUEstimator: use_tpu=False (one device), and with `--cores N`
             use_tpu=True on N simulated TPU cores (`TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES`,
             its step compiled with XLA), global batch 2 per core
  original   TensorFlow 2.15's TPUEstimator (`--original`, graph mode via
             `disable_v2_behavior()`), use_tpu=False: a TPU cannot be simulated there, so the
             N-core rows have no original column (a TPU traced model_fn once per program)

Each process builds the estimator (`iterations_per_loop=1`, default checkpointing), then
times `train(steps=--steps)`: `first step` is the call's start to the first step's
`after_run` (a SessionRunHook; with a hook, ours runs loops of one step, the step alone;
`--loop_steps N`: `iterations_per_loop=N` and ours runs without the hook, its first step
timed at the end of its first loop of N steps, a while loop), with the CPU seconds the process used meanwhile (user +
system, all threads: less sensitive to other jobs' load than wall time), `total` the whole
call. model_fn is wrapped to count its calls
and time them. Ours' first call is split further: model_fn (its calls in the engine's
trace, one per replica), `build` (the rest of the trace: variables created eagerly, the
step graph's pruning, replica sync, op checks), `.meta` (model_fn called once more in a TF1
graph for the checkpoints' `.meta` files, on several replicas only: one replica's `.meta`
graph is made from the traced step; before the first step when the initial checkpoint
writes it, else after the first step, reported apart, as is the time the `.meta` graph took
to make either way), `loop trace` (the device loop's tf.function),
`first run` (its first execution: graph optimisation, XLA compilation, the step) and `other`
(input_fn, variables' initial values, hooks, checkpoint); the original's into model_fn and
`other` (finalising the graph, the session, initialisation, the first step). No public mark
lies between ours' trace, loop trace and first run: they are timed by wrapping the engine
(`_common.time_engine_phases`, as `warm_up.py`). With N cores
the XLA compile time is read from TensorFlow's own log (`device_compiler`: summed over the
compiled clusters, which can overlap) and printed separately. `--later` adds, in the same
process, `evaluate(steps=1)` and a second `train(steps=--steps)` (a train/evaluate
alternation), then a restart: a fresh process training on the same model_dir (restoring
its checkpoint).

Processes run one at a time, sides alternating ABBA per repetition and model; every line
carries the 1-minute load average. The depth sweep prints the build cost per added layer
between consecutive depths: constant means linear.

    /work/main/.venv/bin/python bench/first_step.py [--models bert6,bert12,bert24,bert48,
        resnet50,detection] [--repeats 2] [--steps 3] [--cores 8] [--tpu_models bert24,
        resnet50,detection] [--later] [--loop_steps 2] [--original /work/orig/bin/python]

Exits 0 whatever it measures: a measurement, not a test.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

_PROCESS_START = time.perf_counter()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402  pylint: disable=wrong-import-position
import _deep_models  # noqa: E402  pylint: disable=wrong-import-position

CORES_ENV = "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"
PER_CORE_BATCH = 2
MARK = "first_step.py mark:"
# TensorFlow's line after each XLA compilation (TF_CPP_VMODULE=device_compiler=1).
_XLA_LINE = re.compile(r"Compilation of XLA executable time: .*?\((\d+) us\)")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="bert6,bert12,bert24,bert48,resnet50,detection")
    parser.add_argument("--repeats", type=int, default=2, help="fresh processes per side")
    parser.add_argument("--steps", type=int, default=3, help="steps of each train() call")
    parser.add_argument("--cores", type=int, default=8,
                        help="simulated TPU cores for the TPU rows (0: none)")
    parser.add_argument("--tpu_models", default="bert24,resnet50,detection")
    parser.add_argument("--loop_steps", type=int, default=0,
                        help="0: a hook marks the first step (with a hook, loops on one "
                             "device run one step each); N: iterations_per_loop=N and ours "
                             "runs without the hook (the while loop of TPUEstimator's loops), "
                             "its first step timed at the end of its first loop")
    parser.add_argument("--later", action="store_true",
                        help="evaluate, a second train and a restart after the first train")
    parser.add_argument("--original", default="/work/orig/bin/python")
    parser.add_argument("--side", choices=("ours", "original"), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--model_dir", help=argparse.SUPPRESS)
    parser.add_argument("--restart", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.steps < 1 or args.cores < 0:
        parser.error("--repeats and --steps must be >= 1 and --cores >= 0")
    return args


def load():
    return os.getloadavg()[0]


# -- one process ------------------------------------------------------------------------------
class _ModelFnCalls:
    """model_fn wrapped: each call's mode, seconds, start and whether it built a function
    (ours' traced step) or a TF1 graph (the original's calls; ours' for the `.meta` files)."""

    def __init__(self, model_fn, tf):
        self.calls = []
        self._model_fn = model_fn
        self._tf = tf

    def model_fn(self, features, labels, mode, params):
        start = time.perf_counter()
        traced = self._tf.compat.v1.get_default_graph().building_function
        try:
            return self._model_fn(features, labels, mode, params)
        finally:
            self.calls.append((str(mode), time.perf_counter() - start, start, traced))

    def summary(self, since=0):
        calls = self.calls[since:]
        return len(calls), sum(call[1] for call in calls)

    def seconds(self):
        return [round(call[1], 3) for call in self.calls]

    def graph_calls(self, before):
        """Seconds of the TF1-graph calls that started before / after `before`."""
        graph_calls = [call for call in self.calls if not call[3]]
        return (sum(call[1] for call in graph_calls if call[2] < before),
                sum(call[1] for call in graph_calls if call[2] >= before))


def _first_step_hook(tf):
    class FirstStep(tf.compat.v1.train.SessionRunHook):
        """Records when the first step (loop) of a train() call is done."""

        def __init__(self):
            self.done_at = None

        def after_run(self, run_context, run_values):
            if self.done_at is None:
                self.done_at = time.perf_counter()
                self.cpu_at = _common.cpu_seconds()
    return FirstStep()


def _estimator(args, tf, model_fn, model_dir):
    cores = int(os.environ.get(CORES_ENV, "0") or 0)
    batch = PER_CORE_BATCH * max(cores, 1)
    if args.side == "original":
        tpu = tf.compat.v1.estimator.tpu
        make = model_fn(tf.compat.v1.layers, tf.compat.v1.tpu.CrossShardOptimizer,
                        tpu.TPUEstimatorSpec)
        config = tpu.RunConfig(model_dir=model_dir,
                               tpu_config=tpu.TPUConfig(
                                   iterations_per_loop=args.loop_steps or 1))
        return tpu.TPUEstimator(model_fn=make.model_fn, config=config, use_tpu=False,
                                train_batch_size=batch, eval_batch_size=batch), make
    import tpu_estimator_compat as tec  # noqa: PLC0415
    from tpu_estimator_compat.v1 import layers  # noqa: PLC0415
    make = model_fn(layers, tec.CrossShardOptimizer, tec.TPUEstimatorSpec)
    config = tec.RunConfig(model_dir=model_dir, tpu_config=tec.TPUConfig(
        iterations_per_loop=args.loop_steps or 1,
        per_host_input_for_training=tec.InputPipelineConfig.PER_HOST_V2))
    return tec.TPUEstimator(model_fn=make.model_fn, config=config, use_tpu=cores > 0,
                            train_batch_size=batch, eval_batch_size=batch), make


def _mark(name):
    print(f"{MARK} {name}", file=sys.stderr, flush=True)


def measure(args):
    """One process: construction, first train() (and with --later evaluate, second train);
    returns the result dict."""
    if args.side == "ours":
        _common.use_repo_checkout()
    import tensorflow as tf  # noqa: PLC0415
    if args.side == "original":
        tf.compat.v1.disable_v2_behavior()
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    result = {"import": time.perf_counter() - _PROCESS_START}
    phases = _common.time_engine_phases() if args.side == "ours" else {}

    def model_fn(layers, cross_shard_optimizer, spec_class):
        return _ModelFnCalls(_deep_models.make_model_fn(
            args.model, tf, layers, cross_shard_optimizer, spec_class), tf)

    input_fn = _deep_models.make_input_fn(args.model, tf)
    start = time.perf_counter()
    estimator, calls = _estimator(args, tf, model_fn, args.model_dir)
    result["construction"] = time.perf_counter() - start
    hook = _first_step_hook(tf)
    _mark("train")
    start, start_cpu = time.perf_counter(), _common.cpu_seconds()
    loop_marks = args.side == "ours" and args.loop_steps
    estimator.train(input_fn, steps=args.steps, hooks=[] if loop_marks else [hook])
    result["total"] = time.perf_counter() - start
    done_at, cpu_at = ((phases["first_run_end"], phases["first_run_end_cpu"]) if loop_marks
                       else (hook.done_at, hook.cpu_at))
    result["first_step"] = done_at - start
    result["first_step_cpu"] = cpu_at - start_cpu
    result["model_fn_calls"], result["model_fn"] = calls.summary()
    result["model_fn_each"] = calls.seconds()
    if args.side == "ours":
        result["meta_model_fn"], result["meta_model_fn_after"] = calls.graph_calls(done_at)
    result.update(phases)
    if args.later and not args.restart:
        _mark("evaluate")
        seen = len(calls.calls)
        start = time.perf_counter()
        estimator.evaluate(input_fn, steps=1)
        result["evaluate"] = time.perf_counter() - start
        result["evaluate_model_fn_calls"] = calls.summary(seen)[0]
        _mark("second_train")
        seen = len(calls.calls)
        start = time.perf_counter()
        estimator.train(input_fn, steps=args.steps)
        result["second_train"] = time.perf_counter() - start
        result["second_train_model_fn_calls"] = calls.summary(seen)[0]
    _mark("end")
    result["load"] = load()
    return result


# -- the driver -------------------------------------------------------------------------------
def _xla_compile_seconds(stderr):
    """{segment: (compilations, seconds)} from TensorFlow's compile lines between marks."""
    totals, segment = {}, "before"
    for line in stderr.splitlines():
        if line.startswith(MARK):
            segment = line[len(MARK):].strip()
            continue
        found = _XLA_LINE.search(line)
        if found:
            count, seconds = totals.get(segment, (0, 0.0))
            totals[segment] = (count + 1, seconds + int(found.group(1)) / 1e6)
    return totals


def run_process(args, side, model, cores, model_dir, restart=False):
    """One fresh process of `side`; its result dict (None if it failed)."""
    python = args.original if side == "original" else sys.executable
    command = [python, os.path.abspath(__file__), "--side", side, "--model", model,
               "--steps", str(args.steps), "--model_dir", model_dir]
    command += ["--later"] if args.later else []
    command += ["--loop_steps", str(args.loop_steps)]
    command += ["--restart"] if restart else []
    env = dict(os.environ)
    env.pop(CORES_ENV, None)
    if side == "original":
        env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if cores:
        env.update({CORES_ENV: str(cores), "TF_CPP_MIN_LOG_LEVEL": "0",
                    "TF_CPP_VMODULE": "device_compiler=1"})
    load_before = load()
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode or not lines:
        print(f"  {side} {model}: failed (exit {result.returncode}): {result.stderr[-2000:]}",
              flush=True)
        return None
    measured = json.loads(lines[-1])
    measured["load_before"] = load_before
    if cores:
        measured["xla"] = _xla_compile_seconds(result.stderr)
    return measured


def _describe(side, model, cores, r):
    parts = [f"first step {r['first_step']:.2f} s ({r['first_step_cpu']:.1f} CPU s)",
             f"total {r['total']:.2f} s",
             f"model_fn {r['model_fn_calls']}x {r['model_fn']:.2f} s",
             f"construction {r['construction']:.2f}", f"import {r['import']:.1f}"]
    if "trace_train" in r:
        parts.append(f"trace {r['trace_train']:.2f} loop trace {r.get('loop_trace', 0):.2f} "
                     f"first run {r.get('first_run', 0):.2f}")
    if r.get("xla"):
        parts.append("XLA " + ", ".join(f"{k}: {n} x {s:.2f} s" for k, (n, s) in r["xla"].items()))
    for key in ("evaluate", "second_train", "restart_first_step"):
        if key in r:
            parts.append(f"{key} {r[key]:.2f} s")
    return (f"  {side:8s} {model:9s} {'%d cores' % cores if cores else '1 device':8s} "
            + "; ".join(parts) + f" (load {r['load_before']:.1f} -> {r['load']:.1f})")


def collect(args, models, sides, cores):
    """{(side, model): [result...]}, processes one at a time, ABBA per repetition."""
    runs = {}
    for index in range(args.repeats):
        for model in models:
            order = sides if index % 2 == 0 else list(reversed(sides))
            for side in order:
                with tempfile.TemporaryDirectory(prefix=f"first_step_{side}_") as model_dir:
                    r = run_process(args, side, model, cores, model_dir)
                    if r and args.later:
                        restart = run_process(args, side, model, cores, model_dir,
                                              restart=True)
                        if restart:
                            r["restart_first_step"] = restart["first_step"]
                            r["restart_total"] = restart["total"]
                if r:
                    runs.setdefault((side, model), []).append(r)
                    print(_describe(side, model, cores, r), flush=True)
    return runs


def _median(rs, key):
    values = [r[key] for r in rs if key in r]
    return statistics.median(values) if values else float("nan")


def _meta_before(r):
    """Ours' `.meta` model_fn call before the first step (0 when it came after it)."""
    return r["meta_model_fn"] if "meta_model_fn" in r else r["model_fn_each"][-1]


def _ours_split(rs):
    """Medians of ours' first-call phases to the first step: model_fn in the trace (one call
    per replica), build (the rest of the trace), the .meta graph's model_fn call (0 when it
    comes after the first step), loop trace, first run, other."""
    traced = [sum(r["model_fn_each"]) - _meta_before(r) - r.get("meta_model_fn_after", 0)
              for r in rs]
    meta = [_meta_before(r) for r in rs]
    model_fn = statistics.median(traced)
    trace = _median(rs, "trace_train")
    loop_trace, first_run = _median(rs, "loop_trace"), _median(rs, "first_run")
    other = _median(rs, "first_step") - trace - statistics.median(meta) - loop_trace - first_run
    return model_fn, trace - model_fn, statistics.median(meta), loop_trace, first_run, other


def _loads(rs):
    values = [r["load_before"] for r in rs] + [r["load"] for r in rs]
    return f"{min(values):.1f}-{max(values):.1f}"


def report_first_step(runs, models):
    print("\nTime to first step, 1 device (use_tpu=False), medians of fresh processes (s)")
    rows = []
    for model in models:
        ours, original = runs.get(("ours", model), []), runs.get(("original", model), [])
        if not ours or not original:
            continue
        split = _ours_split(ours)
        rows.append([
            model, f"{_median(ours, 'first_step'):.2f}", f"{_median(original, 'first_step'):.2f}",
            f"{_median(ours, 'first_step') / _median(original, 'first_step'):.2f}x",
            f"{_median(ours, 'first_step_cpu'):.1f} / {_median(original, 'first_step_cpu'):.1f}"
            f" = {_median(ours, 'first_step_cpu') / _median(original, 'first_step_cpu'):.2f}x",
            f"{_median(ours, 'total'):.2f}", f"{_median(original, 'total'):.2f}",
            f"{_median(ours, 'total') / _median(original, 'total'):.2f}x",
            " / ".join(f"{v:.2f}" for v in split),
            f"{_median(ours, 'meta_model_fn_after'):.2f}", f"{_median(ours, 'meta_graph'):.2f}",
            f"{_median(original, 'model_fn'):.2f} / "
            f"{_median(original, 'first_step') - _median(original, 'model_fn'):.2f}",
            _loads(ours + original)])
    print(_common.format_table(
        ["model", "ours", "original", "ours/orig", "CPU s ours / orig", "ours total",
         "orig total", "total ratio",
         "ours model_fn/build/.meta model_fn/loop trace/first run/other",
         "ours .meta model_fn after the first step", "ours .meta graph made",
         "orig model_fn/other", "load"], rows))


def report_sweep(runs, models):
    depths = sorted(int(m[4:]) for m in models if m.startswith("bert"))
    if len(depths) < 2:
        return
    print("\nDepth sweep (BERT-style encoder): first step, and seconds per added layer "
          "between consecutive depths (constant = linear)")
    rows = []
    previous = None
    for depth in depths:
        model = f"bert{depth}"
        row = [f"{depth} layers"]
        for side in ("ours", "original"):
            first = _median(runs.get((side, model), []), "first_step")
            cpu = _median(runs.get((side, model), []), "first_step_cpu")
            per_layer = "" if previous is None else (
                f" (+{(first - previous[side][1]) / (depth - previous[side][0]):.3f}/layer, "
                f"CPU +{(cpu - previous[side][2]) / (depth - previous[side][0]):.3f}/layer)")
            row.append(f"{first:.2f}, {cpu:.1f} CPU{per_layer}")
        ours_split = _ours_split(runs.get(("ours", model), []))
        row.append(f"{ours_split[0]:.2f} / {ours_split[1]:.2f} / {ours_split[2]:.2f}")
        rows.append(row)
        previous = {side: (depth, _median(runs.get((side, model), []), "first_step"),
                           _median(runs.get((side, model), []), "first_step_cpu"))
                    for side in ("ours", "original")}
    print(_common.format_table(
        ["depth", "ours s", "original s", "ours model_fn / build / .meta model_fn"], rows))


def report_tpu(runs, models, cores):
    print(f"\n{cores} simulated TPU cores (ours, use_tpu=True, XLA), medians (s); model_fn "
          "calls per TRAIN program (the original on a TPU: 1)")
    rows = []
    for model in models:
        rs = runs.get(("ours", model), [])
        if not rs:
            continue
        compiles = [r.get("xla", {}).get("train", (0, 0.0)) for r in rs]
        meta = statistics.median(_meta_before(r) for r in rs)
        other = (_median(rs, "first_step") - _median(rs, "trace_train") - meta
                 - _median(rs, "loop_trace") - _median(rs, "first_run"))
        rows.append([model, f"{_median(rs, 'first_step'):.2f}",
                     f"{_median(rs, 'first_step_cpu'):.1f}", f"{_median(rs, 'total'):.2f}",
                     str(rs[0]["model_fn_calls"]),
                     " / ".join(f"{v:.2f}" for v in (
                         _median(rs, "trace_train"), meta, _median(rs, "loop_trace"),
                         _median(rs, "first_run"), other)),
                     f"{statistics.median(s for _, s in compiles):.2f} "
                     f"({compiles[0][0]} clusters)", _loads(rs)])
    print(_common.format_table(
        ["model", "first step", "CPU s", "total", "model_fn calls",
         "trace/.meta model_fn/loop trace/first run/other", "XLA compile (summed)", "load"],
        rows))
    print("  (the replicas' model_fn calls run on MirroredStrategy's replica threads: their "
          "times overlap, so the trace is shown whole)")


def report_later(runs, models, cores):
    print(f"\nLater calls ({'%d cores' % cores if cores else '1 device'}), medians (s): the "
          "first train(), evaluate(steps=1) after it, the second train() of the alternation, "
          "a restart's first step and train() (fresh process, same model_dir)")
    rows = []
    for (side, model), rs in sorted(runs.items(), key=lambda item: (item[0][1], item[0][0])):
        if model not in models or "evaluate" not in rs[0]:
            continue
        rows.append([f"{model} {side}", f"{_median(rs, 'total'):.2f}",
                     f"{_median(rs, 'evaluate'):.2f} ({rs[0]['evaluate_model_fn_calls']})",
                     f"{_median(rs, 'second_train'):.2f} "
                     f"({rs[0]['second_train_model_fn_calls']})",
                     f"{_median(rs, 'restart_first_step'):.2f} / "
                     f"{_median(rs, 'restart_total'):.2f}", _loads(rs)])
    print(_common.format_table(["model side", "first train", "evaluate (model_fn calls)",
                                "second train (calls)", "restart first step / train",
                                "load"], rows))


def main(argv=None):
    args = parse_args(argv)
    if args.side:
        print(json.dumps(measure(args)), flush=True)
        os._exit(0)  # pylint: disable=protected-access  (skip the exit's garbage collection)
    models = [m for m in args.models.split(",") if m]
    tpu_models = [m for m in args.tpu_models.split(",") if m] if args.cores else []
    print(f"load before: {load():.2f}; {args.steps} steps per train(), {args.repeats} "
          "fresh process(es) per side", flush=True)
    runs = collect(args, models, ["ours", "original"], 0) if models else {}
    tpu_runs = collect(args, tpu_models, ["ours"], args.cores) if tpu_models else {}
    if runs:
        report_first_step(runs, models)
        report_sweep(runs, models)
    if tpu_runs:
        report_tpu(tpu_runs, tpu_models, args.cores)
    if args.later:
        report_later(runs, models, 0)
        if tpu_runs:
            report_later(tpu_runs, tpu_models, args.cores)
    print(f"load after: {load():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
