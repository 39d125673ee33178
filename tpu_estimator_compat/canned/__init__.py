"""TF 1.15's canned estimators (`tf.estimator.DNNClassifier`, `LinearRegressor`...) as
model_fns run by this package's `Estimator`, with TF1's heads, defaults and variable names.

`heads.py` turns logits into the spec (losses, predictions, eval metrics, export outputs),
`dnn.py` and `linear.py` build the logits, `model_fns.py` binds a head and an estimator's
options into the model_fn it hands to `Estimator`, `optimizers.py` resolves the `optimizer`
argument, `keys.py` holds the metric and prediction keys, `excluded.py` the names not
provided (BoostedTrees) and why.

`multi_label_head.py` and `multi_head.py` add contrib's multi-label and multi-objective
heads; `contrib_heads.py` serves them all as `tf.contrib.estimator`'s head factories,
whose heads the `*Estimator` classes (`DNNEstimator`, `LinearEstimator`,
`DNNLinearCombinedEstimator`, `BaselineEstimator`) take. `v2_head_base.py`, `v2_heads.py`
and `v2_multi_head.py` serve TF 2.x's v2-style heads (`tf.estimator.BinaryClassHead`...) on
the same arithmetic, with Keras metrics.

TF 2.x's V2 canned estimators (`tpu_estimator_compat.v2`'s `tf.estimator.DNNClassifier`...):
`v2_estimators.py` binds a v2 head and the options into `v2_model_fns.py`'s model_fns, which
build `v2_models.py`'s Keras-layer DNN and the linear model and train them with
`optimizers.py`'s legacy Keras optimizers.
"""
