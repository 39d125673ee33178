"""TF 2.x's v2-style heads (`tf.estimator.BinaryClassHead`, `MultiClassHead`,
`MultiLabelHead`, `RegressionHead`, `PoissonRegressionHead`, `LogisticRegressionHead`; TF
1.15's `tf.estimator` had them too): TF 1.x's heads' loss and predictions (`heads.py`,
`multi_label_head.py`), with TF 2.x's defaults (`loss_reduction` SUM_OVER_BATCH_SIZE), API
(`loss`, `predictions(keys=)`, Keras `metrics`/`update_metrics`) and metrics: Keras's, so AUCs
interpolate as Keras's do and accuracy at a threshold counts `probability > threshold`.
"""
import tensorflow as tf
import tf_keras

from tpu_estimator_compat.canned import head_inputs
from tpu_estimator_compat.canned import heads
from tpu_estimator_compat.canned import keys
from tpu_estimator_compat.canned import multi_label_head
from tpu_estimator_compat.canned.v2_head_base import Reduction
from tpu_estimator_compat.canned.v2_head_base import V1BackedHead
from tpu_estimator_compat.canned.v2_head_base import check_vocabulary
from tpu_estimator_compat.canned.v2_head_base import v1_loss_fn
from tpu_estimator_compat.canned.v2_head_base import v1_reduction

_MK = keys.MetricKeys
_PK = keys.PredictionKeys
_BATCH_MEAN = Reduction.SUM_OVER_BATCH_SIZE
_metrics = tf_keras.metrics


def _update_broadcast(metric, values, weights):
    values = tf.cast(values, tf.float32)
    metric.update_state(values=values, sample_weight=weights * tf.ones_like(values))


class _AccuracyBaseline(_metrics.Metric):
    """max(label mean, 1 - label mean) of the labels `label_mean` has seen: the accuracy of
    always predicting one class."""

    def __init__(self, label_mean, name=_MK.ACCURACY_BASELINE):
        super().__init__(name=name)
        self._label_mean = label_mean

    def update_state(self, *args, **kwargs):
        del args, kwargs  # follows label_mean

    def result(self):
        total, count = self._label_mean.total, self._label_mean.count
        return tf.math.divide_no_nan(tf.maximum(total, count - total), count)

    def reset_state(self):
        pass


def _threshold_metrics(key, thresholds):
    metrics = {}
    for threshold in thresholds:
        for name, make in ((_MK.ACCURACY_AT_THRESHOLD, lambda n, t: _metrics.BinaryAccuracy(
                                name=n, threshold=t)),
                           (_MK.PRECISION_AT_THRESHOLD, lambda n, t: _metrics.Precision(
                               name=n, thresholds=t)),
                           (_MK.RECALL_AT_THRESHOLD, lambda n, t: _metrics.Recall(
                               name=n, thresholds=t))):
            metrics[key(name % threshold)] = make(key(name % threshold), threshold)
    return metrics


def _update_threshold_metrics(metrics, key, thresholds, labels, probabilities, weights):
    for threshold in thresholds:
        for name in (_MK.ACCURACY_AT_THRESHOLD, _MK.PRECISION_AT_THRESHOLD,
                     _MK.RECALL_AT_THRESHOLD):
            metrics[key(name % threshold)].update_state(
                y_true=labels, y_pred=probabilities, sample_weight=weights)


def _loss_metrics(key, regularization_losses):
    metrics = {key(_MK.LOSS_MEAN): _metrics.Mean(name=_MK.LOSS_MEAN)}
    if regularization_losses is not None:
        metrics[key(_MK.LOSS_REGULARIZATION)] = _metrics.Mean(name=_MK.LOSS_REGULARIZATION)
    return metrics


