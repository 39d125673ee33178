"""TPU embedding configuration: `EmbeddingConfigSpec` and the embedding optimizers' parameters.

`tf.estimator.tpu.experimental.EmbeddingConfigSpec(feature_columns=...,
optimization_parameters=...)` names the embedding columns
(`tf.tpu.experimental.embedding_column` / `shared_embedding_columns`, TensorFlow's own column
classes) whose tables TPU embeddings train with the spec's optimizer (`AdagradParameters`,
`AdamParameters`, `FtrlParameters`, `StochasticGradientDescentParameters`). Constructors,
defaults, attributes and validation messages are the original's; `engine/embeddings.py`
does the training.
"""
import collections

from tensorflow.python.feature_column import feature_column as fc_v1
from tensorflow.python.feature_column import feature_column_v2 as fc_v2
from tensorflow.python.tpu import feature_column as tpu_fc_v1
from tensorflow.python.tpu import feature_column_v2 as tpu_fc_v2


class _OptimizationParameters:
    """Parameters every embedding optimizer takes (the original's base class)."""

    def __init__(self, learning_rate, use_gradient_accumulation, clip_weight_min,
                 clip_weight_max, weight_decay_factor,
                 multiply_weight_decay_factor_by_learning_rate, clip_gradient_min=None,
                 clip_gradient_max=None):
        self.learning_rate = learning_rate
        self.use_gradient_accumulation = use_gradient_accumulation
        self.clip_weight_min = clip_weight_min
        self.clip_weight_max = clip_weight_max
        self.weight_decay_factor = weight_decay_factor
        self.multiply_weight_decay_factor_by_learning_rate = (
            multiply_weight_decay_factor_by_learning_rate)
        self.clip_gradient_min = clip_gradient_min
        self.clip_gradient_max = clip_gradient_max
        if not use_gradient_accumulation and (clip_gradient_min is not None
                                              or clip_gradient_max is not None):
            raise ValueError("When using gradient clipping limits, gradient  "
                             "accumulation must be enabled.")


class AdagradParameters(_OptimizationParameters):
    """Adagrad for TPU embedding tables: `accumulator += g**2; table -= lr * g /
    sqrt(accumulator)` on the rows looked up (slot `<table>/Adagrad`)."""

    def __init__(self, learning_rate, initial_accumulator=0.1, use_gradient_accumulation=True,
                 clip_weight_min=None, clip_weight_max=None, weight_decay_factor=None,
                 multiply_weight_decay_factor_by_learning_rate=None, clip_gradient_min=None,
                 clip_gradient_max=None):
        super().__init__(learning_rate, use_gradient_accumulation, clip_weight_min,
                         clip_weight_max, weight_decay_factor,
                         multiply_weight_decay_factor_by_learning_rate, clip_gradient_min,
                         clip_gradient_max)
        if initial_accumulator <= 0:
            raise ValueError("Adagrad initial_accumulator must be greater than zero. "
                             f"Received: {initial_accumulator}.")
        self.initial_accumulator = initial_accumulator


class AdamParameters(_OptimizationParameters):
    """Adam for TPU embedding tables, as the TPU runs it: no bias correction (fold it into
    a learning rate schedule), lazy by default (only the rows looked up change), with
    `sum_inside_sqrt` `m / sqrt(v + epsilon**2)` (slots `<table>/Adam/m`, `<table>/Adam/v`)."""

    def __init__(self, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-08, lazy_adam=True,
                 sum_inside_sqrt=True, use_gradient_accumulation=True, clip_weight_min=None,
                 clip_weight_max=None, weight_decay_factor=None,
                 multiply_weight_decay_factor_by_learning_rate=None, clip_gradient_min=None,
                 clip_gradient_max=None):
        super().__init__(learning_rate, use_gradient_accumulation, clip_weight_min,
                         clip_weight_max, weight_decay_factor,
                         multiply_weight_decay_factor_by_learning_rate, clip_gradient_min,
                         clip_gradient_max)
        if beta1 < 0. or beta1 >= 1.:
            raise ValueError(f"beta1 must be between 0. and 1; got {beta1}.")
        if beta2 < 0. or beta2 >= 1.:
            raise ValueError(f"beta2 must be between 0. and 1; got {beta2}.")
        if epsilon <= 0.:
            raise ValueError(f"epsilon must be positive; got {epsilon}.")
        if not use_gradient_accumulation and not lazy_adam:
            raise ValueError("When disabling Lazy Adam, gradient accumulation must be used.")
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_adam = lazy_adam
        self.sum_inside_sqrt = sum_inside_sqrt


