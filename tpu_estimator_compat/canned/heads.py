"""TF 1.15's heads of the canned estimators (`head_lib` in tensorflow_estimator): given
logits, the spec of each mode.

PREDICT: the predictions dict and export outputs ('serving_default', 'classification' /
'regression', 'predict'). EVAL: the loss (reduced with `loss_reduction`, SUM by default)
and the eval metrics, as a `(metric_fn, tensors)` pair so that TPUEstimator can run them on
the host. TRAIN: `optimizer.minimize(loss, global_step)` (plus UPDATE_OPS) and the
'loss'/'average_loss' summaries. `create_estimator_spec` returns an `EstimatorSpec`,
`_create_tpu_estimator_spec` a `TPUEstimatorSpec`.
"""
import collections

import tensorflow as tf

from tpu_estimator_compat.api import export_outputs
from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.canned import head_inputs
from tpu_estimator_compat.canned import keys

_v1 = tf.compat.v1
_Reduction = _v1.losses.Reduction
LossSpec = collections.namedtuple(
    "LossSpec", ["training_loss", "unreduced_loss", "weights", "processed_labels"])
_MK = keys.MetricKeys
_PK = keys.PredictionKeys


def _check_loss_reduction(loss_reduction):
    if loss_reduction not in _Reduction.all() or loss_reduction == _Reduction.NONE:
        raise ValueError(f"Invalid loss_reduction: {loss_reduction}")


def _check_vocabulary(label_vocabulary):
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
        raise TypeError("label_vocabulary should be a list or a tuple. Given type: "
                        f"{type(label_vocabulary)}")


def _broadcast(weights, values):
    weights = tf.convert_to_tensor(weights, tf.float32)
    if weights.shape == values.shape and weights.shape.is_fully_defined():
        return weights
    return weights * tf.ones_like(values)


def _mean_of(values, weights, name):
    values = tf.cast(values, tf.float32)
    return _v1.metrics.mean(values, weights=_broadcast(weights, values), name=name)


class _Head:
    """Builds the spec from logits; subclasses give predictions, loss and metrics."""

    def __init__(self, weight_column, loss_reduction):
        _check_loss_reduction(loss_reduction)
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction

    @property
    def logits_dimension(self):
        raise NotImplementedError

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                              train_op_fn=None):
        """The `EstimatorSpec` of `mode` (all arguments by name, as in TF1)."""
        return self._create_tpu_estimator_spec(
            features, mode, logits, labels, optimizer, train_op_fn).as_estimator_spec()

    def _create_tpu_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                                   train_op_fn=None):
        with tf.name_scope("head"):
            logits = head_inputs.checked_logits(logits, self.logits_dimension)
            with tf.name_scope("predictions"):
                predictions = self._predictions(logits)
            if mode == ModeKeys.PREDICT:
                return spec_lib.TPUEstimatorSpec(
                    mode, predictions=predictions,
                    export_outputs=self._export_outputs(predictions))
            loss = self.create_loss(features, mode, logits, labels)
            total = loss.training_loss
            if mode == ModeKeys.EVAL:
                arguments = dict(self._metric_arguments(predictions, loss),
                                 unreduced_loss=loss.unreduced_loss, weights=loss.weights)
                tensors = {k: v for k, v in arguments.items() if tf.is_tensor(v)}
                fixed = {k: v for k, v in arguments.items() if k not in tensors}
                return spec_lib.TPUEstimatorSpec(
                    mode, predictions=predictions, loss=total,
                    eval_metrics=(lambda **t: self._eval_metric_ops(**fixed, **t), tensors))
            train_op = _train_op(total, optimizer, train_op_fn)
            mean_loss = None
            if self._loss_reduction == _Reduction.SUM:
                mean_loss = loss.training_loss / tf.reduce_sum(
                    loss.weights * tf.ones_like(loss.unreduced_loss))
        _v1.summary.scalar(_MK.LOSS, total)
        if mean_loss is not None:
            _v1.summary.scalar(_MK.LOSS_MEAN, mean_loss)
        return spec_lib.TPUEstimatorSpec(mode, predictions=predictions, loss=total,
                                         train_op=train_op)

    def _reduced(self, unreduced_loss, weights, labels):
        return LossSpec(
            _v1.losses.compute_weighted_loss(unreduced_loss, weights=weights,
                                             reduction=self._loss_reduction),
            unreduced_loss, weights, labels)

    @staticmethod
    def _average_loss(unreduced_loss, weights):
        return {_MK.LOSS_MEAN: _v1.metrics.mean(unreduced_loss, weights=weights,
                                                name=_MK.LOSS_MEAN)}


