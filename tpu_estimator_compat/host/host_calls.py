"""Runs a TPUEstimatorSpec's `eval_metrics` and `host_call` functions on the host.

The engine returns each step's `eval_metrics` / `host_call` tensors from the device loop,
concatenated across replicas on axis 0, as numpy arrays with the structure the user gave
(list/tuple: positional arguments, dict: keyword arguments). The user's function is TF1 code
(`tf.compat.v1.metrics.*`, `tf.contrib.summary`) that only works in a graph, so each runner
builds one `tf.Graph` at construction, as TF1 built its graph once:

    placeholders (batch dimension None)  ->  fn(*placeholders)  ->  ops run once per step

and a `tf.compat.v1.Session`. A step is then a single session call, and the graph is
finalized, so no op is built after construction. Runners are eager-side objects: call them
outside `tf.function`, once per step, in step order.
"""
import numpy as np
import tensorflow as tf
from absl import logging

from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.rebuilt_apis import contrib_summary

_SCALAR_MESSAGE = ("All tensors outfed from TPU should preserve batch size dimension, but got "
                   "scalar ")
_SUMMARY_MESSAGE = "Please use tf.contrib.summary instead of tf.summary inside of host_calls."


class _HostInputs:
    """The flattened inputs of a host function: validation, placeholders and per-step feeds.

    Args:
      kind: `"eval_metrics"` or `"host_call"`, for messages.
      example_tensors: A list/tuple or dict of numpy arrays, `tf.TensorSpec`s or tensors
        whose dtype and non-batch dimensions the per-step tensors will have.
      scalars: Whether a scalar example is fed as a scalar (TF1's CPU path) instead of
        raising TPU's error.
      static_rows: Whether the placeholders keep the examples' first dimension (every step
        has that many rows, as TF1's static concatenated shapes) instead of None.
    """

    def __init__(self, kind, example_tensors, scalars=False, static_rows=False):
        if isinstance(example_tensors, dict):
            self._keys = sorted(example_tensors)
        elif isinstance(example_tensors, (list, tuple)):
            self._keys = list(range(len(example_tensors)))
        else:
            raise TypeError(f"{kind}[1] should be tuple or list, or dict; got "
                            f"{type(example_tensors).__name__}: {example_tensors!r}")
        self._kind = kind
        self._scalars = scalars
        self._static_rows = static_rows
        self._is_dict = isinstance(example_tensors, dict)
        self._specs = [self._spec(key, example_tensors[key]) for key in self._keys]
        self._np_dtypes = [spec.dtype.as_numpy_dtype for spec in self._specs]
        self.placeholders = None
        self.signature = (self._is_dict, tuple(self._keys), scalars, tuple(
            (tuple(spec.shape.as_list()) if spec.shape.rank is not None else None,
             spec.dtype.name) for spec in self._specs))

    def _spec(self, key, value):
        if isinstance(value, tf.TensorSpec) or tf.is_tensor(value):
            shape, dtype = tf.TensorShape(value.shape), tf.as_dtype(value.dtype)
        else:
            array = np.asarray(value)
            shape = tf.TensorShape(array.shape)
            dtype = tf.string if array.dtype.kind in "USO" else tf.as_dtype(array.dtype)
        if shape.rank == 0 and self._scalars:
            return tf.TensorSpec([], dtype)
        if shape.rank == 0:
            raise RuntimeError(
                f"{_SCALAR_MESSAGE}{self._kind}[1][{key!r}] ({dtype.name}: {value!r}). "
                f"Reshape it to shape [1] in model_fn, e.g. tf.reshape(x, [1]); the host "
                f"then receives one row per replica.")
        if shape.rank is not None and not self._static_rows:
            shape = tf.TensorShape([None]).concatenate(shape[1:])
        return tf.TensorSpec(shape, dtype)

    def build(self):
        """Creates the placeholders in the default graph; returns the structure to pass."""
        with tf.compat.v1.name_scope(f"{self._kind}_inputs"):
            self.placeholders = [
                tf.compat.v1.placeholder(spec.dtype, spec.shape, name=_op_name(key))
                for key, spec in zip(self._keys, self._specs)]
        if self._is_dict:
            return dict(zip(self._keys, self.placeholders))
        return list(self.placeholders)

    def call(self, fn, structure):
        """Calls `fn` the TF1 way: dict -> keyword arguments, list -> positional."""
        return fn(**structure) if self._is_dict else fn(*structure)

    def feeds(self, step_tensors):
        """One step's arrays, in placeholder order and dtype."""
        try:
            values = [step_tensors[key] for key in self._keys]
        except (KeyError, IndexError, TypeError) as error:
            raise ValueError(
                f"{self._kind} tensors for this step do not match the structure given at "
                f"construction (keys {self._keys}): {error!r}") from None
        if len(step_tensors) != len(self._keys):
            raise ValueError(f"{self._kind} expects {len(self._keys)} tensors per step, got "
                             f"{len(step_tensors)}.")
        return [np.asarray(v, dtype=d) for v, d in zip(values, self._np_dtypes)]