class FtrlParameters(_OptimizationParameters):
    """FTRL for TPU embedding tables (slots `<table>/Ftrl` accumulator, `<table>/Ftrl_1`
    linear)."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_gradient_accumulation=True, clip_weight_min=None, clip_weight_max=None,
                 weight_decay_factor=None, multiply_weight_decay_factor_by_learning_rate=None,
                 multiply_linear_by_learning_rate=False, beta=0, allow_zero_accumulator=False,
                 clip_gradient_min=None, clip_gradient_max=None):
        super().__init__(learning_rate, use_gradient_accumulation, clip_weight_min,
                         clip_weight_max, weight_decay_factor,
                         multiply_weight_decay_factor_by_learning_rate, clip_gradient_min,
                         clip_gradient_max)
        if learning_rate_power > 0.:
            raise ValueError("learning_rate_power must be less than or equal to 0. "
                             f"got {learning_rate_power}.")
        if initial_accumulator_value < 0.:
            raise ValueError("initial_accumulator_value must be greater than or equal"
                             f" to 0. got {initial_accumulator_value}.")
        if l1_regularization_strength < 0.:
            raise ValueError("l1_regularization_strength must be greater than or "
                             f"equal to 0. got {l1_regularization_strength}.")
        if l2_regularization_strength < 0.:
            raise ValueError("l2_regularization_strength must be greater than or "
                             f"equal to 0. got {l2_regularization_strength}.")
        self.learning_rate_power = learning_rate_power
        self.initial_accumulator_value = initial_accumulator_value
        self.initial_linear_value = 0.0
        self.l1_regularization_strength = l1_regularization_strength
        self.l2_regularization_strength = l2_regularization_strength
        self.multiply_linear_by_learning_rate = multiply_linear_by_learning_rate
        self.beta = beta
        self.allow_zero_accumulator = allow_zero_accumulator


class StochasticGradientDescentParameters(_OptimizationParameters):
    """Plain SGD for TPU embedding tables: `table -= lr * g` on the rows looked up."""

    def __init__(self, learning_rate, use_gradient_accumulation=True, clip_weight_min=None,
                 clip_weight_max=None, weight_decay_factor=None,
                 multiply_weight_decay_factor_by_learning_rate=None, clip_gradient_min=None,
                 clip_gradient_max=None):
        super().__init__(learning_rate, use_gradient_accumulation, clip_weight_min,
                         clip_weight_max, weight_decay_factor,
                         multiply_weight_decay_factor_by_learning_rate, clip_gradient_min,
                         clip_gradient_max)


_SUPPORTED_OPTIMIZERS = (AdagradParameters, AdamParameters, FtrlParameters,
                         StochasticGradientDescentParameters)
_TPU_EMBEDDING_COLUMNS = (tpu_fc_v1._TPUEmbeddingColumn,  # pylint: disable=protected-access
                          tpu_fc_v1._TPUSharedEmbeddingColumn,  # pylint: disable=protected-access
                          tpu_fc_v2._TPUEmbeddingColumnV2,  # pylint: disable=protected-access
                          tpu_fc_v2._TPUSharedEmbeddingColumnV2)  # pylint: disable=protected-access
_DEVICE_SPECIFIC_COLUMNS = (
    tpu_fc_v2._TPUDeviceSpecificEmbeddingColumnV2,  # pylint: disable=protected-access
    tpu_fc_v2._TPUSharedDeviceSpecificEmbeddingColumnV2)  # pylint: disable=protected-access
_EMBEDDING_COLUMNS = (fc_v1._EmbeddingColumn,  # pylint: disable=protected-access
                      fc_v2.EmbeddingColumn,
                      fc_v1._SharedEmbeddingColumn)  # pylint: disable=protected-access
_NUMERIC_COLUMNS = (fc_v1._NumericColumn, fc_v2.NumericColumn)  # pylint: disable=protected-access


class EmbeddingConfigSpec(collections.namedtuple("EmbeddingConfigSpec", [
        "feature_columns", "tensor_core_feature_columns", "optimization_parameters",
        "clipping_limit", "pipeline_execution_with_tensor_core",
        "experimental_gradient_multiplier_fn", "feature_to_config_dict",
        "table_to_config_dict", "partition_strategy", "profile_data_directory"])):
    """What `TPUEstimator(embedding_config_spec=...)` trains as TPU embeddings.

    Args:
      feature_columns: the embedding columns of the model
        (`tf.tpu.experimental.embedding_column` / `shared_embedding_columns`); model_fn
        must use them (`tf.compat.v1.feature_column.input_layer`...).
      optimization_parameters: `AdagradParameters`, `AdamParameters`, `FtrlParameters` or
        `StochasticGradientDescentParameters`: trains every table with TPU semantics (the
        model's optimizer does not see them). With `use_tpu=False` the tables are ordinary
        variables trained by the model's optimizer, as in the original.
      clipping_limit, pipeline_execution_with_tensor_core, partition_strategy,
        profile_data_directory: the original's; TPU tuning knobs.
      experimental_gradient_multiplier_fn: `fn(global_step)` scaling every table's gradient.
      feature_to_config_dict, table_to_config_dict: TensorFlow 1's `tpu_embedding` configs,
        which TensorFlow 2 no longer ships: pass `feature_columns` instead.
    """

    __slots__ = ()

    def __new__(cls, feature_columns=None, optimization_parameters=None, clipping_limit=None,
                pipeline_execution_with_tensor_core=False,
                experimental_gradient_multiplier_fn=None, feature_to_config_dict=None,
                table_to_config_dict=None, partition_strategy="div",
                profile_data_directory=None):
        if ((not feature_columns and not (feature_to_config_dict and table_to_config_dict))
                or (feature_columns and (feature_to_config_dict and table_to_config_dict))):
            raise ValueError("Exactly one of `feature_columns` and the pair "
                             "`feature_to_config_dict` and `table_to_config_dict` "
                             "must be be specified.")
        if partition_strategy not in ("div", "mod"):
            raise ValueError(f"Invalid partition_strategy {partition_strategy}. Must be one "
                             'of "mod" or "div".')
        if not feature_columns:
            raise ValueError(
                "EmbeddingConfigSpec(feature_to_config_dict=..., table_to_config_dict=...) "
                "takes TensorFlow 1's tpu_embedding.FeatureConfig/TableConfig, which "
                "TensorFlow 2 no longer ships; describe the tables with feature_columns "
                "(tf.tpu.experimental.embedding_column / shared_embedding_columns) instead.")
        supported = _NUMERIC_COLUMNS + _TPU_EMBEDDING_COLUMNS + _EMBEDDING_COLUMNS
        embedding_core_columns, tensor_core_columns = [], []
        for column in feature_columns:
            (tensor_core_columns if _on_tensor_core(column) else embedding_core_columns).append(
                column)
            if not isinstance(column, supported):
                raise TypeError(f"All feature columns must be supported types in {supported}. "
                                f"Got {type(column)}")
        if not isinstance(optimization_parameters, _SUPPORTED_OPTIMIZERS):
            raise ValueError("optimization_parameters must be an instance of type "
                             f"{_SUPPORTED_OPTIMIZERS}. Got {type(optimization_parameters)}.")
        return super().__new__(
            cls, feature_columns=embedding_core_columns,
            tensor_core_feature_columns=tensor_core_columns,
            optimization_parameters=optimization_parameters, clipping_limit=clipping_limit,
            pipeline_execution_with_tensor_core=pipeline_execution_with_tensor_core,
            experimental_gradient_multiplier_fn=experimental_gradient_multiplier_fn,
            feature_to_config_dict=feature_to_config_dict,
            table_to_config_dict=table_to_config_dict, partition_strategy=partition_strategy,
            profile_data_directory=profile_data_directory)


def _on_tensor_core(column):
    """Whether a column looks up on the TensorCore (`embedding_lookup_device=
    'tpu_tensor_core'`), not with TPU embeddings."""
    return (isinstance(column, _DEVICE_SPECIFIC_COLUMNS)
            and column._embedding_lookup_device  # pylint: disable=protected-access
            == tpu_fc_v2.EmbeddingDevice.TPU_TENSOR_CORE)


def tpu_embedding_columns(spec):
    """The spec's columns that are TPU embedding columns (the others are looked up by
    model_fn's own code, as in the original)."""
    return [c for c in spec.feature_columns if isinstance(c, _TPU_EMBEDDING_COLUMNS)]
