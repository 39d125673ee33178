"""What a `model_fn` returns: `EstimatorSpec`, `TPUEstimatorSpec` and `ModeKeys`.

The specs are built inside the user's `model_fn`, which runs in a `tf.function` trace:
validation looks only at Python types and static shapes, never at tensor values.
"""
import collections
import inspect

import tensorflow as tf

from tpu_estimator_compat.export import outputs as export_output
from tpu_estimator_compat import log as logging

_RESERVED_METRIC_MESSAGES = {
    "loss": 'Metric with name "loss" is not allowed, because Estimator already defines a '
            "default metric with the same name.",
    "global_step": "Metric with name `global_step` is not allowed, because Estimator already "
                   "defines a default metric with the same name.",
}


class ModeKeys:
    """Standard names for the model modes."""
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)


def _is_tensor(value):
    # Dense tensors only (symbolic or eager); variables count, as in TF1.
    return isinstance(value, (tf.Tensor, tf.Variable))


def metric_tensor(value):
    """A metric's value or update op as a fetchable tensor or op, as TF1 returned it.

    On TF 2.x, tf.compat.v1.metrics' counting metrics (true_positives & co., their
    _at_thresholds forms, mean_iou) return their `assign_add` as the update op: a variable,
    which is read here after its update.
    """
    return tf.convert_to_tensor(value) if isinstance(value, tf.Variable) else value


def _check_tensor(value, name):
    if not _is_tensor(value):
        raise TypeError(f"{name} must be Tensor, given: {value}")
    return value


def _check_tensor_or_operation(value, name):
    if not (isinstance(value, tf.Operation) or _is_tensor(value)):
        raise TypeError(f"{name} must be Operation or Tensor, given: {value}")
    return value


def _validate_mode(mode):
    if mode not in _MODES:
        raise ValueError(f"mode must be one of ModeKeys.TRAIN ('train'), ModeKeys.EVAL "
                         f"('eval') or ModeKeys.PREDICT ('infer'); got {mode!r}.")
    return mode


def _validate_train_op(train_op, mode):
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    return _check_tensor_or_operation(train_op, "train_op")


def _validate_loss(loss, mode):
    """Returns the scalar loss: a `[1]` loss is reshaped; static shapes only."""
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    _check_tensor(loss, "loss")
    if loss.shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss}")
    if not loss.shape.is_compatible_with(tf.TensorShape([])):
        loss = tf.reshape(loss, [])
    return loss


def _validate_predictions(predictions, mode):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        return {key: _check_tensor(value, f"predictions[{key}]")
                for key, value in predictions.items()}
    return _check_tensor(predictions, "predictions")


def _validate_export_outputs(export_outputs, predictions, mode):
    if mode != ModeKeys.PREDICT:
        return export_outputs
    if isinstance(export_outputs, dict):
        export_outputs = dict(export_outputs)  # The default alias is added to a copy.
    return export_output.get_export_outputs(export_outputs, predictions)


def validate_hooks(hooks):
    """`hooks` as a tuple; TF1's TypeError for anything that is not a SessionRunHook."""
    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook}")
    return hooks


def _validate_eval_metric_ops(eval_metric_ops):
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
    for key, value in eval_metric_ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError("Values of eval_metric_ops must be (metric_value, update_op) "
                            f"tuples, given: {value} for key: {key}")
        metric_value, update_op = value
        for member in tf.nest.flatten(metric_value) + [update_op]:
            _check_tensor_or_operation(member, f"eval_metric_ops[{key}]")
    return dict(eval_metric_ops)


def _validate_scaffold(scaffold):
    scaffold = scaffold or tf.compat.v1.train.Scaffold()
    if not isinstance(scaffold, tf.compat.v1.train.Scaffold):
        raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold}")
    return scaffold


def _validated_common_fields(mode, predictions, loss, train_op, export_outputs):
    """The checks shared by both specs, in the original order."""
    mode = _validate_mode(mode)
    train_op = _validate_train_op(train_op, mode)
    loss = _validate_loss(loss, mode)
    predictions = _validate_predictions(predictions, mode)
    export_outputs = _validate_export_outputs(export_outputs, predictions, mode)
    return dict(mode=mode, predictions=predictions, loss=loss, train_op=train_op,
                export_outputs=export_outputs)