def _train_op(loss, optimizer, train_op_fn):
    if optimizer is not None:
        if train_op_fn is not None:
            raise ValueError("train_op_fn and optimizer cannot both be set.")
        train_op = optimizer.minimize(loss, global_step=_v1.train.get_global_step())
    elif train_op_fn is not None:
        train_op = train_op_fn(loss)
    else:
        raise ValueError("train_op_fn and optimizer cannot both be None.")
    update_ops = _v1.get_collection(_v1.GraphKeys.UPDATE_OPS)
    return tf.group(train_op, *update_ops) if update_ops else train_op


def _classification_outputs(predictions, n_classes, label_vocabulary):
    scores = predictions[_PK.PROBABILITIES]
    classes = head_inputs.all_classes(scores, n_classes, label_vocabulary)
    output = export_outputs.ClassificationOutput(scores=scores, classes=classes)
    return {keys.DEFAULT_SERVING_KEY: output, keys.CLASSIFY_SERVING_KEY: output,
            keys.PREDICT_SERVING_KEY: export_outputs.PredictOutput(predictions)}


class BinaryLogisticHead(_Head):
    """Sigmoid cross entropy on one logit; labels 0/1 (or floats in [0, 1]) or strings of
    a two-word `label_vocabulary`."""

    def __init__(self, weight_column=None, label_vocabulary=None,
                 loss_reduction=_Reduction.SUM):
        super().__init__(weight_column, loss_reduction)
        _check_vocabulary(label_vocabulary)
        self._label_vocabulary = label_vocabulary

    @property
    def logits_dimension(self):
        return 1

    def _predictions(self, logits):
        two_class_logits = tf.concat((tf.zeros_like(logits), logits), -1,
                                     name="two_class_logits")
        class_ids = tf.expand_dims(tf.argmax(two_class_logits, -1, name=_PK.CLASS_IDS), -1)
        return {
            _PK.LOGITS: logits,
            _PK.LOGISTIC: tf.sigmoid(logits, name=_PK.LOGISTIC),
            _PK.PROBABILITIES: tf.nn.softmax(two_class_logits, name=_PK.PROBABILITIES),
            _PK.CLASS_IDS: class_ids,
            _PK.CLASSES: head_inputs.class_strings(class_ids, self._label_vocabulary),
            _PK.ALL_CLASS_IDS: head_inputs.all_class_ids(logits, 2),
            _PK.ALL_CLASSES: head_inputs.all_classes(logits, 2, self._label_vocabulary),
        }

    def _export_outputs(self, predictions):
        outputs = _classification_outputs(predictions, 2, self._label_vocabulary)
        outputs[keys.REGRESS_SERVING_KEY] = export_outputs.RegressionOutput(
            value=predictions[_PK.LOGISTIC])
        return outputs

    def create_loss(self, features, mode, logits, labels):
        """`LossSpec` of the weighted sigmoid cross entropy."""
        del mode
        logits = tf.convert_to_tensor(logits)
        labels = head_inputs.dense_labels(labels, logits, 1)
        if self._label_vocabulary is not None:
            labels = head_inputs.vocabulary_ids(labels, self._label_vocabulary)
        labels = head_inputs.in_range(tf.cast(labels, tf.float32), 2)
        unreduced = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        weights = head_inputs.example_weights(features, self._weight_column, logits)
        return self._reduced(unreduced, weights, labels)

    def _metric_arguments(self, predictions, loss):
        return {"labels": loss.processed_labels, "logistic": predictions[_PK.LOGISTIC],
                "class_ids": predictions[_PK.CLASS_IDS]}

    def _eval_metric_ops(self, labels, logistic, class_ids, weights, unreduced_loss):
        ops = self._average_loss(unreduced_loss, weights)
        with tf.name_scope("metrics"):
            labels_mean = _mean_of(labels, weights, _MK.LABEL_MEAN)
            value, update = labels_mean
            ops.update({
                _MK.ACCURACY: _v1.metrics.accuracy(
                    labels, class_ids, weights=weights, name=_MK.ACCURACY),
                _MK.PRECISION: _v1.metrics.precision(
                    labels, class_ids, weights=weights, name=_MK.PRECISION),
                _MK.RECALL: _v1.metrics.recall(
                    labels, class_ids, weights=weights, name=_MK.RECALL),
                _MK.PREDICTION_MEAN: _mean_of(logistic, weights, _MK.PREDICTION_MEAN),
                _MK.LABEL_MEAN: labels_mean,
                _MK.ACCURACY_BASELINE: (tf.maximum(value, 1. - value),
                                        tf.maximum(update, 1. - update)),
                _MK.AUC: _v1.metrics.auc(
                    labels, logistic, weights=_broadcast(weights, logistic), name=_MK.AUC),
                _MK.AUC_PR: _v1.metrics.auc(
                    labels, logistic, weights=_broadcast(weights, logistic), curve="PR",
                    name=_MK.AUC_PR),
            })
        return ops


