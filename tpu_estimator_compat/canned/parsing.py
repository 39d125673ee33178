"""`tf.estimator.classifier_parse_example_spec` / `regressor_parse_example_spec`: the
`tf.io.parse_example` spec of feature columns plus the label (and weight) feature."""
import tensorflow as tf


def _with_label_and_weight(spec, label_key, label_spec, weight_column):
    if label_key in spec:
        raise ValueError(f"label should not be used as feature. label_key: {label_key}, "
                         f"features: {spec.keys()}")
    spec[label_key] = label_spec
    if weight_column is None:
        return spec
    if isinstance(weight_column, str):
        weight_column = tf.feature_column.numeric_column(weight_column)
    if not hasattr(weight_column, "parse_example_spec") or not hasattr(weight_column,
                                                                      "normalizer_fn"):
        raise ValueError("weight_column should be an instance of "
                         "tf.feature_column.numeric_column. Given type: "
                         f"{type(weight_column)} value: {weight_column}")
    if weight_column.key in spec:
        raise ValueError("weight_column should not be used as feature. weight_column: "
                         f"{weight_column.key}, features: {spec.keys()}")
    spec.update(weight_column.parse_example_spec)
    return spec


def classifier_parse_example_spec(feature_columns, label_key, label_dtype=tf.int64,
                                  label_default=None, weight_column=None):
    """The parsing spec of `feature_columns` with a `[1]` label of `label_dtype`."""
    return _with_label_and_weight(
        tf.compat.v1.feature_column.make_parse_example_spec(feature_columns), label_key,
        tf.io.FixedLenFeature((1,), label_dtype, label_default), weight_column)


def regressor_parse_example_spec(feature_columns, label_key, label_dtype=tf.float32,
                                 label_default=None, label_dimension=1, weight_column=None):
    """The parsing spec of `feature_columns` with a `[label_dimension]` label."""
    return _with_label_and_weight(
        tf.compat.v1.feature_column.make_parse_example_spec(feature_columns), label_key,
        tf.io.FixedLenFeature((label_dimension,), label_dtype, label_default), weight_column)
