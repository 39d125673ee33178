"""TPU embeddings with TPU semantics on any strategy: the tables of an `EmbeddingConfigSpec`.

As on a TPU, under TPU semantics (`use_tpu=True`) model_fn gets, in place of each embedding
feature's ids, its activations (`features[key]`: `[batch, dimension]`, the ids combined with
the column's combiner), and the columns return them when model_fn builds its input layer
(TensorFlow's TPU columns do so while a TPU shard context is set: `feature_columns_on_tpu`).
The tables are not the model's variables: its optimizer never sees them; the spec's
`optimization_parameters` train them from the loss's gradient with respect to the
activations, summed over the replicas (the TPU's embedding engine applies one update per
global batch). Each table is named as the original named it, `<scope>/embedding_weights`
with the variable scope where the column was used (`input_layer/<column>_embedding/...`),
and its slots after it (`/Adagrad`, `/Adam/m`, `/Adam/v`, `/Ftrl`, `/Ftrl_1`): the names
`use_tpu=False` gives the same tables, so checkpoints go both ways.

Here every table is a mirrored variable, looked up with ordinary gathers (the simulated
TPU, or any strategy); `tpu_embedding.py` builds the same tables for TensorFlow 2's
`tf.tpu.experimental.embedding.TPUEmbedding` on a TPU.

As the TPU's input path, ids are the raw feature values (the column's categorical
transformation is not applied): integers, a `SparseTensor` or a dense tensor whose zeros
are dropped (the original turned dense ids into sparse ones with `tf.where`). A column with
`combiner=None` takes its dense ids one per example (id 0 included) and sums a
`SparseTensor`'s, as the original's embedding engine did.
"""
import contextlib

import tensorflow as tf

from tpu_estimator_compat.api import embedding_spec as spec_lib
from tpu_estimator_compat.engine import embedding_optimizers
from tpu_estimator_compat.engine import step_graph
from tpu_estimator_compat.tf_internals import tpu as tf_tpu
from tpu_estimator_compat.tf1_behaviour import patches as legacy_patches

_v1 = tf.compat.v1


@contextlib.contextmanager
def feature_columns_on_tpu(num_shards):
    """Around model_fn's call (in its thread): TensorFlow's TPU embedding columns take
    their TPU path (return `features[key]`, record the variable scope of their table).
    A TPU replication context that already set it (TPUStrategy) is kept."""
    with tf_tpu.shard_context(num_shards):
        yield


class Table:
    """One embedding table: its shape, initializer, the features looking it up."""

    def __init__(self, column):
        self.key = column.get_embedding_var_name()  # the original's table id is 'tbl_' + key
        self.vocabulary_size, self.dimension = column.get_embedding_table_size()
        self.initializer = column.get_initializer()
        self.combiner = column.get_combiner()
        self.learning_rate_fn = column.get_learning_rate_fn()
        self.variable = None  # created by `TpuEmbeddings.create_tables`
        self.name = None  # the TF1 name, known once model_fn used the column