def _note_first_dimensions(kind, tensors):
    """Logs (once per runner) tensors whose first dimensions differ: legal, as in TF1 (each
    is concatenated across replicas on its own), but often a forgotten reshape."""
    keys = sorted(tensors) if isinstance(tensors, dict) else range(len(tensors))
    shapes = {key: tf.TensorShape(tensors[key].shape if hasattr(tensors[key], "shape")
                                  else np.shape(tensors[key])) for key in keys}
    rows = {key: tf.compat.dimension_value(shape[0])  # a v1 Dimension after
            for key, shape in shapes.items() if shape.rank}  # disable_v2_behavior()
    rows = {key: count for key, count in rows.items() if count is not None}
    if len(set(rows.values())) > 1:
        logging.info(
            "The %s tensors have different first dimensions (%s, concatenated across "
            "replicas): each reaches the function with its own rows, as in TF1. Reshape them "
            "to one batch dimension if they should line up row by row.", kind,
            ", ".join(f"{key!r}: {count}" for key, count in rows.items()))


class MetricFnRunner:
    """Evaluates `eval_metrics=(metric_fn, tensors)` step by step, with TF1 v1 metrics.

    `metric_fn` is called once, on placeholders, and must return
    `{name: (value_tensor, update_op)}`; `update` runs every update op for one step,
    `result` reads every value.

    Args:
      metric_fn: The user's metric function.
      example_tensors: The tensor structure of one step (numpy arrays or `tf.TensorSpec`s,
        batch dimension of any size).
      scalars: Whether scalars are fed to `metric_fn` as scalars, one per step (the
        original with use_tpu=False); else they raise TPU's error.
      static_rows: Whether `metric_fn`'s inputs keep the examples' first dimension (every
        step has that many rows): on TPU, TF1's `metric_fn` saw the outfeed's static shapes
        (`tf.size` folds to a constant of any `out_type`, reshapes infer their -1).

    Raises:
      RuntimeError: If an example tensor is a scalar (no batch dimension), unless `scalars`.
      TypeError: If `metric_fn` does not return a dict of `(value, update_op)` pairs.
    """

    def __init__(self, metric_fn, example_tensors, scalars=False, static_rows=False):
        self._inputs = _HostInputs("eval_metrics", example_tensors, scalars, static_rows)
        _note_first_dimensions("eval_metrics", example_tensors)
        self._graph = tf.Graph()
        with self._graph.as_default():
            metrics = self._inputs.call(metric_fn, self._inputs.build())
            values, update_ops = _split_metrics(metric_fn, metrics)
            update = tf.group(*update_ops)
            init = _initializers()
            reset = tf.group(tf.compat.v1.global_variables_initializer(),
                             tf.compat.v1.local_variables_initializer())
        self._graph.finalize()
        self._session = tf.compat.v1.Session(graph=self._graph)
        self._session.run(init)
        self._update = self._session.make_callable(update, feed_list=self._inputs.placeholders)
        self._values = self._session.make_callable(values)
        self._reset = self._session.make_callable(reset)
        self.names = sorted(values)

    def update(self, step_tensors):
        """Runs all update ops on one step's concatenated tensors (one session call)."""
        self._update(*self._inputs.feeds(step_tensors))

    def result(self):
        """The current value of every metric: `{name: numpy value}`."""
        return self._values()

    def reset(self):
        """Re-initialises the metric variables (and any other variable `metric_fn` made)."""
        self._reset()

    def close(self):
        """Releases the session; the runner cannot be used afterwards."""
        self._session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class MetricFnRunners:
    """The `MetricFnRunner`s of one `metric_fn`, one per input signature, kept across
    evaluate() calls of one compiled program: TF1 built the metric graph anew for every
    evaluate(); here it is built once and its variables are re-initialised before each use,
    so each call starts from the same state as TF1's fresh graph."""

    def __init__(self, metric_fn):
        self._metric_fn = metric_fn
        self._runners = {}

    def runner(self, example_tensors, scalars=False, static_rows=False):
        """A runner for `example_tensors` (`MetricFnRunner`'s arguments), in its initial
        state."""
        key = _HostInputs("eval_metrics", example_tensors, scalars, static_rows).signature
        runner = self._runners.get(key)
        if runner is None:
            runner = self._runners[key] = MetricFnRunner(
                self._metric_fn, example_tensors, scalars, static_rows)
        else:
            runner.reset()
        return runner


