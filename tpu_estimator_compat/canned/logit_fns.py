"""`tf.estimator.experimental`'s logit functions: the canned DNN's and linear model's logits
for a model_fn of one's own (`dnn_logit_fn_builder`, `linear_logit_fn_builder`), and
`call_logit_fn`, which calls a logit_fn with the arguments it takes."""
import inspect

import tensorflow as tf

from tpu_estimator_compat.canned import dnn
from tpu_estimator_compat.canned import linear


def dnn_logit_fn_builder(units, hidden_units, feature_columns, activation_fn, dropout,
                         input_layer_partitioner, batch_norm):
    """A `logit_fn(features, mode)` building the DNN's variables (`hiddenlayer_<i>`,
    `logits`, `input_from_feature_columns`) in the caller's variable scope."""
    if not isinstance(units, int) or isinstance(units, bool):
        raise ValueError(f"units must be an int.  Given type: {type(units)}")

    def dnn_logit_fn(features, mode):
        return dnn.dnn_logits(features, mode, units, hidden_units, feature_columns,
                              activation_fn, dropout, batch_norm, input_layer_partitioner)

    return dnn_logit_fn


def linear_logit_fn_builder(units, feature_columns, sparse_combiner="sum"):
    """A `logit_fn(features)` building the linear model (`linear_model/...`) in the
    caller's variable scope."""

    def linear_logit_fn(features):
        return linear.linear_logits(features, units, feature_columns, sparse_combiner)

    return linear_logit_fn


def call_logit_fn(logit_fn, features, mode, params, config):
    """`logit_fn(features=..., [mode, params, config]: those it takes)`; its result must be
    a Tensor or a dict of them keyed by strings."""
    taken = inspect.signature(logit_fn).parameters
    kwargs = {name: value for name, value in
              (("mode", mode), ("params", params), ("config", config)) if name in taken}
    logits = logit_fn(features=features, **kwargs)
    valid_dict = isinstance(logits, dict) and all(
        isinstance(k, str) and isinstance(v, tf.Tensor) for k, v in logits.items())
    if not (valid_dict or isinstance(logits, tf.Tensor)):
        raise ValueError("logit_fn should return a Tensor or a dictionary mapping strings to "
                         f"Tensors.  logit_fn returned: {logits}")
    return logits
