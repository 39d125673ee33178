"""TF 1.15's `tf.contrib.estimator` wrappers: `add_metrics`, `forward_features` (a new
`Estimator` whose model_fn wraps the given estimator's, in its model_dir with its config)
and `clip_gradients_by_norm` (an optimizer clipping the global norm of its gradients)."""
import copy

import tensorflow as tf

from tpu_estimator_compat.api import export_outputs as export_outputs_lib
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.estimator import Estimator

_METRIC_FN_ARGS = ("features", "labels", "predictions", "config")


def _wrapped(estimator, wrap_spec):
    """A new Estimator: `estimator`'s model_fn (with its params), its spec passed through
    `wrap_spec(spec, features, labels, mode, config)`."""
    def model_fn(features, labels, mode, config):
        spec = model_bridge.call_model_fn(estimator.model_fn, features, labels, mode,
                                          copy.deepcopy(estimator.params), config)
        return wrap_spec(spec, features, labels, mode, config)

    return Estimator(model_fn=model_fn, model_dir=estimator.model_dir,
                     config=estimator.config,
                     warm_start_from=estimator._warm_start_from)  # pylint: disable=protected-access


def add_metrics(estimator, metric_fn):
    """An Estimator that also evaluates `metric_fn`'s metrics.

    Args:
      estimator: the `Estimator` to extend.
      metric_fn: a function of (any of) `features`, `labels`, `predictions`, `config`
        returning a dict of name -> `(value_op, update_op)` (a `tf.metrics` result); they
        join (and override) the model_fn's `eval_metric_ops`.

    Returns:
      A new `Estimator` in the same model_dir.
    """
    unexpected = sorted(set(model_bridge.fn_args(metric_fn)) - set(_METRIC_FN_ARGS))
    if unexpected:
        raise ValueError(f"metric_fn ({metric_fn}) has following not expected args: "
                         f"{unexpected}. It takes only {', '.join(_METRIC_FN_ARGS)}.")

    def wrap_spec(spec, features, labels, mode, config):
        if mode != ModeKeys.EVAL:
            return spec
        given = {"features": features, "labels": labels, "predictions": spec.predictions,
                 "config": config}
        metrics = dict(spec.eval_metric_ops or {})
        metrics.update(metric_fn(**{arg: given[arg]
                                    for arg in model_bridge.fn_args(metric_fn)}))
        return spec._replace(eval_metric_ops=metrics)

    return _wrapped(estimator, wrap_spec)


def forward_features(estimator, keys=None, sort_keys=True):
    """An Estimator whose predictions (and PredictOutput signatures) also hold features.

    Args:
      estimator: the `Estimator` to extend; its model_fn must predict a dict.
      keys: a feature key or list of keys to forward; None forwards every feature.
      sort_keys: with `keys=None`, forward the features in sorted key order.

    Returns:
      A new `Estimator` in the same model_dir.
    """
    keys = _checked_keys(keys)

    def wrap_spec(spec, features, labels, mode, config):
        del labels, config
        if mode != ModeKeys.PREDICT:
            return spec
        if not isinstance(spec.predictions, dict):
            raise ValueError("Predictions should be a dict to be able to forward features. "
                             f"Given: {type(spec.predictions)}")
        if not isinstance(features, dict):
            raise ValueError("forward_features needs features as a dict (input_fn's features"
                             f"); given: {type(features)}.")
        forwarded = keys if keys is not None else (
            sorted(features) if sort_keys else list(features))
        predictions = dict(spec.predictions)
        for key in forwarded:
            predictions[key] = _forwardable(features, key, predictions)
        outputs = spec.export_outputs
        if outputs:
            outputs = dict(outputs)
            for name in ("predict", "serving_default"):
                if isinstance(outputs.get(name), export_outputs_lib.PredictOutput):
                    outputs[name] = export_outputs_lib.PredictOutput(
                        {**outputs[name].outputs, **{k: predictions[k] for k in forwarded}})
        return spec._replace(predictions=predictions, export_outputs=outputs)

    return _wrapped(estimator, wrap_spec)


def _checked_keys(keys):
    if keys is None:
        return None
    if isinstance(keys, str):
        return [keys]
    if not isinstance(keys, (list, tuple)):
        raise TypeError(f"keys should be either a string or a list of strings. Given: "
                        f"{type(keys)}")
    for key in keys:
        if not isinstance(key, str):
            raise TypeError("All items in the given keys list should be a string. There "
                            f"exist an item with type: {type(key)}")
    return list(keys)


def _forwardable(features, key, predictions):
    if key not in features:
        raise ValueError(f"Feature ({key}) to forward is not in the features "
                         f"({', '.join(sorted(features))}): pass keys= naming features.")
    if key in predictions:
        raise ValueError(f"Cannot forward feature key ({key}). Since it does exist in "
                         f"predictions. Existing prediction keys: {','.join(predictions)}")
    feature = features[key]
    if not isinstance(feature, tf.Tensor):
        raise ValueError(f"Forwarded feature ({key}) should be a Tensor. Please use keys "
                         "argument of forward_features to filter unwanted features. Type of "
                         f"features[{key}] is {type(feature)}.")
    return feature


def clip_gradients_by_norm(optimizer, clip_norm):
    """`optimizer`, its gradients scaled so that their global norm is at most `clip_norm`
    (`tf.clip_by_global_norm`); named `'ClipByNorm' + optimizer.get_name()`."""
    return _ClippingOptimizer(optimizer, clip_norm)


class _ClippingOptimizer(tf.compat.v1.train.Optimizer):
    """Delegates to an optimizer, clipping what `compute_gradients` returns."""

    def __init__(self, optimizer, clip_norm):
        super().__init__(use_locking=False, name="ClipByNorm" + optimizer.get_name())
        self._optimizer = optimizer
        self._clip_norm = clip_norm

    def compute_gradients(self, *args, **kwargs):
        grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
        gradients, variables = zip(*grads_and_vars)
        clipped, _ = tf.clip_by_global_norm(list(gradients), self._clip_norm)
        return list(zip(clipped, variables))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step,
                                               name=name)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._optimizer.variables()