class BinaryClassHead(V1BackedHead):
    """Sigmoid cross entropy on one logit (labels 0/1, floats in [0, 1] or the strings of a
    two-word `label_vocabulary`)."""

    def __init__(self, weight_column=None, thresholds=None, label_vocabulary=None,
                 loss_reduction=_BATCH_MEAN, loss_fn=None, name=None):
        check_vocabulary(label_vocabulary)
        head = heads.BinaryLogisticHead(
            weight_column, thresholds, label_vocabulary, v1_reduction(loss_reduction),
            v1_loss_fn(loss_fn, loss_reduction), name)
        super().__init__(loss_reduction, head)
        self._thresholds = head._thresholds  # pylint: disable=protected-access

    def _valid_prediction_keys(self):
        return (_PK.LOGITS, _PK.LOGISTIC, _PK.PROBABILITIES, _PK.CLASS_IDS, _PK.CLASSES,
                _PK.ALL_CLASS_IDS, _PK.ALL_CLASSES)

    def metrics(self, regularization_losses=None):
        key = self._summary_key
        with tf.name_scope("metrics"):
            metrics = _loss_metrics(key, regularization_losses)
            label_mean = _metrics.Mean(name=_MK.LABEL_MEAN)
            metrics.update({
                key(_MK.ACCURACY): _metrics.Accuracy(name=_MK.ACCURACY),
                key(_MK.PRECISION): _metrics.Precision(name=_MK.PRECISION),
                key(_MK.RECALL): _metrics.Recall(name=_MK.RECALL),
                key(_MK.PREDICTION_MEAN): _metrics.Mean(name=_MK.PREDICTION_MEAN),
                key(_MK.LABEL_MEAN): label_mean,
                key(_MK.ACCURACY_BASELINE): _AccuracyBaseline(label_mean),
                key(_MK.AUC): _metrics.AUC(name=_MK.AUC),
                key(_MK.AUC_PR): _metrics.AUC(curve="PR", name=_MK.AUC_PR),
            })
            metrics.update(_threshold_metrics(key, self._thresholds))
        return metrics

    def _update(self, metrics, spec, predictions):
        key = self._summary_key
        labels, weights = spec.processed_labels, spec.weights
        class_ids, logistic = predictions[_PK.CLASS_IDS], predictions[_PK.LOGISTIC]
        metrics[key(_MK.LOSS_MEAN)].update_state(values=spec.unreduced_loss,
                                                 sample_weight=weights)
        for name in (_MK.ACCURACY, _MK.PRECISION, _MK.RECALL):
            metrics[key(name)].update_state(y_true=labels, y_pred=class_ids,
                                            sample_weight=weights)
        _update_broadcast(metrics[key(_MK.PREDICTION_MEAN)], logistic, weights)
        _update_broadcast(metrics[key(_MK.LABEL_MEAN)], labels, weights)
        for name in (_MK.AUC, _MK.AUC_PR):
            metrics[key(name)].update_state(y_true=labels, y_pred=logistic,
                                            sample_weight=weights * tf.ones_like(logistic))
        _update_threshold_metrics(metrics, key, self._thresholds, labels, logistic, weights)


class MultiClassHead(V1BackedHead):
    """Softmax cross entropy over `n_classes` (> 2) logits (integer labels, or the strings
    of `label_vocabulary`)."""

    def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
                 loss_reduction=_BATCH_MEAN, loss_fn=None, name=None):
        head = heads.MultiClassHead(n_classes, weight_column, label_vocabulary,
                                    v1_reduction(loss_reduction),
                                    v1_loss_fn(loss_fn, loss_reduction), name)
        super().__init__(loss_reduction, head)

    def _valid_prediction_keys(self):
        return (_PK.LOGITS, _PK.PROBABILITIES, _PK.CLASS_IDS, _PK.CLASSES,
                _PK.ALL_CLASS_IDS, _PK.ALL_CLASSES)

    def metrics(self, regularization_losses=None):
        with tf.name_scope("metrics"):
            metrics = _loss_metrics(self._summary_key, regularization_losses)
            metrics[self._summary_key(_MK.ACCURACY)] = _metrics.Accuracy(name=_MK.ACCURACY)
        return metrics

    def _update(self, metrics, spec, predictions):
        key = self._summary_key
        metrics[key(_MK.LOSS_MEAN)].update_state(values=spec.unreduced_loss,
                                                 sample_weight=spec.weights)
        metrics[key(_MK.ACCURACY)].update_state(
            y_true=spec.processed_labels, y_pred=predictions[_PK.CLASS_IDS],
            sample_weight=spec.weights)


