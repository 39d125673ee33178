"""TF 2.x's `tf.estimator.MultiHead`: named v2 heads trained on the (`head_weights`-weighted)
sum of their losses.

Logits are a dict by head name or one tensor split along its last dimension in the heads'
order; labels a dict by head name. Predictions are keyed `(head name, key)`; the metrics
are every head's (keys suffixed with its name), 'loss/<name>' (the mean of each head's
training loss) and 'regularization_loss'. Export outputs as TF 1.x's multi_head's.
"""
import tensorflow as tf
import tf_keras

from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.canned import keys
from tpu_estimator_compat.canned import multi_head
from tpu_estimator_compat.canned import v2_head_base

_MK = keys.MetricKeys
_metrics = tf_keras.metrics


class MultiHead(v2_head_base.Head):
    """The `heads` (each with a name) as one head; `head_weights` weigh their losses."""

    def __init__(self, heads, head_weights=None):
        self._merger = multi_head.MultiHead(heads, head_weights)  # checks as TF 2.x did
        self._heads = tuple(heads)
        self._head_weights = tuple(head_weights) if head_weights else ()

    @property
    def name(self):
        return self._merger.name

    @property
    def logits_dimension(self):
        return self._merger.logits_dimension

    @property
    def loss_reduction(self):
        return self._heads[0].loss_reduction

    def _logits_and_labels(self, logits, labels=None):
        if labels is not None and not isinstance(labels, dict):
            raise ValueError(f"labels must be a dict. Given: {labels}")
        return self._merger._logits_dict(logits)  # pylint: disable=protected-access

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        logits = self._logits_and_labels(logits, labels)
        losses = [head.loss(labels[head.name], logits[head.name], features=features, mode=mode)
                  for head in self._heads]
        with tf.name_scope("merge_losses"):
            if self._head_weights:
                losses = [loss * weight for loss, weight in zip(losses, self._head_weights)]
            return v2_head_base.add_regularization(tf.add_n(losses), regularization_losses)

    def predictions(self, logits, keys=None):
        del keys  # TF 2.x's MultiHead gave every head's predictions
        logits = self._logits_and_labels(logits)
        with tf.name_scope("merge_pred"):
            return {(head.name, key): value for head in self._heads
                    for key, value in head.predictions(logits[head.name]).items()}

    def _loss_key(self, head):
        return f"{_MK.LOSS}/{head.name}"

    def metrics(self, regularization_losses=None):
        metrics = {}
        if regularization_losses is not None:
            metrics[_MK.LOSS_REGULARIZATION] = _metrics.Mean(name=_MK.LOSS_REGULARIZATION)
        with tf.name_scope("merge_eval"):
            for head in self._heads:
                metrics[self._loss_key(head)] = _metrics.Mean(name=self._loss_key(head))
        return metrics

    def _all_metrics(self, regularization_losses):
        metrics = self.metrics(regularization_losses)
        for head in self._heads:
            metrics.update(head.metrics())
        return metrics

    def update_metrics(self, eval_metrics, features, logits, labels,
                       regularization_losses=None, mode=None):
        """Updates `eval_metrics` (each head's metrics are added to them when missing)."""
        del mode
        for head in self._heads:
            for key, metric in head.metrics().items():
                eval_metrics.setdefault(key, metric)
        return self._update(eval_metrics, features, logits, labels, regularization_losses)

    def _update(self, eval_metrics, features, logits, labels, regularization_losses):
        logits = self._logits_and_labels(logits, labels)
        if regularization_losses is not None:
            eval_metrics[_MK.LOSS_REGULARIZATION].update_state(
                values=tf.add_n(regularization_losses))
        for head in self._heads:
            eval_metrics[self._loss_key(head)].update_state(values=head.loss(
                labels[head.name], logits[head.name], features=features))
            head.update_metrics(eval_metrics, features, logits[head.name], labels[head.name])
        return eval_metrics

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                              trainable_variables=None, train_op_fn=None, update_ops=None,
                              regularization_losses=None):
        """The merged `EstimatorSpec` of `mode`."""
        with tf.name_scope(self.name):
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                logits = self._logits_and_labels(logits)
                specs = [head.create_estimator_spec(features, mode, logits[head.name])
                         for head in self._heads]
                merged = self._merger._export_outputs  # pylint: disable=protected-access
                return spec_lib.EstimatorSpec(mode, predictions=predictions,
                                              export_outputs=merged(specs))
            loss = self.loss(labels, logits, features, mode, regularization_losses)
            if mode == ModeKeys.EVAL:
                return spec_lib.EstimatorSpec(
                    mode, predictions=predictions, loss=loss,
                    eval_metric_ops=v2_head_base.metric_ops(
                        lambda: self._all_metrics(regularization_losses),
                        lambda metrics: self._update(
                            metrics, features, logits, labels, regularization_losses)))
            train_op = v2_head_base.train_op(loss, optimizer, trainable_variables,
                                             train_op_fn, update_ops, self.loss_reduction)
        v2_head_base.summaries(None, loss, regularization_losses)
        return spec_lib.EstimatorSpec(mode, predictions=predictions, loss=loss,
                                      train_op=train_op)