class MultiClassHead(_Head):
    """Softmax cross entropy over `n_classes` (> 2) logits; integer labels, or strings of
    `label_vocabulary`."""

    def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
                 loss_reduction=_Reduction.SUM):
        if n_classes is None:
            raise ValueError("n_classes cannot be None")
        if isinstance(n_classes, int) and n_classes <= 2:
            raise ValueError(f"n_classes must be > 2: {n_classes}.")
        _check_vocabulary(label_vocabulary)
        super().__init__(weight_column, loss_reduction)
        self._n_classes = n_classes
        self._label_vocabulary = label_vocabulary

    @property
    def logits_dimension(self):
        return self._n_classes

    def _predictions(self, logits):
        class_ids = tf.expand_dims(tf.argmax(logits, -1, name=_PK.CLASS_IDS), -1)
        return {
            _PK.LOGITS: logits,
            _PK.PROBABILITIES: tf.nn.softmax(logits, name=_PK.PROBABILITIES),
            _PK.CLASS_IDS: class_ids,
            _PK.CLASSES: head_inputs.class_strings(class_ids, self._label_vocabulary),
            _PK.ALL_CLASS_IDS: head_inputs.all_class_ids(logits, self._n_classes),
            _PK.ALL_CLASSES: head_inputs.all_classes(logits, self._n_classes,
                                                     self._label_vocabulary),
        }

    def _export_outputs(self, predictions):
        return _classification_outputs(predictions, self._n_classes, self._label_vocabulary)

    def create_loss(self, features, mode, logits, labels):
        """`LossSpec` of the weighted sparse softmax cross entropy."""
        del mode
        logits = tf.convert_to_tensor(logits)
        labels = head_inputs.dense_labels(labels, logits, 1)
        if self._label_vocabulary is None:
            if not labels.dtype.is_integer:
                raise ValueError(f"Labels dtype should be integer. Instead got {labels.dtype}.")
        else:
            labels = head_inputs.vocabulary_ids(labels, self._label_vocabulary)
        label_ids = head_inputs.in_range(labels, self._n_classes)
        unreduced = tf.expand_dims(_v1.losses.sparse_softmax_cross_entropy(
            labels=label_ids, logits=logits, reduction=_Reduction.NONE), -1)
        weights = head_inputs.example_weights(features, self._weight_column, logits)
        return self._reduced(unreduced, weights, label_ids)

    def _metric_arguments(self, predictions, loss):
        return {"labels": loss.processed_labels, "class_ids": predictions[_PK.CLASS_IDS]}

    def _eval_metric_ops(self, labels, class_ids, weights, unreduced_loss):
        ops = self._average_loss(unreduced_loss, weights)
        with tf.name_scope("metrics"):
            ops[_MK.ACCURACY] = _v1.metrics.accuracy(
                labels, class_ids, weights=weights, name=_MK.ACCURACY)
        return ops


class RegressionHead(_Head):
    """Mean squared error on `label_dimension` logits (the predictions)."""

    def __init__(self, label_dimension=1, weight_column=None, loss_reduction=_Reduction.SUM):
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        super().__init__(weight_column, loss_reduction)
        self._label_dimension = label_dimension

    @property
    def logits_dimension(self):
        return self._label_dimension

    def _predictions(self, logits):
        return {_PK.PREDICTIONS: logits}

    def _export_outputs(self, predictions):
        output = export_outputs.RegressionOutput(value=predictions[_PK.PREDICTIONS])
        return {keys.DEFAULT_SERVING_KEY: output, keys.REGRESS_SERVING_KEY: output,
                keys.PREDICT_SERVING_KEY: export_outputs.PredictOutput(predictions)}

    def create_loss(self, features, mode, logits, labels):
        """`LossSpec` of the weighted squared error."""
        del mode
        logits = tf.convert_to_tensor(logits)
        labels = tf.cast(head_inputs.dense_labels(labels, logits, self._label_dimension),
                         tf.float32)
        unreduced = _v1.losses.mean_squared_error(labels=labels, predictions=logits,
                                                  reduction=_Reduction.NONE)
        weights = head_inputs.example_weights(features, self._weight_column, logits,
                                              allow_per_logit_weights=True)
        return self._reduced(unreduced, weights, labels)

    def _metric_arguments(self, predictions, loss):
        return {"labels": loss.processed_labels,
                "predicted_value": predictions[_PK.PREDICTIONS]}

    def _eval_metric_ops(self, labels, predicted_value, weights, unreduced_loss):
        ops = self._average_loss(unreduced_loss, weights)
        ops[_MK.PREDICTION_MEAN] = _mean_of(predicted_value, weights, _MK.PREDICTION_MEAN)
        ops[_MK.LABEL_MEAN] = _v1.metrics.mean(labels, weights=weights)
        return ops


def classifier_head(n_classes, weight_column, label_vocabulary, loss_reduction):
    """The binary head for `n_classes=2`, the multi-class head above."""
    if n_classes == 2:
        return BinaryLogisticHead(weight_column, label_vocabulary=label_vocabulary,
                                  loss_reduction=loss_reduction)
    return MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction)
