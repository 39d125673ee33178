"""What `tf.estimator` names TF 1.15 had and this package does not provide say when a
program reaches for them (the `missing_hint` of the v1 `tf.estimator` module).

BoostedTrees*: TF 1.15's gradient-boosted trees trained through TensorFlow's boosted-trees
resource ops (a quantile pass over the data, then one tree layer per step, center_bias,
pruning), a library of its own that never ran on TPUs; TensorFlow Decision Forests is its
successor.
"""

_BOOSTED_TREES = (
    ": TF 1.x's gradient-boosted trees are not provided by tpu_estimator_compat. Use "
    "TensorFlow Decision Forests, their successor (`pip install tensorflow_decision_forests`; "
    "`tfdf.keras.GradientBoostedTreesModel(task=tfdf.keras.Task.{task})` and "
    "`model.fit(dataset)` on the same dict of features), or one of tf.estimator's DNN, "
    "linear or DNNLinearCombined estimators.")
_GENERAL = (". tpu_estimator_compat provides Estimator, TPUEstimator (tf.estimator.tpu), their "
            "specs, configs, train_and_evaluate, hooks, exporters, add_metrics, the DNN, "
            "linear, DNNLinearCombined and baseline classifiers, regressors and estimators "
            "(TF 1.x's; TF 2.x's V2 classes through tpu_estimator_compat.v2), the v2-style "
            "heads (BinaryClassHead...), export, experimental's early stopping and inputs.")


def missing_hint(name):
    """The end of the AttributeError for `tf.estimator.<name>`, naming what to use."""
    if name.startswith("BoostedTrees"):
        task = "REGRESSION" if name.endswith("Regressor") else "CLASSIFICATION"
        return _BOOSTED_TREES.format(task=task)
    return _GENERAL
