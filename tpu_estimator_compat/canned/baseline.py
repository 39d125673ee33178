"""`BaselineClassifier`, `BaselineRegressor` and `BaselineEstimator` (TF 1.15's v1 classes;
`BaselineEstimator` takes a TF 1.x head such as `tf.contrib.estimator`'s): the logits are one
learned bias per output (`baseline/bias`, FTRL with learning rate 0.3 by default), so the
model predicts the labels' prior (the class distribution, or the mean)."""
import tensorflow as tf

from tpu_estimator_compat.canned import heads
from tpu_estimator_compat.canned import model_fns
from tpu_estimator_compat.canned import optimizers
from tpu_estimator_compat.estimator import Estimator

_v1 = tf.compat.v1
_LEARNING_RATE = 0.3
_SUM = _v1.losses.Reduction.SUM


def _weight_key(weight_column):
    if weight_column is None or isinstance(weight_column, str):
        return weight_column
    if not hasattr(weight_column, "key") or not hasattr(weight_column, "normalizer_fn"):
        raise TypeError("Weight column must be either a string or _NumericColumn. Given "
                        f"type: {type(weight_column)}.")
    return weight_column.key


def baseline_logits(features, units, weight_column=None):
    """`(logits, bias)`: `baseline/bias` broadcast to `[batch, units]`; every feature but
    the weights must have the same batch size."""
    weight_key = _weight_key(weight_column)
    sizes = [tf.shape(feature)[0] for key, feature in features.items() if key != weight_key]
    checks = [_v1.assert_equal(sizes[0], size) for size in sizes[1:]]
    with tf.control_dependencies(checks):
        with _v1.variable_scope("baseline"):
            bias = _v1.get_variable("bias", shape=[units],
                                    initializer=_v1.initializers.zeros)
            return tf.multiply(bias, tf.ones([sizes[0], units])), bias


def baseline_model_fn(features, labels, mode, head, optimizer, weight_column=None,
                      config=None):
    """The model_fn of the baseline estimators (`config` unused: nothing is partitioned)."""
    del config
    logits, _ = baseline_logits(features, head.logits_dimension, weight_column)

    def _train_op_fn(loss):
        return optimizers.get_optimizer_instance(optimizer, _LEARNING_RATE).minimize(
            loss, global_step=_v1.train.get_global_step())

    return head.create_estimator_spec(features=features, mode=mode, logits=logits,
                                      labels=labels, train_op_fn=_train_op_fn)


class BaselineClassifier(Estimator):
    """Predicts the labels' class distribution (TF 1.15's `tf.estimator.BaselineClassifier`)."""

    def __init__(self, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None,
                 optimizer="Ftrl", config=None, loss_reduction=_SUM):
        head = heads.classifier_head(n_classes, weight_column, label_vocabulary,
                                     loss_reduction)

        super().__init__(model_fn=model_fns.bind(
            baseline_model_fn, head, optimizer=optimizer, weight_column=weight_column),
            model_dir=model_dir, config=config)


class BaselineRegressor(Estimator):
    """Predicts the labels' mean (TF 1.15's `tf.estimator.BaselineRegressor`)."""

    def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, loss_reduction=_SUM):
        head = heads.RegressionHead(label_dimension, weight_column, loss_reduction)

        super().__init__(model_fn=model_fns.bind(baseline_model_fn, head, optimizer=optimizer),
                         model_dir=model_dir, config=config)


class BaselineEstimator(Estimator):
    """One learned bias per logit on a given TF 1.x head (TF 1.15's
    `tf.estimator.BaselineEstimator`). As TF1's, every feature, a weight feature included,
    must have the same batch size."""

    def __init__(self, head, model_dir=None, optimizer="Ftrl", config=None):
        super().__init__(model_fn=model_fns.bind(
            baseline_model_fn, model_fns.checked_head(head), optimizer=optimizer),
            model_dir=model_dir, config=config)
