"""The host side of `evaluate()`: run the eval loop once, then compute the results.

    hooks: before_run
    outputs = inference_loop(iterator, steps or "until every replica has seen the end")
    hooks: after_run (values of the last step with real rows); end
    for each step with real rows:  metric_fn updates on the step's tensors, padding dropped
                                   (use_tpu=False: a scalar tensor is one value per step)
    results = metric values + loss (mean over steps) + global_step
    (no example at all: metric_fn's values over zero rows and loss 0, as TF1)

With TPU semantics the eval loop runs all steps in one `tf.function` execution, as the
original ran all eval steps in one Session.run, so evaluation hooks see one
before_run/after_run; with CPU semantics loops end where an `Evaluation [k/N]` line is due
(`lifecycle_log.py`), or after every step for hooks.
"""
from typing import Any, Dict, Optional

import numpy as np
import tensorflow as tf

from tpu_estimator_compat.host import host_calls
from tpu_estimator_compat.host import lifecycle_log
from tpu_estimator_compat.host import loop_actions
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.host import multi_worker
from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.host import summaries

_UNTIL_THE_END = np.iinfo(np.int32).max


@multi_worker.explains_worker_failures("Evaluation")
def run_evaluation(engine, compiled, iterator, *, steps: Optional[int], global_step: int,
                   eval_dir: str, checkpoint_path: Optional[str], hook_run,
                   rows_per_replica_copy: Optional[int] = None,
                   steps_per_loop: Optional[int] = None) -> Dict[str, Any]:
    """Evaluates and writes the results; returns the results dict.

    Args:
      engine, compiled, iterator: the call's `ModelEngine`, its `CompiledMode` of EVAL and
        the distributed iterator (read by their fields: the host does not import the engine).
      rows_per_replica_copy: with BROADCAST input every replica sees the same batch; only
        replica 0's rows (this many per step) count, as in the original.
      hook_run: the call's started `hooks.HookRun`.
      steps_per_loop: None runs every step in one loop (the hooks see one run, as with
        TPUEstimator on TPU); 1 runs them in loops of one step (the hooks see each step, as
        with Estimator).
    """
    for name in ("eval_metrics", "host_call"):  # dicts not matching the fn: fail now
        if getattr(compiled.traced.spec, name, None):
            spec_lib.check_keyword_args(name, getattr(compiled.traced.spec, name))
    scalars = None if engine.runtime.tpu_semantics else _scalar_metric_tensors(
        compiled.traced.spec)
    traced = compiled.traced
    if traced.metric_fn is not None and traced.metric_fn_runners is None:
        # a metric_fn that fails: before any step (once per compiled program); the runner
        # built on full steps' tensors is the one later calls use
        replicas = 1 if rows_per_replica_copy else engine.runtime.num_replicas
        runners = host_calls.MetricFnRunners(traced.metric_fn)
        runners.runner(_step_specs(traced.spec.eval_metrics[1], replicas),
                       scalars=bool(scalars), static_rows=True)
        traced.metric_fn_runners = runners
    engine.store.reset_local_variables()
    progress = lifecycle_log.EvaluationProgress(steps)
    progress.start()
    outputs = _run_loops(compiled, iterator, steps or _UNTIL_THE_END, steps_per_loop,
                         loop_actions.LoopActions([loop_actions.HookActions(hook_run)]),
                         global_step, progress, engine.runtime.tpu_semantics)
    progress.finish()
    steps_run = _per_step(outputs, rows_per_replica_copy, scalars)
    loss_steps = outputs.loss_has_real_rows
    results = {}
    if traced.metric_fn is not None:
        results.update(_metric_fn_results(traced.metric_fn_runners, steps_run,
                                          outputs.batches, scalars))
    if outputs.metric_updates is not None:
        last_real = np.flatnonzero(loss_steps)
        if last_real.size or not steps_run:  # no example at all: zero-row stop batches only
            at = last_real[-1] if last_real.size else -1
            results.update({name: values[at]
                            for name, values in outputs.metric_updates.items()})
    spec_lib.validate_metric_names(results)
    is_chief = engine.runtime.is_chief  # with several workers, only the chief writes
    if traced.host_call_fn is not None and is_chief:
        _run_host_call(traced.host_call_fn, steps_run, global_step)
    if loss_steps.any():
        results["loss"] = np.float32(np.mean(outputs.loss[loss_steps]))
    else:  # TF1's mean loss over no example is 0; NaN when only replica 0 had none
        results["loss"] = np.float32("nan" if steps_run else 0.0)
    results["global_step"] = np.int64(global_step)  # numpy scalars, as TF1's session gave
    _report(results, global_step, eval_dir if is_chief else None, checkpoint_path)
    return results