class MultiLabelHead(V1BackedHead):
    """Zero or more of `n_classes` labels per example (multi-hot, or a SparseTensor of class
    ids or `label_vocabulary` strings): sigmoid cross entropy averaged over the classes."""

    def __init__(self, n_classes, weight_column=None, thresholds=None, label_vocabulary=None,
                 loss_reduction=_BATCH_MEAN, loss_fn=None,
                 classes_for_class_based_metrics=None, name=None):
        if n_classes is None or n_classes < 2:
            raise ValueError("n_classes must be > 1 for multi-label classification. "
                             f"Given: {n_classes}")
        head = multi_label_head.MultiLabelHead(
            n_classes, weight_column, thresholds, label_vocabulary,
            v1_reduction(loss_reduction), v1_loss_fn(loss_fn, loss_reduction),
            classes_for_class_based_metrics, name)
        super().__init__(loss_reduction, head)
        self._n_classes = n_classes
        self._label_vocabulary = label_vocabulary
        self._thresholds = head._thresholds  # pylint: disable=protected-access
        self._classes = head._metric_classes  # pylint: disable=protected-access

    def _valid_prediction_keys(self):
        return (_PK.LOGITS, _PK.PROBABILITIES, _PK.CLASSES)

    def _all_predictions(self, logits):
        predictions = self._head._predictions(logits)  # pylint: disable=protected-access
        predictions[_PK.CLASSES] = head_inputs.all_classes(logits, self._n_classes,
                                                           self._label_vocabulary)
        return predictions

    def _class_keys(self, class_id):
        if self._label_vocabulary is None:
            names = (_MK.PROBABILITY_MEAN_AT_CLASS, _MK.AUC_AT_CLASS, _MK.AUC_PR_AT_CLASS)
            return tuple(self._summary_key(name % class_id) for name in names)
        names = (_MK.PROBABILITY_MEAN_AT_NAME, _MK.AUC_AT_NAME, _MK.AUC_PR_AT_NAME)
        return tuple(self._summary_key(name % self._label_vocabulary[class_id])
                     for name in names)

    def metrics(self, regularization_losses=None):
        key = self._summary_key
        with tf.name_scope("metrics"):
            metrics = _loss_metrics(key, regularization_losses)
            metrics[key(_MK.AUC)] = _metrics.AUC(name=_MK.AUC)
            metrics[key(_MK.AUC_PR)] = _metrics.AUC(curve="PR", name=_MK.AUC_PR)
            metrics.update(_threshold_metrics(key, self._thresholds))
            for class_id in self._classes:
                mean_key, auc_key, auc_pr_key = self._class_keys(class_id)
                metrics[mean_key] = _metrics.Mean(name=mean_key)
                metrics[auc_key] = _metrics.AUC(name=auc_key)
                metrics[auc_pr_key] = _metrics.AUC(curve="PR", name=auc_pr_key)
        return metrics

    def _update(self, metrics, spec, predictions):
        key = self._summary_key
        labels, weights = spec.processed_labels, spec.weights
        probabilities = predictions[_PK.PROBABILITIES]
        metrics[key(_MK.LOSS_MEAN)].update_state(values=spec.unreduced_loss,
                                                 sample_weight=weights)
        for name in (_MK.AUC, _MK.AUC_PR):
            metrics[key(name)].update_state(y_true=labels, y_pred=probabilities,
                                            sample_weight=weights)
        _update_threshold_metrics(metrics, key, self._thresholds, labels, probabilities,
                                  weights)
        for class_id in self._classes:
            mean_key, auc_key, auc_pr_key = self._class_keys(class_id)
            class_probabilities = probabilities[..., class_id:class_id + 1]
            class_labels = labels[..., class_id:class_id + 1]
            _update_broadcast(metrics[mean_key], class_probabilities, weights)
            for name in (auc_key, auc_pr_key):
                metrics[name].update_state(y_true=class_labels, y_pred=class_probabilities,
                                           sample_weight=weights)


