"""TF 1.15's `tf.contrib.estimator.multi_label_head`: each example has zero or more of
`n_classes` labels; the loss is the sigmoid cross entropy averaged over the classes, the
metrics AUCs, accuracy/precision/recall at `thresholds` and per-class metrics for
`classes_for_class_based_metrics`."""
import tensorflow as tf

from tpu_estimator_compat.canned import head_inputs
from tpu_estimator_compat.canned import heads
from tpu_estimator_compat.canned import keys

_v1 = tf.compat.v1
_MK = keys.MetricKeys
_PK = keys.PredictionKeys


def _class_ids(classes, n_classes, label_vocabulary):
    """`classes_for_class_based_metrics` as class ids (names looked up in the vocabulary)."""
    classes = tuple(classes or ())
    if classes and isinstance(classes[0], str):
        if not label_vocabulary:
            raise ValueError("label_vocabulary must be provided when "
                             "classes_for_class_based_metrics are sting.")
        return tuple(label_vocabulary.index(name) for name in classes)
    for class_id in classes:
        if class_id < 0 or class_id >= n_classes:
            raise ValueError("All classes_for_class_based_metrics must be in range "
                             f"[0, {n_classes - 1}]. Given: {class_id}")
    return classes


class MultiLabelHead(heads.Head):
    """Labels: multi-hot `[D0, ... DN, n_classes]`, or a SparseTensor of class ids (of
    `label_vocabulary` strings) with dense shape `[D0, ... DN, ?]`."""

    def __init__(self, n_classes, weight_column=None, thresholds=None, label_vocabulary=None,
                 loss_reduction=_v1.losses.Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None,
                 classes_for_class_based_metrics=None, name=None):
        thresholds = tuple(thresholds) if thresholds else ()
        if n_classes is None or n_classes < 2:
            raise ValueError("n_classes must be > 1 for multi-class classification. "
                             f"Given: {n_classes}")
        for threshold in thresholds:
            if threshold <= 0.0 or threshold >= 1.0:
                raise ValueError(f"thresholds must be in (0, 1) range. Given: {threshold}")
        if label_vocabulary is not None:
            if not isinstance(label_vocabulary, (list, tuple)):
                raise ValueError("label_vocabulary must be a list or tuple. Given type: "
                                 f"{type(label_vocabulary)}")
            if len(label_vocabulary) != n_classes:
                raise ValueError(f"Length of label_vocabulary must be n_classes ({n_classes})."
                                 f" Given: {len(label_vocabulary)}")
        super().__init__(weight_column, loss_reduction, loss_fn, name)
        self._n_classes = n_classes
        self._thresholds = thresholds
        self._label_vocabulary = label_vocabulary
        self._metric_classes = _class_ids(classes_for_class_based_metrics, n_classes,
                                          label_vocabulary)

    @property
    def logits_dimension(self):
        return self._n_classes

    def _predictions(self, logits):
        return {_PK.LOGITS: logits,
                _PK.PROBABILITIES: tf.sigmoid(logits, name=_PK.PROBABILITIES)}

    def _export_outputs(self, predictions):
        return heads.classification_outputs(predictions, self._n_classes,
                                            self._label_vocabulary)

    def _indicator_labels(self, labels):
        head_inputs.require_labels(labels)
        if not isinstance(labels, tf.SparseTensor):
            return head_inputs.in_range(
                labels, 2, "labels must be an integer indicator Tensor with values in [0, 1]")
        if labels.dtype == tf.string:
            ids = head_inputs.vocabulary_ids(labels.values, self._label_vocabulary)
            labels = tf.SparseTensor(labels.indices, ids, labels.dense_shape)
            return tf.cast(tf.sparse.to_indicator(labels, self._n_classes), tf.int64)
        message = f"labels must be an integer SparseTensor with values in [0, {self._n_classes})"
        checks = [_v1.assert_integer(labels.values, message=message),
                  _v1.assert_less(labels.values, tf.cast(self._n_classes, labels.dtype),
                                  message=message),
                  _v1.assert_non_negative(labels.values, message=message)]
        with tf.control_dependencies(checks):
            return tf.cast(tf.sparse.to_indicator(labels, self._n_classes), tf.int64)

    def create_loss(self, features, mode, logits, labels):
        """`LossSpec` of the sigmoid cross entropy averaged over the classes (or
        `loss_fn`'s loss), weighted per example."""
        del mode
        logits = tf.convert_to_tensor(logits)
        labels = head_inputs.dense_labels(self._indicator_labels(labels), logits,
                                          self._n_classes)

        def sigmoid_cross_entropy():
            loss = _v1.losses.sigmoid_cross_entropy(
                multi_class_labels=labels, logits=logits,
                reduction=_v1.losses.Reduction.NONE)
            return tf.reduce_mean(loss, axis=-1, keepdims=True)

        unreduced = self._unreduced_loss(sigmoid_cross_entropy, labels, logits, features, 1)
        weights = head_inputs.example_weights(features, self._weight_column, logits)
        return self._reduced(unreduced, weights, labels)

    def _metric_arguments(self, predictions, loss):
        return {"labels": loss.processed_labels,
                "probabilities": predictions[_PK.PROBABILITIES]}

    def _eval_metric_ops(self, labels, probabilities, weights):
        ops = {_MK.AUC: heads.auc(labels, probabilities, weights, _MK.AUC),
               _MK.AUC_PR: heads.auc(labels, probabilities, weights, _MK.AUC_PR, curve="PR")}
        ops.update(heads.threshold_metrics(labels, probabilities, weights, self._thresholds))
        for class_id in self._metric_classes:
            if self._label_vocabulary is None:
                mean_key, auc_key, auc_pr_key = (
                    key % class_id for key in (_MK.PROBABILITY_MEAN_AT_CLASS, _MK.AUC_AT_CLASS,
                                               _MK.AUC_PR_AT_CLASS))
            else:
                mean_key, auc_key, auc_pr_key = (
                    key % self._label_vocabulary[class_id]
                    for key in (_MK.PROBABILITY_MEAN_AT_NAME, _MK.AUC_AT_NAME,
                                _MK.AUC_PR_AT_NAME))
            class_probabilities = probabilities[..., class_id:class_id + 1]
            class_labels = labels[..., class_id:class_id + 1]
            ops[mean_key] = heads.mean_of(class_probabilities, weights, mean_key)
            ops[auc_key] = heads.auc(class_labels, class_probabilities, weights, auc_key)
            ops[auc_pr_key] = heads.auc(class_labels, class_probabilities, weights, auc_pr_key,
                                        curve="PR")
        return ops