def _run_loops(compiled, iterator, steps, steps_per_loop, actions, global_step, progress,
               tpu_semantics):
    """Runs the eval loop until `steps`, the end of the input or an action's stop request
    (`loop_actions.run_loops`), logging the original's progress lines; returns the
    `InferenceLoopResult` of all its steps, as numpy."""
    runs = []
    remaining = steps

    def next_size(step):
        del step  # evaluation does not move the global step
        if remaining <= 0:
            return 0
        return min(remaining, steps_per_loop or (
            remaining if tpu_semantics else progress.steps_until_next_line()))

    def run_loop(size, step):
        nonlocal remaining
        if tpu_semantics and size < _UNTIL_THE_END:
            lifecycle_log.infeed_outfeed(size)
        with _running_steps(progress.done + 1, size):
            run = compiled.loop(iterator, tf.constant(size)).numpy()
        runs.append(run)
        progress.steps_done(int(np.sum(~run.stop.astype(bool))), each_step=not tpu_semantics)
        final = remaining <= size
        remaining -= size
        return loop_actions.LoopEnd(
            run, first_step=step, step=step, final=final,
            only_padding=not run.loss_has_real_rows.any(),
            input_ended=len(run.stop) < size or bool(run.stop[-1]))

    for _ in loop_actions.run_loops(actions, global_step, next_size, run_loop):
        pass
    return runs[0].concatenate(*runs[1:])


def _running_steps(first, size):
    """The heartbeat of an eval loop of `size` steps from step `first` of the evaluation."""
    if size == _UNTIL_THE_END:
        return logging.phase("running evaluation steps from %d until the input ends", first)
    return logging.phase("running evaluation steps %d to %d", first, first + size - 1)


def _step_specs(tensors, replicas):
    """TensorSpecs of a step's rows of the replica's `tensors`, concatenated over `replicas`
    (first dimension None where the replica's is unknown)."""
    def spec(tensor):
        shape = tf.TensorShape(tensor.shape)
        if shape.rank:
            rows = tf.compat.dimension_value(shape[0])
            shape = tf.TensorShape([None if rows is None else rows * replicas]).concatenate(
                shape[1:])
        return tf.TensorSpec(shape, tensor.dtype)
    return tf.nest.map_structure(spec, tensors)


def _scalar_metric_tensors(spec):
    """Which `eval_metrics` tensors are scalars, flattened (`tf.nest` order); None if none.
    Without TPU semantics the engine sends each as one row per step (one replica)."""
    eval_metrics = getattr(spec, "eval_metrics", None)
    if not eval_metrics:
        return None
    flags = [np.ndim(t) == 0 if not hasattr(t, "shape") else t.shape.rank == 0
             for t in tf.nest.flatten(eval_metrics[1])]
    return flags if any(flags) else None


