"""An `EmbeddingConfigSpec` as TensorFlow 2's mid-level TPU embedding API, for a real TPU.

`tf.tpu.experimental.embedding.TPUEmbedding(feature_config, optimizer)` keeps the tables in
the TPU's embedding memory and runs the spec's optimizer there. This module translates the
spec: each table (`engine.embeddings.Table`) becomes a `TableConfig` (vocabulary size,
dimension, initializer, combiner, the column's `learning_rate_fn` as the table's own
optimizer's dynamic learning rate), each feature a `FeatureConfig` keyed by the feature
name model_fn's features use, and the `...Parameters` the TPU optimizer with the same
values (`clip_gradient_min/max` as `clipvalue`).

On a TPU the engine uses `TpuEmbeddingOnTpu`: each step's ids are enqueued before the
replicas run (dense ids turned sparse, zeros dropped, as the original did), model_fn gets
the dequeued activations, the train op sends the loss's gradients with respect to them
(`apply_gradients`), and the host's copies of the tables and slots (one host's shard) are
saved under the original's TF1 names, retrieved from the TPU before each read and loaded
back after each restore. Not runnable without a TPU: tests/test_tpu_embeddings.py drives it
on the simulated TPU with a stand-in for `TPUEmbedding`, and builds the real one's
configuration up to its construction.
"""
import tensorflow as tf

from tpu_estimator_compat.api import embedding_spec
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.engine import embeddings
from tpu_estimator_compat.engine import inputs
from tpu_estimator_compat.tf_internals import distribute
from tpu_estimator_compat.tf_internals import tpu as tf_tpu

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
            combiner=embeddings.engine_combiner(table.combiner), name=table.key)
    return {key: _embedding.FeatureConfig(table=table_configs[table.key], name=key)
            for key, table in tables_by_feature.items()}


def create(strategy, tables_by_feature, parameters, global_step):
    """The `TPUEmbedding` of the spec, created under `strategy` (a TPUStrategy)."""
    with strategy.scope():
        return _embedding.TPUEmbedding(
            feature_config=feature_config(tables_by_feature, parameters, global_step),
            optimizer=tpu_optimizer(parameters))


def runs_on_tpu(strategy):
    """Whether `strategy` drives a TPU (TPUEmbedding needs one)."""
    return isinstance(strategy, (tf.distribute.TPUStrategy,
                                 tf.distribute.experimental.TPUStrategy))


# TPUEmbedding's slot names -> the original's TF1 suffixes (accumulators: Adagrad's or FTRL's).
_SLOT_SUFFIXES = {"momenta": "Adam/m", "velocities": "Adam/v", "linears": "Ftrl_1"}


class TpuEmbeddingOnTpu(embeddings.TpuEmbeddings):
    """`embeddings.TpuEmbeddings` with the tables in the TPU's embedding memory."""

    make_embedding = staticmethod(create)  # (strategy, tables by feature, parameters, step)

    def __init__(self, spec, store):
        super().__init__(spec, store)
        self._embedding = None
        self._strategy = None

    def create_tables(self, strategy, per_replica_batch_size):
        if self._embedding is not None:
            return
        self._strategy = strategy
        tables_by_feature = {key: table for key, (table, _) in self.features.items()}
        with tf.init_scope():
            self._embedding = self.make_embedding(
                strategy, tables_by_feature, self.spec.optimization_parameters,
                self._store.global_step)
            self._embedding.build(per_replica_batch_size=per_replica_batch_size)
        for table in self.tables.values():
            table.variable = self._host_variables(table)["parameters"]
        self._store.add_sync_hooks(*tf_tpu.embedding_retrieve_and_load(self._embedding))

    def before_replicas(self, mode):
        def enqueue(element):
            features, _ = inputs.split_element(element if mode == ModeKeys.TRAIN else element[0])
            ids = {key: self._per_replica(
                lambda value, key=key, table=table, weight_key=weight_key:
                    embeddings.enqueued_ids(key, value, table.combiner, weight_key),
                features[key]) for key, (table, weight_key) in self.features.items()}
            weights = {key: features[weight_key] if weight_key else None
                       for key, (_, weight_key) in self.features.items()}
            self._embedding.enqueue(ids, weights=weights, training=mode == ModeKeys.TRAIN)
        return enqueue

    def _look_up(self, table, ids, weights):
        return None  # dequeued in `_finish_lookups`

    def _finish_lookups(self, looked_up):
        return dict(self._embedding.dequeue())

    def _checkpointed(self, table):
        named = []
        for slot, variable in self._host_variables(table).items():
            if slot == "parameters":
                named.append((table.name, variable))
            else:
                suffix = _SLOT_SUFFIXES.get(slot) or (
                    "Ftrl" if isinstance(self.spec.optimization_parameters,
                                         embedding_spec.FtrlParameters) else "Adagrad")
                named.append((f"{table.name}/{suffix}", variable))
        return named

    def train_op(self, spec_train_op, loss, looked_up):
        keys = sorted(looked_up)
        grads = tf.gradients(loss, [looked_up[key] for key in keys])
        grads = self._multiplied(grads, tf.compat.v1.train.get_global_step())
        update = self._embedding.apply_gradients(dict(zip(keys, grads)))
        return tf.group([spec_train_op] + ([update] if update is not None else []))

    def _host_variables(self, table):
        """{'parameters' or slot name: variable} of one table on the host (one shard)."""
        found = {}
        for slot, variable in tf_tpu.embedding_variables(self._embedding, table.key).items():
            shards = getattr(variable, "variables", [variable])
            if len(shards) != 1:
                raise NotImplementedError(
                    f"Embedding table {table.key!r} is sharded over {len(shards)} TPU hosts; "
                    "tpu_estimator_compat saves TPU embedding tables of one host only. Train "
                    "on a TPU with one host (e.g. v3-8), or use_tpu=False.")
            found[slot] = shards[0]
        return found

    def _per_replica(self, fn, value):
        """`fn` applied to each replica's part of a distributed `value`."""
        if not isinstance(value, tf.distribute.DistributedValues):
            return fn(value)
        return distribute.regroup(
            [fn(part) for part in self._strategy.experimental_local_results(value)])


def _clip_value(parameters):
    if parameters.clip_gradient_min is None and parameters.clip_gradient_max is None:
        return None
    return (parameters.clip_gradient_min, parameters.clip_gradient_max)
