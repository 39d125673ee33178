"""TF 2.x's canned estimators (TF 2.15's `tf.estimator.DNNClassifier`..., the V2 classes
behind `tpu_estimator_compat.v2`'s `tf.estimator`): v2 heads (loss averaged over the batch:
SUM_OVER_BATCH_SIZE), legacy Keras optimizers, v2 feature columns, TF 2.15's variable
names (`v2_models.py`) and optimizer slots (`training/Adagrad/<variable>/accumulator`...),
so checkpoints are interchangeable with the original's. The `*Estimator` classes take a
v2 head (`tf.estimator.MultiLabelHead`...)."""
import tensorflow as tf
import tf_keras

from tpu_estimator_compat.canned import dnn_linear_combined
from tpu_estimator_compat.canned import linear
from tpu_estimator_compat.canned import model_fns
from tpu_estimator_compat.canned import v2_heads
from tpu_estimator_compat.canned import v2_model_fns
from tpu_estimator_compat.estimator import Estimator

_BATCH_MEAN = tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE
_DNN = (v2_model_fns.dnn_model_fn_v2, ("hidden_units", "feature_columns", "optimizer",
                                       "activation_fn", "dropout", "batch_norm"))
_LINEAR = (v2_model_fns.linear_model_fn_v2, ("feature_columns", "optimizer", "sparse_combiner"))
_WIDE_DEEP = (v2_model_fns.dnn_linear_combined_model_fn_v2, (
    "linear_feature_columns", "dnn_feature_columns", "linear_optimizer", "dnn_optimizer",
    "dnn_hidden_units", "dnn_activation_fn", "dnn_dropout", "batch_norm",
    "linear_sparse_combiner", "loss_reduction"))


def _model_fn(model, head, arguments):
    """`model`'s model_fn bound to `head` and to the options among a constructor's
    `arguments` (its locals)."""
    model_fn, names = model
    options = {name: arguments[name] for name in names if name in arguments}
    if "feature_columns" in options:
        options["feature_columns"] = tuple(options["feature_columns"] or [])
    return model_fns.bind(model_fn, head, **options)


