"""What `tf.estimator` names TF 1.15 had and this package does not provide say when a
program reaches for them (the `missing_hint` of the v1 `tf.estimator` module).

BoostedTrees*: TF 1.15's gradient-boosted trees trained through TensorFlow's boosted-trees
resource ops (a quantile pass over the data, then one tree layer per step, center_bias,
pruning), a library of its own that never ran on TPUs; TensorFlow Decision Forests is its
successor. The v2-style heads (`tf.estimator.BinaryClassHead`...) are not provided either:
TF 1.15's v1 `*Estimator` classes (`DNNEstimator`...), which are, take TF 1.x's heads
(`tf.contrib.estimator`'s), and the classifier/regressor classes choose one themselves.
"""

_BOOSTED_TREES = (
    ": TF 1.x's gradient-boosted trees are not provided by tpu_estimator_compat. Use "
    "TensorFlow Decision Forests, their successor (`pip install tensorflow_decision_forests`; "
    "`tfdf.keras.GradientBoostedTreesModel(task=tfdf.keras.Task.{task})` and "
    "`model.fit(dataset)` on the same dict of features), or one of tf.estimator's DNN, "
    "linear or DNNLinearCombined estimators.")
_HEADS = (
    ": the v2-style heads are not provided by tpu_estimator_compat. Use TF 1.x's heads, "
    "tf.contrib.estimator.binary_classification_head, multi_class_head, multi_label_head, "
    "regression_head, poisson_regression_head, logistic_regression_head or multi_head "
    "(`head=` of tf.estimator.DNNEstimator, LinearEstimator, DNNLinearCombinedEstimator and "
    "BaselineEstimator, or head.create_estimator_spec in a model_fn of your own), or the "
    "*Classifier or *Regressor estimator of the same model (their n_classes, "
    "label_dimension, weight_column, label_vocabulary and loss_reduction arguments choose "
    "TF 1.x's head).")
_HEAD_NAMES = ("Head", "BinaryClassHead", "MultiClassHead", "MultiLabelHead", "MultiHead",
               "RegressionHead", "LogisticRegressionHead", "PoissonRegressionHead")
_GENERAL = (". tpu_estimator_compat provides Estimator, TPUEstimator (tf.estimator.tpu), their "
            "specs, configs, train_and_evaluate, hooks, exporters, add_metrics, the DNN, "
            "linear, DNNLinearCombined and baseline classifiers, regressors and estimators "
            "(TF 1.x heads), export, experimental's early stopping and inputs.")


def missing_hint(name):
    """The end of the AttributeError for `tf.estimator.<name>`, naming what to use."""
    if name.startswith("BoostedTrees"):
        task = "REGRESSION" if name.endswith("Regressor") else "CLASSIFICATION"
        return _BOOSTED_TREES.format(task=task)
    if name in _HEAD_NAMES:
        return _HEADS
    return _GENERAL