class HostCallRunner:
    """Runs `host_call=(fn, tensors)` once per step, the way TF1 ran the fn's ops.

    `fn` is called once, on placeholders, in a fresh graph. It may return an op, a tensor, a
    (nested) list/tuple/dict of them, or None. Every summary op it creates (contrib or TF2
    `tf.summary`) runs each step too, whether returned or not; summary writers it creates are
    initialised here and flushed by `flush()` / `close()`.

    The graph has a global step (`tf.compat.v1.train.get_global_step()`), an int64 scalar fed
    from the `global_step` argument of each call, so `step=None` summaries and
    `record_summaries_every_n_global_steps(n)` work as in TF1.

    Args:
      fn: The user's host_call function.
      example_tensors: The tensor structure of one step (numpy arrays or `tf.TensorSpec`s).

    Raises:
      RuntimeError: If an example tensor is a scalar (no batch dimension).
      ValueError: If `fn` creates TF1 `tf.compat.v1.summary.*` ops.
      TypeError: If `fn` returns something that cannot be run.
    """

    def __init__(self, fn, example_tensors):
        self._fn = fn
        self._inputs = _HostInputs("host_call", example_tensors)
        _note_first_dimensions("host_call", example_tensors)
        self._graph = tf.Graph()
        with self._graph.as_default():
            structure = self._inputs.build()
            global_step = tf.compat.v1.placeholder(
                tf.int64, [], name="host_call_inputs/global_step")
            self._graph.add_to_collection(tf.compat.v1.GraphKeys.GLOBAL_STEP, global_step)
            returned = self._inputs.call(fn, structure)
            if self._graph.get_collection(tf.compat.v1.GraphKeys.SUMMARIES):
                raise ValueError(_SUMMARY_MESSAGE)
            self._returns_none = returned is None
            fetches = [_runnable(fn, returned), contrib_summary.all_summary_ops()]
            init = tf.group(*contrib_summary.writer_init_ops(self._graph), _initializers())
            writers = [op.outputs[0] for op in self._graph.get_operations()
                       if op.type == "SummaryWriter"]
            flush = tf.group(*[tf.raw_ops.FlushSummaryWriter(writer=w) for w in writers])
            with tf.control_dependencies([flush]):
                close = tf.group(*[tf.raw_ops.CloseSummaryWriter(writer=w) for w in writers])
        self._graph.finalize()
        self._uses_global_step = bool(global_step.consumers())
        feed_list = list(self._inputs.placeholders)
        if self._uses_global_step:
            feed_list.append(global_step)
        self._session = tf.compat.v1.Session(graph=self._graph)
        self._session.run(init)
        self._run = self._session.make_callable(fetches, feed_list=feed_list)
        self._flush = self._session.make_callable(flush)
        self._close_writers = self._session.make_callable(close)
        self._closed = False

    def __call__(self, step_tensors, global_step=None):
        """Runs the host call for one step.

        Args:
          step_tensors: This step's concatenated tensors, structured like `example_tensors`.
          global_step: The global step of this step, required when `fn` reads the global
            step. Pass the value the step's model_fn saw (before its increment), so that
            `step=None` summaries agree with a global step outfed from model_fn.

        Returns:
          The values of what `fn` returned (None for ops), or None if it returned None.
        """
        feeds = self._inputs.feeds(step_tensors)
        if self._uses_global_step:
            if global_step is None:
                raise ValueError(
                    f"host_call fn {self._fn!r} reads the global step (directly or through "
                    "step=None summaries); pass `global_step=` with every step's tensors.")
            feeds.append(np.int64(global_step))
        returned, _ = self._run(*feeds)
        return None if self._returns_none else returned

    def name_after(self, name):
        """The name TF1 gave an op `name` created after the fn's, in the same graph: `name`,
        or `name_1`... if the fn used it (the original's tag for its own `loss` summary
        beside a host_call writing `loss`)."""
        return self._graph.unique_name(name, mark_as_used=False)

    def flush(self):
        """Writes buffered summaries of every writer `fn` created to disk."""
        self._flush()

    def close(self):
        """Flushes and closes the writers, then the session. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._close_writers()
        finally:
            self._session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def _split_metrics(metric_fn, metrics):
    """`{name: (value, update_op)}` -> `({name: value}, [update_op, ...])`, validated."""
    if not isinstance(metrics, dict):
        raise TypeError(
            f"eval_metrics fn {metric_fn!r} must return a dict "
            f"{{metric_name: (value, update_op)}}, e.g. "
            f"{{'accuracy': tf.compat.v1.metrics.accuracy(labels, predictions)}}; got "
            f"{type(metrics).__name__}: {metrics!r}")
    values, update_ops = {}, []
    for name, pair in metrics.items():
        if not isinstance(name, str):
            raise TypeError(
                f"eval_metrics fn {metric_fn!r} returned the metric name {name!r} "
                f"({type(name).__name__}); metric names must be strings, as they name the "
                f"results and their summaries. Use e.g. {str(name)!r} as the key.")
        is_pair = isinstance(pair, (tuple, list)) and len(pair) == 2
        value, update_op = map(spec_lib.metric_tensor, pair) if is_pair else (None, None)
        if not (tf.is_tensor(value) and isinstance(update_op, (tf.Operation, tf.Tensor))):
            raise TypeError(
                f"eval_metrics fn {metric_fn!r} returned {pair!r} for metric {name!r}; each "
                "value must be a (value_tensor, update_op) pair as returned by "
                "tf.compat.v1.metrics.*")
        values[name] = value
        update_ops.append(update_op)
    return values, update_ops


def _runnable(fn, returned):
    """What `fn` returned, as a fetch structure (None becomes no-ops, values tensors)."""
    def to_fetch(value):
        if value is None:
            return tf.no_op()
        if isinstance(value, tf.Operation):
            return value
        try:
            return tf.convert_to_tensor(value)
        except (TypeError, ValueError):
            raise TypeError(f"host_call fn {fn!r} returned {value!r}, which is not a tensor or "
                            "an op (return e.g. tf.contrib.summary.all_summary_ops()).") from None
    if returned is None:
        return []
    return tf.nest.map_structure(to_fetch, returned)


def _initializers():
    """Initialises any global/local variables and tables the user's function created."""
    return tf.group(tf.compat.v1.global_variables_initializer(),
                    tf.compat.v1.local_variables_initializer(),
                    tf.compat.v1.tables_initializer())


def _op_name(key):
    """A valid op name for the placeholder of `key`."""
    name = "".join(c if c.isalnum() or c in "_.-" else "_" for c in str(key))
    return name if name[:1].isalnum() else f"arg_{name}"