class TpuEmbeddings:
    """The tables of one `EmbeddingConfigSpec` on one strategy, and their training."""

    def __init__(self, spec, store):
        self.spec = spec
        self._store = store
        columns = spec_lib.tpu_embedding_columns(spec)
        if spec.tensor_core_feature_columns:
            raise ValueError(
                "Embedding columns with embedding_lookup_device='tpu_tensor_core' are not "
                "supported by tpu_estimator_compat under TPU semantics: leave "
                "embedding_lookup_device unset (TPU embeddings).")
        self.tables = {}
        self.features = {}  # feature key -> (table, weight key)
        for column in columns:
            if column.get_max_sequence_length():
                raise ValueError(
                    f"Embedding column {column.name!r} has max_sequence_length="
                    f"{column.get_max_sequence_length()}: sequence embedding columns are not "
                    "supported by tpu_estimator_compat under TPU semantics (use_tpu=True). Use "
                    "a non-sequence column, or train with use_tpu=False.")
            table = self.tables.setdefault(column.get_embedding_var_name(), Table(column))
            feature = column.get_feature_key_name()
            if feature in self.features:
                raise ValueError(f"Feature column {feature} is used with multiple embeddings "
                                 "and this is not supported.")
            self.features[feature] = (table, column.get_weight_key_name())

    def create_tables(self, strategy, per_replica_batch_size):
        """Creates the tables (eagerly, mirrored by `strategy`) the first time."""
        del per_replica_batch_size  # the mirrored tables take any batch
        with tf.init_scope(), strategy.scope():
            for table in self.tables.values():
                if table.variable is None:
                    shape = [table.vocabulary_size, table.dimension]
                    table.variable = tf.Variable(
                        table.initializer(shape, dtype=tf.float32), trainable=False,
                        name="tbl_" + table.key)

    def before_replicas(self, mode):
        """A function called with each step's element before the replicas run, or None."""
        del mode
        return None

    # -- in the replica function -----------------------------------------------------------
    def activations(self, features):
        """`features` with each embedding feature's ids replaced by its activations, and
        `{feature key: activations}`."""
        if not isinstance(features, dict):
            raise TypeError("With embedding_config_spec, input_fn must return features as a "
                            f"dict (the embedding columns read them by key); got {features!r}.")
        features = dict(features)
        looked_up = {}
        for key, (table, weight_key) in self.features.items():
            if key not in features:
                raise KeyError(f"The embedding column of feature {key!r} found no "
                               f"features[{key!r}]: input_fn returned {sorted(features)}.")
            ids = enqueued_ids(key, features.pop(key), table.combiner, weight_key)
            weights = _weights(weight_key, features)
            looked_up[key] = self._look_up(table, ids, weights)
        looked_up = self._finish_lookups(looked_up)
        features.update(looked_up)
        return features, looked_up

    def _look_up(self, table, ids, weights):
        # Off a TPU, on the host outside XLA: a TPU's embedding engine, not its XLA program,
        # does the (sparse) lookups.
        if not isinstance(ids, tf.SparseTensor):  # one id per example
            return legacy_patches.on_the_host(tf.gather, table.variable, ids)
        return legacy_patches.on_the_host(
            tf.nn.safe_embedding_lookup_sparse, table.variable, ids, weights,
            combiner=engine_combiner(table.combiner))

    def _finish_lookups(self, looked_up):
        return looked_up

    def resolve_names(self):
        """Names each table `<scope>/embedding_weights` from where model_fn used its column
        (the variable scope TensorFlow's TPU columns record), and registers it in the store.

        Raises the original's RuntimeError when model_fn used no embedding column. Replica 0's
        model_fn call names them: TF1 traced one replica, and here Keras layers of later
        replicas' calls, built in the same graph, are numbered on (`dense_features_3`...)."""
        graph = _v1.get_default_graph()
        scope_key = tf_tpu.TPU_FC_TO_SCOPE
        recorded = graph.get_collection_ref(scope_key)
        if not recorded:
            raise RuntimeError(
                "Embedding feature column did not capture any thing. Make sure the feature "
                "columns passed to TPUEstimator constructor is properly used in model_fn.")
        scopes = recorded[0]
        for table in self.tables.values():
            if table.key not in scopes:
                raise RuntimeError(
                    f"model_fn did not use the embedding column of table {table.key!r}: use "
                    "every column of EmbeddingConfigSpec.feature_columns in model_fn's input "
                    "layer, or leave it out of the spec.")
            if step_graph.current_replica():
                continue  # replica 0 named the tables (Keras numbers later replicas' layers on)
            scope, variable_name = scopes[table.key]
            name = f"{scope}/{variable_name}" if scope else variable_name
            if table.name not in (None, name):
                raise ValueError(f"Embedding table {table.key!r} was used under {table.name!r} "
                                 f"before and now under {name!r}: build the input layer in the "
                                 "same variable scope in every mode.")
            table.name = name
            for variable_name, variable in self._checkpointed(table):
                self._store.add_variable(variable_name, variable)
        graph.clear_collection(scope_key)

    def _checkpointed(self, table):
        """(TF1 name, variable) of a named table's variables the store saves and restores
        (the slots are created by the optimizer, through the store)."""
        return [(table.name, table.variable)]

    def train_op(self, spec_train_op, loss, looked_up):
        """The spec's train op grouped with the tables' update by the embedding optimizer
        (gradients of `loss`, summed over the replicas); `looked_up` is `activations`'."""
        del looked_up  # the gradients are taken at the tables
        global_step = _v1.train.get_global_step()
        tables = list(self.tables.values())

        def update_tables():  # the embedding engine's work on a TPU: outside XLA (above)
            grads = self._multiplied(
                tf.gradients(loss, [table.variable.handle for table in tables]), global_step)
            return embedding_optimizers.apply_gradients(
                self.spec.optimization_parameters, tables, grads, global_step)
        return tf.group(spec_train_op, legacy_patches.on_the_host(update_tables))

    def _multiplied(self, grads, global_step):
        """`grads` times `experimental_gradient_multiplier_fn(global_step)`, if any."""
        multiplier_fn = self.spec.experimental_gradient_multiplier_fn
        if multiplier_fn is None:
            return grads
        multiplier = tf.cast(multiplier_fn(global_step), tf.float32)
        return [_scaled(grad, multiplier) for grad in grads]


