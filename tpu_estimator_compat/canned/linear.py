"""`LinearClassifier`, `LinearRegressor` and `LinearEstimator` (TF 1.15's `tf.estimator`
v1 classes; `LinearEstimator` takes a TF 1.x head such as `tf.contrib.estimator`'s): a
weighted sum of the feature columns plus a bias, FTRL by default (learning rate
min(0.2, 1 / sqrt(number of columns))), loss reduced with SUM.

Variables are TF1's (`linear/linear_model/<column>/weights`,
`linear/linear_model/bias_weights`, zero-initialized, under TF1's partitioner), so
checkpoints are interchangeable with the original's (FTRL's slots included).
"""
import math

import tensorflow as tf

from tpu_estimator_compat.canned import feature_inputs
from tpu_estimator_compat.canned import heads
from tpu_estimator_compat.canned import model_fns
from tpu_estimator_compat.canned import optimizers
from tpu_estimator_compat.canned import partitioners
from tpu_estimator_compat.estimator import Estimator

_v1 = tf.compat.v1
_LEARNING_RATE = 0.2
_SUM = _v1.losses.Reduction.SUM
_COMBINERS = ("mean", "sqrtn", "sum")


def _fraction_of_zero(variables):
    sizes = [tf.size(v, out_type=tf.int64) for v in variables]
    zeros = tf.add_n([tf.math.zero_fraction(v) * tf.cast(size, tf.float32)
                      for v, size in zip(variables, sizes)])
    return zeros / tf.cast(tf.add_n(sizes), tf.float32)


def linear_logits_and_variables(features, units, feature_columns, sparse_combiner="sum"):
    """`(logits, variables)` of the linear model in the current variable scope, with TF1's
    'bias' and 'fraction_of_zero_weights' summaries."""
    logits, bias, weights = feature_inputs.linear_model(features, feature_columns, units,
                                                        sparse_combiner)
    if units > 1:
        _v1.summary.histogram("bias", bias)
    else:
        _v1.summary.scalar("bias", bias[0][0])
    if weights:
        _v1.summary.scalar("fraction_of_zero_weights", _fraction_of_zero(weights))
    return logits, weights + bias


def linear_logits(features, units, feature_columns, sparse_combiner="sum"):
    """The logits of `linear_logits_and_variables`."""
    return linear_logits_and_variables(features, units, feature_columns, sparse_combiner)[0]


def _default_optimizer(feature_columns):
    rate = min(_LEARNING_RATE, 1.0 / math.sqrt(len(feature_columns)))
    return _v1.train.FtrlOptimizer(learning_rate=rate)


def linear_model_fn(features, labels, mode, head, feature_columns, optimizer, partitioner,
                    config, sparse_combiner="sum"):
    """The model_fn of the linear estimators: `head`'s spec of the linear logits."""
    feature_inputs.check_features(features)
    partitioner = partitioners.min_max(config, mode, partitioner, min_slice_size=64 << 20)
    with _v1.variable_scope("linear", values=tuple(features.values()),
                            partitioner=partitioner):
        logits = linear_logits(features, head.logits_dimension, feature_columns,
                               sparse_combiner)
        optimizer = optimizers.get_optimizer_instance(
            optimizer or _default_optimizer(feature_columns), _LEARNING_RATE)
        return head.create_estimator_spec(features=features, mode=mode, labels=labels,
                                          optimizer=optimizer, logits=logits)


def check_options(optimizer, sparse_combiner):
    if sparse_combiner not in _COMBINERS:
        raise ValueError(f"sparse_combiner must be one of {_COMBINERS}, got "
                         f"{sparse_combiner!r}.")
    if type(optimizer).__name__ == "LinearSDCA":
        raise ValueError("LinearSDCA is not provided by tpu_estimator_compat "
                         "(tf.estimator.experimental.LinearSDCA is excluded); use the "
                         "default 'Ftrl' or another optimizer.")


class LinearClassifier(Estimator):
    """Linear classifier model (TF 1.15's `tf.estimator.LinearClassifier`)."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=_SUM, sparse_combiner="sum"):
        check_options(optimizer, sparse_combiner)
        head = heads.classifier_head(n_classes, weight_column, label_vocabulary,
                                     loss_reduction)
        feature_columns = tuple(feature_columns or [])

        super().__init__(model_fn=model_fns.bind(
            linear_model_fn, head, feature_columns=feature_columns, optimizer=optimizer,
            partitioner=partitioner, sparse_combiner=sparse_combiner),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressor(Estimator):
    """Linear regressor model (TF 1.15's `tf.estimator.LinearRegressor`)."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=_SUM, sparse_combiner="sum"):
        check_options(optimizer, sparse_combiner)
        head = heads.RegressionHead(label_dimension, weight_column, loss_reduction)
        feature_columns = tuple(feature_columns or [])

        super().__init__(model_fn=model_fns.bind(
            linear_model_fn, head, feature_columns=feature_columns, optimizer=optimizer,
            partitioner=partitioner, sparse_combiner=sparse_combiner),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearEstimator(Estimator):
    """A linear model on a given TF 1.x head (TF 1.15's `tf.estimator.LinearEstimator`), e.g.
    `head=tf.contrib.estimator.regression_head(label_dimension=2)`; `warm_start_from` as
    TF 2.x's `tf.compat.v1.estimator.LinearEstimator` added it."""

    def __init__(self, head, feature_columns, model_dir=None, optimizer="Ftrl", config=None,
                 partitioner=None, sparse_combiner="sum", warm_start_from=None):
        check_options(optimizer, sparse_combiner)
        feature_columns = tuple(feature_columns or [])

        super().__init__(model_fn=model_fns.bind(
            linear_model_fn, model_fns.checked_head(head), feature_columns=feature_columns,
            optimizer=optimizer, partitioner=partitioner, sparse_combiner=sparse_combiner),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)
