"""TF 1.15's `tf.estimator.experimental.InMemoryEvaluatorHook` (earlier
`tf.contrib.estimator.InMemoryEvaluatorHook`): evaluates the weights being trained, without
waiting for a checkpoint, before training, every `every_n_iter` training runs and at the
end, into the estimator's eval dir (`eval_<name>`).

TF1 built the eval graph in `begin()` and copied the training Session's variables into it.
Here the hook reads the training variables through the hook's session (their current
values, replica 0's), writes them to a temporary checkpoint and runs
`evaluate(input_fn, steps, hooks, checkpoint_path=<it>, name)` on a copy of the estimator
with engines of its own (training's variables stay untouched): the same metrics, written
at the same global step (partitioned variables saved as slices, as TF1's Saver did). The
weights a `train()` call starts from are read when its session is created (in the step's
trace, where no evaluation can run) and evaluated once its first training run is done;
TF1 evaluated them just before that run. As in TF1, every `train()` call evaluates its
starting weights, so the step one call ended on is evaluated again by the next.
"""
import os
import shutil
import tempfile

import tensorflow as tf

from tpu_estimator_compat.tf_internals import training

_v1 = tf.compat.v1


def _write_checkpoint(prefix, saved_as, values):
    """A TF1 name-based checkpoint at `prefix` of `values` ({key: numpy value}), each saved
    as `saved_as[key]`: (checkpoint name, slice spec; "" for a whole variable)."""
    with tf.Graph().as_default() as graph:
        keys = sorted(values)
        save = tf.raw_ops.SaveV2(prefix=prefix,
                                 tensor_names=[saved_as[key][0] for key in keys],
                                 shape_and_slices=[saved_as[key][1] for key in keys],
                                 tensors=[tf.constant(values[key]) for key in keys])
        with _v1.Session(graph=graph) as session:
            session.run(save)


def _saved_as(variable):
    """How TF1's Saver names `variable` in a checkpoint: (name, slice spec); a part of a
    partitioned variable is a slice of the whole."""
    return training.save_slice_info(variable) or (variable.op.name, "")


class InMemoryEvaluatorHook(_v1.train.SessionRunHook):
    """Evaluates `estimator` on `input_fn` during its training, every `every_n_iter`
    training runs (session runs: steps with Estimator, device loops with TPUEstimator)."""

    def __init__(self, estimator, input_fn, steps=None, hooks=None, name=None,
                 every_n_iter=100):
        if every_n_iter is None or every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if estimator.config.num_ps_replicas > 0 or estimator.config.num_worker_replicas > 1:
            raise ValueError("InMemoryEvaluator supports only single machine (aka Local) "
                             "setting.")
        self._estimator = estimator._in_memory_evaluator()  # pylint: disable=protected-access
        self._input_fn = input_fn
        self._steps = steps
        self._hooks = list(hooks or [])
        self._name = name
        self._every_n_iter = every_n_iter
        self._variables = self._saved_as = {}
        self._pending = None
        self._iter_count = 0
        self._last_evaluated = 0

    def begin(self):
        self._iter_count = self._last_evaluated = 0
        self._variables = {v.op.name: v for v in _v1.global_variables()}
        self._saved_as = {key: _saved_as(v) for key, v in self._variables.items()}

    def after_create_session(self, session, coord):
        del coord
        self._pending = session.run(self._variables)

    def after_run(self, run_context, run_values):
        del run_values
        if self._pending is not None:
            self._evaluate(self._pending)
            self._pending = None
        self._iter_count += 1
        if self._iter_count - self._last_evaluated >= self._every_n_iter:
            self._evaluate(run_context.session.run(self._variables))
            self._last_evaluated = self._iter_count

    def end(self, session):
        if self._pending is not None:  # no training run: the weights before it, evaluated
            self._evaluate(self._pending)
            self._pending = None
        self._evaluate(session.run(self._variables))

    def _evaluate(self, values):
        directory = tempfile.mkdtemp(prefix="in_memory_evaluator_")
        try:
            prefix = os.path.join(directory, "model.ckpt")
            _write_checkpoint(prefix, self._saved_as, values)
            self._estimator.evaluate(self._input_fn, steps=self._steps, hooks=self._hooks,
                                     checkpoint_path=prefix, name=self._name)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