class RegressionHead(V1BackedHead):
    """Mean squared error (or `loss_fn`'s loss) on `label_dimension` logits; predictions
    `inverse_link_fn(logits)`."""

    def __init__(self, label_dimension=1, weight_column=None, loss_reduction=_BATCH_MEAN,
                 loss_fn=None, inverse_link_fn=None, name=None):
        super().__init__(loss_reduction, heads.RegressionHead(
            label_dimension, weight_column, v1_reduction(loss_reduction),
            v1_loss_fn(loss_fn, loss_reduction), inverse_link_fn, name))

    def _valid_prediction_keys(self):
        if self._head._inverse_link_fn:  # pylint: disable=protected-access
            return (_PK.PREDICTIONS, _PK.LOGITS)
        return (_PK.PREDICTIONS,)

    def metrics(self, regularization_losses=None):
        key = self._summary_key
        with tf.name_scope("metrics"):
            metrics = _loss_metrics(key, regularization_losses)
            metrics[key(_MK.PREDICTION_MEAN)] = _metrics.Mean(name=_MK.PREDICTION_MEAN)
            metrics[key(_MK.LABEL_MEAN)] = _metrics.Mean(name=_MK.LABEL_MEAN)
        return metrics

    def _update(self, metrics, spec, predictions):
        key = self._summary_key
        metrics[key(_MK.LOSS_MEAN)].update_state(values=spec.unreduced_loss,
                                                 sample_weight=spec.weights)
        _update_broadcast(metrics[key(_MK.PREDICTION_MEAN)], predictions[_PK.PREDICTIONS],
                          spec.weights)
        _update_broadcast(metrics[key(_MK.LABEL_MEAN)], spec.processed_labels, spec.weights)


class PoissonRegressionHead(RegressionHead):
    """`tf.nn.log_poisson_loss` on the logits (log rates); predicts `exp(logits)`."""

    def __init__(self, label_dimension=1, weight_column=None, loss_reduction=_BATCH_MEAN,
                 compute_full_loss=True, name=None):
        def poisson_loss(labels, logits):
            return tf.nn.log_poisson_loss(targets=labels, log_input=logits,
                                          compute_full_loss=compute_full_loss)

        super().__init__(label_dimension, weight_column, loss_reduction, poisson_loss,
                         tf.exp, name)


class LogisticRegressionHead(RegressionHead):
    """Sigmoid cross entropy with labels in [0, 1]; predicts `sigmoid(logits)`, reports the
    regression metrics."""

    def __init__(self, weight_column=None, loss_reduction=_BATCH_MEAN, name=None):
        def logistic_loss(labels, logits):
            labels = head_inputs.in_range(labels, 2, "Labels must be in range [0, 1]")
            return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

        super().__init__(1, weight_column, loss_reduction, logistic_loss, tf.sigmoid, name)


def classifier_head(n_classes, weight_column=None, label_vocabulary=None,
                    loss_reduction=_BATCH_MEAN):
    """The head of TF 2.x's V2 classifiers: `BinaryClassHead` for `n_classes=2`, else
    `MultiClassHead`."""
    if n_classes == 2:
        return BinaryClassHead(weight_column=weight_column, label_vocabulary=label_vocabulary,
                               loss_reduction=loss_reduction)
    return MultiClassHead(n_classes, weight_column=weight_column,
                          label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