def _per_step(outputs, rows_per_replica_copy, scalars=None):
    """The `BatchOutputs` of the steps that had any real row: their real rows of metrics
    (mask dropped); the `scalars` (flattened flags) as 0-d arrays."""
    steps = []
    for step in outputs.batches_per_step():
        mask = step.mask.astype(bool)
        metrics = step.metrics if step.metrics is not None else {}
        if rows_per_replica_copy:  # only replica 0's copy counts
            metrics = _map_metrics(
                metrics, scalars, lambda v: v,
                lambda v: v[:len(v) * rows_per_replica_copy // len(mask)])  # replica 0's
            mask = mask[:rows_per_replica_copy]
        if not mask.any():
            continue
        steps.append(step._replace(mask=None, metrics=_map_metrics(
            metrics, scalars, lambda v: v[0], lambda v: _real_rows(v, mask))))
    return steps


def _map_metrics(metrics, scalars, on_scalar, on_rows):
    """`metrics` with `on_scalar` applied to the tensors flagged in `scalars` (flattened
    flags, or None), `on_rows` to the others."""
    flat = tf.nest.flatten(metrics)
    flags = scalars or [False] * len(flat)
    return tf.nest.pack_sequence_as(
        metrics, [on_scalar(v) if scalar else on_rows(v) for v, scalar in zip(flat, flags)])


def _real_rows(values, mask):
    """The rows of `values` that belong to real examples.

    A tensor's rows need not be one per example: `[batch * k]` (a `[batch, k]` tensor
    reshaped to `[-1]`, BERT's masked-LM metrics) has k rows per example, in example order
    on each replica, as the mask has one per example.
    """
    if len(values) == len(mask):
        return values[mask]
    if len(mask) and len(values) % len(mask) == 0:
        return values[np.repeat(mask, len(values) // len(mask))]
    if mask.all():
        return values
    raise ValueError(
        f"An eval_metrics tensor has {len(values)} rows in a step whose batch has "
        f"{len(mask)} examples, some of them padding: its rows cannot be matched to "
        "examples to drop the padding. Give every tensor passed to metric_fn a first "
        "dimension that is the batch size or a multiple of it (k rows per example), or "
        "use an input whose size is a multiple of the batch size.")


def _metric_fn_results(runners, steps, batches, scalars=None):
    """The metrics over every step's real rows; over zero rows when there was no example
    (as TF1, e.g. accuracy 0.0). `runners`: the metric_fn's `host_calls.MetricFnRunners`."""
    if not steps:
        empty = _map_metrics(batches.metrics if batches.metrics is not None else {}, scalars,
                             lambda v: np.zeros([], np.asarray(v).dtype),
                             lambda v: np.asarray(v)[:0])
        return runners.runner(empty, scalars=bool(scalars)).result()
    runner = runners.runner(steps[0].metrics, scalars=bool(scalars),
                            static_rows=_same_rows(steps))
    for step in steps:
        runner.update(step.metrics)
    return runner.result()


def _same_rows(steps):
    """Whether every step's metric tensors have the first step's first dimensions: then
    `metric_fn` sees them static, as TF1 on TPU (full batches); else None."""
    def rows(step):
        return [np.shape(v)[:1] for v in tf.nest.flatten(step.metrics)]
    return all(rows(step) == rows(steps[0]) for step in steps)


def _run_host_call(fn, steps, global_step):
    if not steps:
        return
    runner = host_calls.HostCallRunner(fn, steps[0].host_call)
    try:
        for step in steps:
            runner(step.host_call, global_step=global_step)
    finally:
        runner.close()


class EvalResultsWriteError(OSError):
    """The evaluation ran but its results could not be written to eval_dir (disk full,
    permissions). `results` holds them; they were logged before the write."""

    def __init__(self, eval_dir, results, cause):
        self.eval_dir = eval_dir
        self.results = dict(results)
        detail = (str(getattr(cause, "message", cause)).strip().splitlines()
                  or [type(cause).__name__])[-1]
        super().__init__(
            f"Could not write the evaluation results into {eval_dir}: {detail}. The "
            f"evaluation itself finished: {_describe(results)} (logged above; also this "
            "error's `results`). Free disk space or fix the directory's permissions, then "
            "evaluate again to write them.")


def _report(results, global_step, eval_dir, checkpoint_path):
    logging.info("Saving dict for global step %d: %s", global_step, _describe(results))
    if eval_dir is None:
        return
    if checkpoint_path:
        logging.info("Saving 'checkpoint_path' summary for global step %d: %s", global_step,
                     checkpoint_path)
    try:
        writer = summaries.shared_writer(eval_dir)
        writer.write_eval_results(global_step, results, checkpoint_path)
        writer.flush()
    except (tf.errors.OpError, OSError) as error:
        raise EvalResultsWriteError(eval_dir, results, error) from error


def _describe(results):
    return ", ".join(f"{k} = {results[k]!s}" for k in sorted(results))  # TF1's float32 text