def engine_combiner(combiner):
    """How the TPU's embedding engine combined a row's ids: a column's combiner=None summed
    them (the original's embedding configuration)."""
    return combiner or "sum"


def enqueued_ids(key, ids, combiner, weight_key):
    """The ids of feature `key` as the original enqueued them: with `combiner=None`, dense
    ids one sample each (a `[batch]` tensor, id 0 an id like any other); otherwise a
    SparseTensor, combined by `engine_combiner(combiner)`."""
    if combiner is not None or isinstance(ids, tf.SparseTensor):
        return sparse_ids(key, ids)
    if weight_key is not None:
        raise ValueError(
            f"Found weights {weight_key} for weighted_categorical_column, which is not "
            f"compatible with sparse feature {key} enqueued as dense tensor.")
    ids = _integer_ids(key, tf.convert_to_tensor(ids))
    if ids.shape.rank == 2 and ids.shape[1] == 1:
        ids = tf.reshape(ids, [-1])
    if ids.shape.rank != 1:
        raise ValueError(
            f"Feature {key!r} has dense ids of shape {ids.shape} for an embedding column with "
            "combiner=None, which looks up one id per example: give it ids of shape [batch] "
            "(or [batch, 1]), or a SparseTensor (its ids are summed), or set the column's "
            "combiner to 'mean', 'sum' or 'sqrtn'.")
    return ids


def sparse_ids(key, ids):
    """The ids of feature `key` as a SparseTensor, as the original enqueued them."""
    ids = _integer_ids(key, ids)
    if isinstance(ids, tf.SparseTensor):
        return ids
    ids = tf.convert_to_tensor(ids)
    if ids.shape.rank == 1:
        ids = tf.expand_dims(ids, -1)
    indices = tf.where(tf.not_equal(ids, 0))
    return tf.SparseTensor(indices, tf.gather_nd(ids, indices),
                           tf.shape(ids, out_type=tf.int64))


def _integer_ids(key, ids):
    if not ids.dtype.is_integer:
        raise ValueError(
            "SparseTensor with string as values are not supported. If you are using "
            "categorical_column_with_vocabulary_file or categorical_column_with_vocabulary_list, "
            "please call your_column.categorical_column._transform_feature({your_column.key: "
            f"features[your_column.key]}}) in your input_fn() to convert string to int. "
            f"feature_key = {key}.")
    return ids


def _weights(weight_key, features):
    """The sparse weights of a weighted categorical column (popped from features), or None."""
    if weight_key is None:
        return None
    if weight_key not in features:
        raise ValueError(
            f"Cannot find weights {weight_key} for weighted_categorical_column. Please check "
            "if the weights are present in feature dict. Also note weight-sharing among "
            "weighted_categorical_column is not supported on TPU.")
    weights = features.pop(weight_key)
    if not isinstance(weights, tf.SparseTensor):
        raise ValueError(
            f"weighted_categorical_column with weight key name {weight_key} has dense "
            "weights. Dense weights are not supported on TPU. Please use sparse weights "
            "instead.")
    return tf.SparseTensor(weights.indices, tf.cast(weights.values, tf.float32),
                           weights.dense_shape)


def _scaled(grad, multiplier):
    if grad is None:
        return None
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values * multiplier, grad.indices, grad.dense_shape)
    return grad * multiplier