class EstimatorSpec(collections.namedtuple("EstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
        "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
        "prediction_hooks"])):
    """Ops and objects returned from a `model_fn`, validated (a namedtuple).

    TRAIN needs `loss` and `train_op`, EVAL needs `loss`, PREDICT needs `predictions`.

    Args:
      mode: a `ModeKeys` value.
      predictions: a `Tensor` or a dict of them (`{}` when None outside PREDICT).
      loss: a scalar or `[1]`-shaped `Tensor` (the latter is reshaped to a scalar).
      train_op: the training step, a `tf.Operation` or a `Tensor`.
      eval_metric_ops: dict of name to `(metric_value, update_op)` tuples.
      export_outputs: dict of name to `ExportOutput`; in PREDICT it defaults to
        `{'serving_default': PredictOutput(predictions)}`.
      training_chief_hooks, training_hooks, evaluation_hooks, prediction_hooks:
        iterables of `tf.compat.v1.train.SessionRunHook`, stored as tuples.
      scaffold: a `tf.compat.v1.train.Scaffold`; a default one when None.

    Raises:
      ValueError, TypeError: with the original Estimator messages.
    """

    __slots__ = ()

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        common = _validated_common_fields(mode, predictions, loss, train_op, export_outputs)
        return super().__new__(
            cls,
            eval_metric_ops=_validate_eval_metric_ops(eval_metric_ops),
            training_chief_hooks=validate_hooks(training_chief_hooks),
            training_hooks=validate_hooks(training_hooks),
            scaffold=_validate_scaffold(scaffold),
            evaluation_hooks=validate_hooks(evaluation_hooks),
            prediction_hooks=validate_hooks(prediction_hooks),
            **common)

    def _replace(self, **kwargs):
        """A new, re-validated spec with some fields replaced; `mode` cannot change."""
        if "mode" in kwargs and kwargs["mode"] != self.mode:
            raise ValueError("mode of EstimatorSpec cannot be changed.")
        return type(self)(**{**self._asdict(), **kwargs})


