"""TensorFlow's TPU internals the TPU embedding support relies on: the feature-column
classes of `tf.compat.v1.tpu.experimental.embedding_column` and friends, their TPU
replication context and inference context."""
import contextlib

from tensorflow.python.feature_column import feature_column as fc_v1
from tensorflow.python.feature_column import feature_column_v2 as fc_v2
from tensorflow.python.tpu import feature_column as tpu_fc_v1
from tensorflow.python.tpu import feature_column_v2 as tpu_fc_v2
from tensorflow.python.tpu import tpu
from tensorflow.python.tpu import tpu_function

from tpu_estimator_compat.tf_internals._symbols import Symbol, uses

_FC = "tensorflow.python.feature_column"
_TPU = "tensorflow.python.tpu"
_COLUMNS = "EmbeddingConfigSpec tells TPU embedding columns from other columns"
SYMBOLS = uses(
    *(Symbol(f"{_TPU}.feature_column", name, _COLUMNS)
      for name in ("_TPUEmbeddingColumn", "_TPUSharedEmbeddingColumn", "_TPU_FC_TO_SCOPE")),
    *(Symbol(f"{_TPU}.feature_column_v2", name, _COLUMNS)
      for name in ("_TPUEmbeddingColumnV2", "_TPUSharedEmbeddingColumnV2",
                   "_TPUDeviceSpecificEmbeddingColumnV2",
                   "_TPUSharedDeviceSpecificEmbeddingColumnV2", "EmbeddingDevice")),
    Symbol(f"{_TPU}.feature_column_v2", "_TPUDeviceSpecificEmbeddingColumnV2."
           "_embedding_lookup_device",
           "columns with embedding_lookup_device='tpu_tensor_core' look up on the TensorCore",
           per_instance=True),
    *(Symbol(f"{_FC}.feature_column", name, _COLUMNS)
      for name in ("_EmbeddingColumn", "_SharedEmbeddingColumn", "_NumericColumn")),
    Symbol(f"{_TPU}.tpu_function", "tpu_shard_context",
           "TPU embedding columns take their TPU path while model_fn runs"),
    Symbol(f"{_TPU}.tpu_function", "get_tpu_context",
           "TPU embedding columns take their TPU path while model_fn runs"),
    *(Symbol("tensorflow.python.tpu.tpu_embedding_v2", f"TPUEmbedding.{name}",
             "TPU embedding tables are read from the TPU before checkpoints and loaded back "
             "after restores, under the original's TF1 names")
      for name in ("_retrieve_variables", "_load_variables")),
    Symbol("tensorflow.python.tpu.tpu_embedding_v2", "TPUEmbedding._variables",
           "TPU embedding tables are read from the TPU before checkpoints and loaded back "
           "after restores, under the original's TF1 names", per_instance=True),
    Symbol(f"{_TPU}.tpu", "_TPUInferenceContext",
           "the exported TPU MetaGraph looks TPU embedding columns up on the host, as the "
           "original's TPU inference"),
)

TPU_EMBEDDING_COLUMNS = (
    tpu_fc_v1._TPUEmbeddingColumn, tpu_fc_v1._TPUSharedEmbeddingColumn,  # pylint: disable=protected-access
    tpu_fc_v2._TPUEmbeddingColumnV2, tpu_fc_v2._TPUSharedEmbeddingColumnV2)  # pylint: disable=protected-access
DEVICE_SPECIFIC_COLUMNS = (
    tpu_fc_v2._TPUDeviceSpecificEmbeddingColumnV2,  # pylint: disable=protected-access
    tpu_fc_v2._TPUSharedDeviceSpecificEmbeddingColumnV2)  # pylint: disable=protected-access
EMBEDDING_COLUMNS = (fc_v1._EmbeddingColumn, fc_v2.EmbeddingColumn,  # pylint: disable=protected-access
                     fc_v1._SharedEmbeddingColumn)  # pylint: disable=protected-access
NUMERIC_COLUMNS = (fc_v1._NumericColumn, fc_v2.NumericColumn)  # pylint: disable=protected-access
TPU_FC_TO_SCOPE = tpu_fc_v1._TPU_FC_TO_SCOPE  # pylint: disable=protected-access


def looks_up_on_tensor_core(column):
    """Whether a device-specific TPU embedding column looks up on the TensorCore."""
    return (column._embedding_lookup_device  # pylint: disable=protected-access
            == tpu_fc_v2.EmbeddingDevice.TPU_TENSOR_CORE)


def embedding_retrieve_and_load(embedding):
    """(retrieve, load): a `tf.tpu.experimental.embedding.TPUEmbedding`'s functions that copy
    its tables from the TPU to their host variables and back."""
    return (embedding._retrieve_variables,  # pylint: disable=protected-access
            embedding._load_variables)  # pylint: disable=protected-access


def embedding_variables(embedding, table_key):
    """{'parameters' or slot name: host variable} of one table of a TPUEmbedding."""
    return embedding._variables[table_key]  # pylint: disable=protected-access


@contextlib.contextmanager
def shard_context(num_shards):
    """TensorFlow's TPU replication context of `num_shards` shards; one already set (by
    TPUStrategy) is kept."""
    if tpu_function.get_tpu_context().number_of_shards is not None:
        yield
        return
    with tpu_function.tpu_shard_context(num_shards):
        yield


@contextlib.contextmanager
def inference_context():
    """TensorFlow's TPU inference context (TPU embedding columns look up on the host)."""
    inference = tpu._TPUInferenceContext(  # pylint: disable=protected-access
        "tpu_inference", check_ops=False)
    inference.Enter()
    try:
        yield
    finally:
        inference.Exit()