class DNNClassifier(Estimator):
    """A classifier for TensorFlow DNN models (TF 2.x's `tf.estimator.DNNClassifier`):
    `n_classes=2` uses sigmoid cross entropy, more classes softmax cross entropy."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=tf.nn.relu, dropout=None, config=None, warm_start_from=None,
                 loss_reduction=_BATCH_MEAN, batch_norm=False):
        head = v2_heads.classifier_head(n_classes, weight_column, label_vocabulary,
                                        loss_reduction)
        super().__init__(model_fn=_model_fn(_DNN, head, locals()), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


class DNNRegressor(Estimator):
    """A regressor for TensorFlow DNN models (TF 2.x's `tf.estimator.DNNRegressor`): mean
    squared error on `label_dimension` outputs."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=tf.nn.relu,
                 dropout=None, config=None, warm_start_from=None, loss_reduction=_BATCH_MEAN,
                 batch_norm=False):
        head = v2_heads.RegressionHead(label_dimension, weight_column, loss_reduction)
        super().__init__(model_fn=_model_fn(_DNN, head, locals()), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


class DNNEstimator(Estimator):
    """A DNN on a given v2 head (TF 2.x's `tf.estimator.DNNEstimator`), e.g.
    `head=tf.estimator.MultiLabelHead(n_classes)`."""

    def __init__(self, head, hidden_units, feature_columns, model_dir=None,
                 optimizer="Adagrad", activation_fn=tf.nn.relu, dropout=None, config=None,
                 warm_start_from=None, batch_norm=False):
        super().__init__(model_fn=_model_fn(_DNN, model_fns.checked_head(head), locals()),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearClassifier(Estimator):
    """Linear classifier model (TF 2.x's `tf.estimator.LinearClassifier`)."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, warm_start_from=None,
                 loss_reduction=_BATCH_MEAN, sparse_combiner="sum"):
        linear.check_options(optimizer, sparse_combiner)
        head = v2_heads.classifier_head(n_classes, weight_column, label_vocabulary,
                                        loss_reduction)
        super().__init__(model_fn=_model_fn(_LINEAR, head, locals()), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


class LinearRegressor(Estimator):
    """Linear regressor model (TF 2.x's `tf.estimator.LinearRegressor`)."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Ftrl", config=None, warm_start_from=None,
                 loss_reduction=_BATCH_MEAN, sparse_combiner="sum"):
        linear.check_options(optimizer, sparse_combiner)
        head = v2_heads.RegressionHead(label_dimension, weight_column, loss_reduction)
        super().__init__(model_fn=_model_fn(_LINEAR, head, locals()), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


class LinearEstimator(Estimator):
    """A linear model on a given v2 head (TF 2.x's `tf.estimator.LinearEstimator`)."""

    def __init__(self, head, feature_columns, model_dir=None, optimizer="Ftrl", config=None,
                 sparse_combiner="sum", warm_start_from=None):
        linear.check_options(optimizer, sparse_combiner)
        super().__init__(model_fn=_model_fn(_LINEAR, model_fns.checked_head(head), locals()),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedClassifier(Estimator):
    """Wide & deep classifier (TF 2.x's `tf.estimator.DNNLinearCombinedClassifier`)."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, config=None,
                 warm_start_from=None, loss_reduction=_BATCH_MEAN, batch_norm=False,
                 linear_sparse_combiner="sum"):
        dnn_linear_combined.check_columns(linear_feature_columns, dnn_feature_columns)
        head = v2_heads.classifier_head(n_classes, weight_column, label_vocabulary,
                                        loss_reduction)
        super().__init__(model_fn=_model_fn(_WIDE_DEEP, head, locals()), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(Estimator):
    """Wide & deep regressor (TF 2.x's `tf.estimator.DNNLinearCombinedRegressor`)."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None, label_dimension=1,
                 weight_column=None, config=None, warm_start_from=None,
                 loss_reduction=_BATCH_MEAN, batch_norm=False, linear_sparse_combiner="sum"):
        dnn_linear_combined.check_columns(linear_feature_columns, dnn_feature_columns)
        head = v2_heads.RegressionHead(label_dimension, weight_column, loss_reduction)
        super().__init__(model_fn=_model_fn(_WIDE_DEEP, head, locals()), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedEstimator(Estimator):
    """Wide & deep on a given v2 head (TF 2.x's `tf.estimator.DNNLinearCombinedEstimator`)."""

    def __init__(self, head, model_dir=None, linear_feature_columns=None,
                 linear_optimizer="Ftrl", dnn_feature_columns=None, dnn_optimizer="Adagrad",
                 dnn_hidden_units=None, dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
                 config=None, batch_norm=False, linear_sparse_combiner="sum"):
        dnn_linear_combined.check_columns(linear_feature_columns, dnn_feature_columns)
        super().__init__(model_fn=_model_fn(_WIDE_DEEP, model_fns.checked_head(head),
                                                   locals()),
                         model_dir=model_dir, config=config)


class BaselineClassifier(Estimator):
    """Predicts the labels' class distribution (TF 2.x's `tf.estimator.BaselineClassifier`)."""

    def __init__(self, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None,
                 optimizer="Ftrl", config=None, loss_reduction=_BATCH_MEAN):
        head = v2_heads.classifier_head(n_classes, weight_column, label_vocabulary,
                                        loss_reduction)
        super().__init__(model_fn=model_fns.bind(
            v2_model_fns.baseline_model_fn_v2, head, optimizer=optimizer,
            weight_column=weight_column, loss_reduction=loss_reduction),
            model_dir=model_dir, config=config)


class BaselineRegressor(Estimator):
    """Predicts the labels' mean (TF 2.x's `tf.estimator.BaselineRegressor`). As TF 2.15's,
    every feature, a weight feature included, must have the same batch size."""

    def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, loss_reduction=_BATCH_MEAN):
        head = v2_heads.RegressionHead(label_dimension, weight_column, loss_reduction)
        super().__init__(model_fn=model_fns.bind(
            v2_model_fns.baseline_model_fn_v2, head, optimizer=optimizer,
            loss_reduction=loss_reduction),
            model_dir=model_dir, config=config)


class BaselineEstimator(Estimator):
    """One learned bias per logit on a given v2 head (TF 2.x's
    `tf.estimator.BaselineEstimator`)."""

    def __init__(self, head, model_dir=None, optimizer="Ftrl", config=None):
        super().__init__(model_fn=model_fns.bind(
            v2_model_fns.baseline_model_fn_v2, model_fns.checked_head(head),
            optimizer=optimizer),
            model_dir=model_dir, config=config)
