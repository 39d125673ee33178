"""`tf.contrib.estimator`'s head factories, TF 1.15's signatures and defaults: the heads
of `heads.py` (and `multi_label_head.py`, `multi_head.py`) with `loss_reduction`
SUM_OVER_BATCH_SIZE; Poisson and logistic regression are the regression head with their
loss and inverse link. A head serves a model_fn of one's own:
`head.create_estimator_spec(features=, mode=, logits=, labels=, optimizer=)`."""
import tensorflow as tf

from tpu_estimator_compat.canned import head_inputs
from tpu_estimator_compat.canned import heads as head_lib
from tpu_estimator_compat.canned import multi_head as multi_head_lib
from tpu_estimator_compat.canned import multi_label_head as multi_label_head_lib

_BATCH_MEAN = tf.compat.v1.losses.Reduction.SUM_OVER_BATCH_SIZE


def multi_class_head(n_classes, weight_column=None, label_vocabulary=None,
                     loss_reduction=_BATCH_MEAN, loss_fn=None, name=None):
    """Softmax cross entropy over `n_classes` (> 2) logits."""
    return head_lib.MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction,
                                loss_fn, name)


def binary_classification_head(weight_column=None, thresholds=None, label_vocabulary=None,
                               loss_reduction=_BATCH_MEAN, loss_fn=None, name=None):
    """Sigmoid cross entropy on one logit."""
    return head_lib.BinaryLogisticHead(weight_column, thresholds, label_vocabulary,
                                    loss_reduction, loss_fn, name)


def regression_head(weight_column=None, label_dimension=1, loss_reduction=_BATCH_MEAN,
                    loss_fn=None, inverse_link_fn=None, name=None):
    """Mean squared error (or `loss_fn`) on `label_dimension` logits."""
    return head_lib.RegressionHead(label_dimension, weight_column, loss_reduction, loss_fn,
                                inverse_link_fn, name)


def poisson_regression_head(weight_column=None, label_dimension=1,
                            loss_reduction=_BATCH_MEAN, compute_full_loss=True, name=None):
    """`tf.nn.log_poisson_loss` on the logits (log rates); predicts `exp(logits)`."""
    def poisson_loss(labels, logits):
        return tf.nn.log_poisson_loss(targets=labels, log_input=logits,
                                      compute_full_loss=compute_full_loss)

    return head_lib.RegressionHead(label_dimension, weight_column, loss_reduction, poisson_loss,
                                tf.exp, name)


def logistic_regression_head(weight_column=None, loss_reduction=_BATCH_MEAN, name=None):
    """Sigmoid cross entropy with labels in [0, 1]; predicts `sigmoid(logits)`, reports the
    regression metrics."""
    def logistic_loss(labels, logits):
        labels = head_inputs.in_range(labels, 2, "Labels must be in range [0, 1]")
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

    return head_lib.RegressionHead(1, weight_column, loss_reduction, logistic_loss, tf.sigmoid,
                                name)


def multi_label_head(n_classes, weight_column=None, thresholds=None, label_vocabulary=None,
                     loss_reduction=_BATCH_MEAN, loss_fn=None,
                     classes_for_class_based_metrics=None, name=None):
    """Sigmoid cross entropy per class, averaged over the classes."""
    return multi_label_head_lib.MultiLabelHead(
        n_classes, weight_column, thresholds, label_vocabulary, loss_reduction, loss_fn,
        classes_for_class_based_metrics, name)


def multi_head(heads, head_weights=None):
    """The named `heads` trained on the (`head_weights`-weighted) sum of their losses."""
    return multi_head_lib.MultiHead(heads, head_weights)