def _positional_capacity(fn):
    """(number of positional parameters, whether `fn` takes `*args`)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # No introspectable signature: do not count.
        return 0, True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional), any(p.kind == p.VAR_POSITIONAL for p in params)


def _validate_host_call(name, host_call):
    """Checks an `eval_metrics` / `host_call` pair `(fn, tensors)` as the original did."""
    if not isinstance(host_call, (tuple, list)):
        raise ValueError(f"{name} should be tuple or list: pass the pair (fn, tensors), "
                         f"got {type(host_call).__name__}.")
    if len(host_call) != 2:
        raise ValueError(f"{name} should have two elements.")
    fn, tensors = host_call
    if not callable(fn):
        raise TypeError(f"{name}[0] should be callable.")
    if not isinstance(tensors, (tuple, list, dict)):
        raise ValueError(f"{name}[1] should be tuple or list, or dict.")
    if isinstance(tensors, (tuple, list)):
        num_args, takes_varargs = _positional_capacity(fn)
        if not takes_varargs and len(tensors) != num_args:
            raise RuntimeError(
                f"In TPUEstimatorSpec.{name}, length of tensors {len(tensors)} does not match "
                f"method args of the function, which takes {num_args}.")


def check_keyword_args(name, host_call):
    """Raises TypeError when `host_call`'s tensors are a dict whose keys are not the
    function's arguments (all it requires). As in TF1 the spec does not check this; the
    engine does before the first step, instead of failing when the function is called."""
    fn, tensors = host_call
    if not isinstance(tensors, dict):
        return
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # No introspectable signature: do not check.
        return
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    required = {p.name for p in named if p.default is p.empty}
    unexpected = ([] if any(p.kind == p.VAR_KEYWORD for p in params)
                  else sorted(set(tensors) - {p.name for p in named}, key=str))
    missing = sorted(required - set(tensors))
    if unexpected or missing:
        problems = ([f"{unexpected} are not arguments"] if unexpected else []) + (
            [f"{missing} are missing"] if missing else [])
        raise TypeError(
            f"In TPUEstimatorSpec.{name}, the keys of the tensors dict "
            f"{sorted(tensors, key=str)} do not match the arguments of the function, which "
            f"takes {[p.name for p in named]}: {' and '.join(problems)}. The dict is passed as "
            "keyword arguments: name each key after an argument of the function.")


def _call_host_fn(name, host_call):
    """`fn(*tensors)` for a list or tuple, `fn(**tensors)` for a dict."""
    fn, tensors = host_call
    if isinstance(tensors, (tuple, list)):
        return fn(*tensors)
    try:
        return fn(**tensors)
    except TypeError as e:
        logging.warning("Exception while calling %s: %s. It is likely the tensors (%s[1]) do "
                        "not match the function's arguments", name, e, name)
        raise


class TPUEstimatorSpec(collections.namedtuple("TPUEstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metrics", "export_outputs",
        "scaffold_fn", "host_call", "training_hooks", "evaluation_hooks",
        "prediction_hooks"])):
    """Ops and objects returned from a `model_fn` for a `TPUEstimator` (a namedtuple).

    The base fields are validated as in `EstimatorSpec`.

    Args:
      mode, predictions, loss, train_op, export_outputs: as in `EstimatorSpec`.
      eval_metrics: `(metric_fn, tensors)`; `tensors` is a list (passed positionally,
        its length must match `metric_fn`'s arguments unless it takes `*args`) or a dict
        (passed as keyword arguments). `metric_fn` returns `{name: (value, update_op)}`
        and runs on the host.
      scaffold_fn: a no-argument function returning a `tf.compat.v1.train.Scaffold`, called
        on the host (e.g. to `init_from_checkpoint`).
      host_call: `(fn, tensors)` like `eval_metrics`, run on the host after each step;
        the training engine runs it, it never becomes a hook here.
      training_hooks, evaluation_hooks, prediction_hooks: `SessionRunHook` iterables,
        stored as tuples.

    Raises:
      ValueError, TypeError, RuntimeError: with the original TPUEstimatorSpec messages.
    """

    __slots__ = ()

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metrics=None,
                export_outputs=None, scaffold_fn=None, host_call=None, training_hooks=None,
                evaluation_hooks=None, prediction_hooks=None):
        for name, value in (("eval_metrics", eval_metrics), ("host_call", host_call)):
            if value is not None:
                _validate_host_call(name, value)
        hooks = [validate_hooks(h) for h in (training_hooks, evaluation_hooks,
                                              prediction_hooks)]
        if scaffold_fn is not None and not callable(scaffold_fn):
            raise TypeError("scaffold_fn must be a function that takes no arguments and "
                            f"returns a tf.compat.v1.train.Scaffold; given: {scaffold_fn}")
        common = _validated_common_fields(mode, predictions, loss, train_op, export_outputs)
        return super().__new__(
            cls,
            eval_metrics=eval_metrics,
            scaffold_fn=scaffold_fn,
            host_call=host_call,
            training_hooks=hooks[0],
            evaluation_hooks=hooks[1],
            prediction_hooks=hooks[2],
            **common)

    def _replace(self, **kwargs):
        """A new, re-validated spec with some fields replaced."""
        return type(self)(**{**self._asdict(), **kwargs})

    def as_estimator_spec(self):
        """The equivalent `EstimatorSpec`, for running on CPU/GPU.

        Calls `metric_fn` to build `eval_metric_ops` and `scaffold_fn` for the scaffold, so
        it must run where those may build ops (the graph the engine evaluates in).
        `host_call` is left out: the engine reads it from this spec and runs it.
        """
        eval_metric_ops = None
        if self.eval_metrics is not None:
            eval_metric_ops = _call_host_fn("eval_metrics", self.eval_metrics)
        scaffold = self.scaffold_fn() if self.scaffold_fn else None
        return EstimatorSpec(
            mode=self.mode,
            predictions=self.predictions,
            loss=self.loss,
            train_op=self.train_op,
            eval_metric_ops=eval_metric_ops,
            export_outputs=self.export_outputs,
            scaffold=scaffold,
            training_hooks=self.training_hooks,
            evaluation_hooks=self.evaluation_hooks,
            prediction_hooks=self.prediction_hooks)


def call_scaffold_fn(scaffold_fn):
    """Calls a TPUEstimatorSpec's `scaffold_fn` (when the engine traces a step, and on export).

    Raises:
      ValueError: it returned None (the original's error).
    """
    scaffold = scaffold_fn()
    if scaffold is None:
        raise ValueError(
            "TPUEstimatorSpec.scaffold_fn returns None, which is not allowed. "
            "Return tf.compat.v1.train.Scaffold() at the end of scaffold_fn.")
    return scaffold


def validate_metric_names(metrics):
    """Rejects user metrics named like the ones evaluation always adds.

    Args:
      metrics: a dict (or any iterable) of metric names, e.g. `eval_metric_ops`.

    Raises:
      ValueError: a metric is named 'loss' or 'global_step'.
    """
    for name in ("loss", "global_step"):
        if name in metrics:
            raise ValueError(_RESERVED_METRIC_MESSAGES[name] +
                             " Rename that metric in your metric_fn.")
