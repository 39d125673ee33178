"""TF 1.15's early stopping (`tf.estimator.experimental.stop_if_*_hook`,
`make_early_stopping_hook`, `tf.contrib.estimator.read_eval_metrics`...).

The hooks read the evaluator's event files (`estimator.eval_dir()`, one scalar per metric
and evaluated step) and request a stop when a condition on them holds, as TF 1.15's did.
A hook's `after_run` runs once per step for an `Estimator`, once per device loop for a
`TPUEstimator` (`iterations_per_loop` steps), so with TPU semantics the stop falls at the
end of the loop in which the condition is first seen, as in TF 1.15's TPUEstimator.

Unlike TF 1.15, no `signal_early_stopping/STOP` variable is added to the model: every task
that runs the hook reads the evaluator's files itself (TF 1.15's non-chief workers read the
chief's variable instead).
"""
import collections
import operator
import os

import tensorflow as tf

from tpu_estimator_compat import log as logging

_EVENT_FILES = "events.out.tfevents.*"


def read_eval_metrics(eval_dir):
    """The scalar summaries of `eval_dir`'s event files.

    Args:
      eval_dir: directory holding the evaluator's event files.

    Returns:
      An `OrderedDict` of global step (ascending) -> `{tag: value}` for the summaries
      written as simple values; empty if the directory does not exist.
    """
    by_step = collections.defaultdict(dict)
    for event in _events(eval_dir):
        if not event.HasField("summary"):
            continue
        values = {value.tag: value.simple_value for value in event.summary.value
                  if value.HasField("simple_value")}
        if values:
            by_step[event.step].update(values)
    return collections.OrderedDict(sorted(by_step.items()))


def _events(eval_dir):
    if not tf.io.gfile.exists(eval_dir):
        return
    for path in tf.io.gfile.glob(os.path.join(eval_dir, _EVENT_FILES)):
        try:
            yield from tf.compat.v1.train.summary_iterator(path)
        except tf.errors.DataLossError as error:
            logging.warning(
                "Skipping rest of the file due to encountering data corruption error; "
                "file path: %s; original error raised by `tf.train.summary_iterator`: %s",
                path, error)


def make_early_stopping_hook(estimator, should_stop_fn, run_every_secs=60,
                             run_every_steps=None):
    """A hook that stops training when `should_stop_fn()` returns True.

    Args:
      estimator: the `Estimator` (or `TPUEstimator`) the hook trains.
      should_stop_fn: function of no arguments returning a bool.
      run_every_secs: call `should_stop_fn` at most this often (seconds); or
      run_every_steps: every this many global steps (only one of the two may be set).

    Returns:
      A `SessionRunHook`.
    """
    _check_estimator(estimator)
    if run_every_secs is not None and run_every_steps is not None:
        raise ValueError("Only one of `run_every_secs` and `run_every_steps` must be set.")
    return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps)


def stop_if_higher_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0,
                        run_every_secs=60, run_every_steps=None):
    """Stops training once an evaluation at step >= `min_steps` has `metric_name` > `threshold`."""
    return _threshold_hook(estimator, metric_name, threshold, operator.gt, eval_dir,
                           min_steps, run_every_secs, run_every_steps)


def stop_if_lower_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0,
                       run_every_secs=60, run_every_steps=None):
    """Stops training once an evaluation at step >= `min_steps` has `metric_name` < `threshold`."""
    return _threshold_hook(estimator, metric_name, threshold, operator.lt, eval_dir,
                           min_steps, run_every_secs, run_every_steps)


def stop_if_no_increase_hook(estimator, metric_name, max_steps_without_increase,
                             eval_dir=None, min_steps=0, run_every_secs=60,
                             run_every_steps=None):
    """Stops training once `metric_name`'s best evaluation (highest, from step `min_steps`)
    is `max_steps_without_increase` steps older than a later evaluation."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_increase,
                                operator.gt, eval_dir, min_steps, run_every_secs,
                                run_every_steps)


def stop_if_no_decrease_hook(estimator, metric_name, max_steps_without_decrease,
                             eval_dir=None, min_steps=0, run_every_secs=60,
                             run_every_steps=None):
    """Stops training once `metric_name`'s best evaluation (lowest, from step `min_steps`)
    is `max_steps_without_decrease` steps older than a later evaluation."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_decrease,
                                operator.lt, eval_dir, min_steps, run_every_secs,
                                run_every_steps)


def _threshold_hook(estimator, metric_name, threshold, better, eval_dir, min_steps,
                    run_every_secs, run_every_steps):
    _check_estimator(estimator)
    eval_dir = estimator.eval_dir() if eval_dir is None else eval_dir
    side = "greater than" if better is operator.gt else "less than"

    def crossed():
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps:
                continue
            value = _metric(metrics, metric_name, step, eval_dir)
            if better(value, threshold):
                logging.info('At step %s, metric "%s" has value %s which is %s the configured '
                             "threshold (%s) for early stopping.", step, metric_name, value,
                             side, threshold)
                return True
        return False

    return make_early_stopping_hook(estimator, crossed, run_every_secs, run_every_steps)


def _no_improvement_hook(estimator, metric_name, max_steps, better, eval_dir, min_steps,
                         run_every_secs, run_every_steps):
    _check_estimator(estimator)
    eval_dir = estimator.eval_dir() if eval_dir is None else eval_dir
    change = "increase" if better is operator.gt else "decrease"

    def stalled():
        best = best_step = None
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps:
                continue
            value = _metric(metrics, metric_name, step, eval_dir)
            if best is None or better(value, best):
                best, best_step = value, step
            if step - best_step >= max_steps:
                logging.info('No %s in metric "%s" for %s steps, which is greater than or '
                             "equal to max steps (%s) configured for early stopping.",
                             change, metric_name, step - best_step, max_steps)
                return True
        return False

    return make_early_stopping_hook(estimator, stalled, run_every_secs, run_every_steps)


def _metric(metrics, name, step, eval_dir):
    if name not in metrics:
        raise KeyError(f"Early stopping: no metric {name!r} in the evaluation of step {step} "
                       f"in {eval_dir} (it has {sorted(metrics)}); name one of these, or "
                       "return it from the model_fn's eval_metric_ops/eval_metrics.")
    return metrics[name]


def _check_estimator(estimator):
    if not (hasattr(estimator, "eval_dir") and hasattr(estimator, "config")):
        raise TypeError("`estimator` must have type `tf.estimator.Estimator`. "
                        f"Got: {type(estimator)}")


class _StopOnPredicateHook(tf.compat.v1.train.SessionRunHook):
    """Requests a stop when `should_stop_fn()` is True, checked on its timer's steps."""

    def __init__(self, should_stop_fn, run_every_secs, run_every_steps):
        if not callable(should_stop_fn):
            raise TypeError("`should_stop_fn` must be callable.")
        self._should_stop_fn = should_stop_fn
        self._timer = tf.compat.v1.train.SecondOrStepTimer(
            every_secs=run_every_secs, every_steps=run_every_steps)
        self._global_step = None

    def begin(self):
        self._global_step = tf.compat.v1.train.get_global_step()

    def before_run(self, run_context):
        del run_context
        return tf.compat.v1.train.SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        step = run_values.results
        if not self._timer.should_trigger_for_step(step):
            return
        self._timer.update_last_triggered_step(step)
        if self._should_stop_fn():
            logging.info("Requesting early stopping at global step %d", step)
            run_context.request_stop()
