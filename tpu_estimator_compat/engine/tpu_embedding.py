"""An `EmbeddingConfigSpec` as TensorFlow 2's mid-level TPU embedding API, for a real TPU.

`tf.tpu.experimental.embedding.TPUEmbedding(feature_config, optimizer)` keeps the tables in
the TPU's embedding memory and runs the spec's optimizer there. This module translates the
spec: each table (`engine.embeddings.Table`) becomes a `TableConfig` (vocabulary size,
dimension, initializer, combiner, the column's `learning_rate_fn` as the table's own
optimizer's dynamic learning rate), each feature a `FeatureConfig` keyed by the feature
name model_fn's features use, and the `...Parameters` the TPU optimizer with the same
values (`clip_gradient_min/max` as `clipvalue`).

Not runnable without a TPU: `create` is tested up to the `TPUEmbedding` construction (see
tests/test_tpu_embeddings.py); the engine runs the same tables as mirrored variables with
the same update rules (`engine/embeddings.py`, `engine/embedding_optimizers.py`).
"""
import tensorflow as tf

from tpu_estimator_compat.api import embedding_spec

_embedding = tf.tpu.experimental.embedding


def tpu_optimizer(parameters, learning_rate=None):
    """The `tf.tpu.experimental.embedding` optimizer of `parameters` (with `learning_rate`
    in place of theirs, e.g. a no-argument callable for a dynamic one)."""
    common = dict(
        learning_rate=parameters.learning_rate if learning_rate is None else learning_rate,
        use_gradient_accumulation=parameters.use_gradient_accumulation,
        clip_weight_min=parameters.clip_weight_min, clip_weight_max=parameters.clip_weight_max,
        weight_decay_factor=parameters.weight_decay_factor,
        multiply_weight_decay_factor_by_learning_rate=(
            parameters.multiply_weight_decay_factor_by_learning_rate),
        clipvalue=_clip_value(parameters))
    if isinstance(parameters, embedding_spec.StochasticGradientDescentParameters):
        return _embedding.SGD(**common)
    if isinstance(parameters, embedding_spec.AdagradParameters):
        return _embedding.Adagrad(initial_accumulator_value=parameters.initial_accumulator,
                                  **common)
    if isinstance(parameters, embedding_spec.AdamParameters):
        return _embedding.Adam(beta_1=parameters.beta1, beta_2=parameters.beta2,
                               epsilon=parameters.epsilon, lazy_adam=parameters.lazy_adam,
                               sum_inside_sqrt=parameters.sum_inside_sqrt, **common)
    if isinstance(parameters, embedding_spec.FtrlParameters):
        return _embedding.FTRL(
            learning_rate_power=parameters.learning_rate_power,
            l1_regularization_strength=parameters.l1_regularization_strength,
            l2_regularization_strength=parameters.l2_regularization_strength,
            beta=parameters.beta, initial_accumulator_value=parameters.initial_accumulator_value,
            multiply_linear_by_learning_rate=parameters.multiply_linear_by_learning_rate,
            allow_zero_accumulator=parameters.allow_zero_accumulator, **common)
    raise TypeError(f"Unsupported optimization_parameters {type(parameters).__name__}.")


def feature_config(tables_by_feature, parameters, global_step):
    """`{feature key: FeatureConfig}` for `{feature key: engine.embeddings.Table}`; tables
    shared by several features (shared_embedding_columns) are one `TableConfig`."""
    table_configs = {}
    for table in tables_by_feature.values():
        if table.key in table_configs:
            continue
        optimizer = None
        if table.learning_rate_fn is not None:
            optimizer = tpu_optimizer(
                parameters, lambda fn=table.learning_rate_fn: fn(global_step))
        table_configs[table.key] = _embedding.TableConfig(
            vocabulary_size=table.vocabulary_size, dim=table.dimension,
            initializer=table.initializer, optimizer=optimizer,
            combiner=table.combiner or "mean", name=table.key)
    return {key: _embedding.FeatureConfig(table=table_configs[table.key], name=key)
            for key, table in tables_by_feature.items()}


def create(strategy, tables_by_feature, parameters, global_step):
    """The `TPUEmbedding` of the spec, created under `strategy` (a TPUStrategy)."""
    with strategy.scope():
        return _embedding.TPUEmbedding(
            feature_config=feature_config(tables_by_feature, parameters, global_step),
            optimizer=tpu_optimizer(parameters))


def _clip_value(parameters):
    if parameters.clip_gradient_min is None and parameters.clip_gradient_max is None:
        return None
    return (parameters.clip_gradient_min, parameters.clip_gradient_max)
