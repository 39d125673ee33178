"""From `input_fn(params)` to a distributed dataset whose elements reach the replicas the way
the original's input pipeline modes sent them (see `batching.py` for the table).

For EVAL and PREDICT every batch also carries signals (`padding.py`): batches are padded to
their static size with a mask, and an endless run of all-padding "stop" batches follows the
data, so the device loop can run a finite input to its end without a dynamic shape or an
end-of-sequence error, and every real example counts exactly once.

Several hosts (workers): `input_fn` runs once per host (`distribute_datasets_from_function`),
with the per-host batch of `batching.py`. Nothing is sharded automatically (tf.data
auto-sharding does not apply to `distribute_datasets_from_function`): as in the original,
each host reads its own part of the data, e.g. `dataset.shard(context.num_hosts,
context.current_host)` or files chosen by `context.current_input_fn_deployment()`, or by
`input_context` (`input_pipeline_id`, `num_input_pipelines`) with CPU/GPU semantics.

The host dataset is autotuned as TensorFlow does by default (`AUTOTUNE` parallelism and
buffer sizes; an input_fn may turn it off in its dataset's options); the estimator destroys
each call's iterator off its own thread (`input_release.py`: TensorFlow 2.21's autotuning
thread can hold a destruction for up to a minute). `MultiDeviceIterator`'s per-device
datasets (a generator and a fixed prefetch: nothing to tune) run without an autotuning
thread.

Replicas on this process's CPUs (one CPU device, or the simulated TPU's logical CPUs) read
the host dataset's own iterator: each step takes the next batch of every replica in turn,
as `distribute_datasets_from_function` hands them out, without MultiDeviceIterator, whose
creation cost 0.08 s of each evaluate() call on one replica and 0.4-0.7 s on 8.
"""
import weakref

import tensorflow as tf

from tpu_estimator_compat.engine import input_checks
from tpu_estimator_compat.engine import input_errors
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.engine import padding
from tpu_estimator_compat.engine import parameter_servers
from tpu_estimator_compat.tf1_behaviour import fed_iterators
from tpu_estimator_compat.tf1_behaviour import iterators
from tpu_estimator_compat.tf1_behaviour import shapes as tf1_shapes
from tpu_estimator_compat.api import embedding_spec
from tpu_estimator_compat.api import tpu_context
from tpu_estimator_compat.engine.batching import Distribution
from tpu_estimator_compat.config.tpu_config import InputPipelineConfig
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.tf_internals import data as tf_data
from tpu_estimator_compat.tf_internals import distribute as tf_distribute
from tpu_estimator_compat.tf_internals import graphs


def as_dataset(input_fn_result):
    """input_fn may return a Dataset, a (features, labels) pair of tensors or features alone
    (anything else: an error from `input_checks`)."""
    if isinstance(input_fn_result, tf.compat.v1.data.Dataset):
        input_fn_result = tf_data.unwrap_v1_dataset(input_fn_result)
    if isinstance(input_fn_result, tf.data.Dataset):
        input_checks.check_element_spec(input_fn_result.element_spec)
        return input_fn_result
    input_checks.check_result(input_fn_result)
    return input_checks.to_tensors(input_fn_result).repeat()


def split_element(element):
    """(features, labels) of a dataset element; labels is None for features-only input."""
    if isinstance(element, tuple) and len(element) == 2:
        return element
    return element, None


def distributed_iterator(input_fn, mode, runtime, plan, estimator_facts,
                         until_input_ends=False):
    """The distributed input iterator for one call of train/evaluate/predict (the host
    dataset's own iterator for replicas on this process's CPUs).

    `until_input_ends` (evaluate(steps=None)): an input known to be endless raises, naming
    the fix, before any work; one of unknown length is logged as running to its end.
    """
    strategy = runtime.strategy
    if runtime.coordinator is not None:  # parameter servers: each worker's own input
        return parameter_servers.PerWorkerInput(
            runtime.coordinator, lambda: distributed_input(
                input_fn, mode, runtime, plan, estimator_facts, until_input_ends))
    called = []  # input_fn's datasets: an input error names their files (`input_errors`)
    op_seeds = graphs.OpSeedCount()
    if _on_local_cpus(strategy):
        # The host dataset's iterator, without MultiDeviceIterator's hop to devices that
        # share the host's memory (and its per-call tracing of per-device functions).
        context = tf.distribute.InputContext(
            num_input_pipelines=1, input_pipeline_id=0,
            num_replicas_in_sync=strategy.num_replicas_in_sync)
        with tf.device(strategy.extended.worker_devices[0]):
            iterator = iter(_host_dataset_fn(input_fn, mode, runtime, plan, estimator_facts,
                                             until_input_ends, called, op_seeds)(context))
    else:
        dataset = distributed_input(input_fn, mode, runtime, plan, estimator_facts,
                                    until_input_ends, called, op_seeds)
        # MultiDeviceIterator's per-device datasets without an autotuning thread (TensorFlow
        # offers no option for them).
        with tf_data.per_device_datasets_transformed(_without_autotune):
            iterator = iter(dataset)
    input_errors.remember(iterator, called)
    try:
        _op_seeds_used[iterator] = op_seeds.used
    except TypeError:
        pass  # an iterator without weak references: model_fn's op seeds start at 0
    return iterator


_op_seeds_used = weakref.WeakKeyDictionary()


def op_seeds_used(iterator):
    """How many op seeds of TF1's graph sequence the input_fn calls behind `iterator` took
    (their unseeded random ops, e.g. `dataset.shuffle(n)`): model_fn's unseeded random ops
    take the next ones, as they did in TF1's graph, where input_fn was built first."""
    return _op_seeds_used.get(iterator, 0)


def _on_local_cpus(strategy):
    """Whether every replica of `strategy` is on a CPU device of this process
    (OneDeviceStrategy, or MirroredStrategy over CPU devices: `MirroredStrategy()` on a
    machine without GPU, the simulated TPU's logical CPUs)."""
    if not isinstance(strategy, (tf.distribute.OneDeviceStrategy, tf.distribute.MirroredStrategy)):
        return False
    devices = [tf.DeviceSpec.from_string(d) for d in strategy.extended.worker_devices]
    return all(d.device_type == "CPU" and d.job in (None, "localhost") for d in devices)


def _feeds_replicas_from_host(strategy, iterator):
    """Whether `iterator` is the host dataset's own iterator (`distributed_iterator`) with
    more than one replica to feed."""
    return isinstance(iterator, tf.data.Iterator) and strategy.num_replicas_in_sync > 1


def step_element_spec(strategy, iterator):
    """The element spec of one step's input: the iterator's, or for replicas fed from the
    host's iterator, each part once per replica (what a distributed iterator's spec is)."""
    if not _feeds_replicas_from_host(strategy, iterator):
        return iterator.element_spec
    replicas = strategy.num_replicas_in_sync
    return tf.nest.map_structure(lambda spec: tf_distribute.PerReplicaSpec(*[spec] * replicas),
                                 iterator.element_spec)


def step_element_reader(strategy, iterator):
    """`read(iterator)`: one step's input, inside the device loop. For replicas fed from the
    host's iterator, the next batch of each replica in replica order (elements go round
    robin, as `distribute_datasets_from_function` hands them out), as per-replica values."""
    if not _feeds_replicas_from_host(strategy, iterator):
        return next
    replicas = strategy.num_replicas_in_sync

    def read(host_iterator):
        return tf_distribute.regroup([host_iterator.get_next() for _ in range(replicas)])
    return read


def distributed_input(input_fn, mode, runtime, plan, estimator_facts, until_input_ends=False,
                      called=None, op_seeds=None):
    """The distributed dataset for one call of train/evaluate/predict.

    `estimator_facts` carries the user's params, the RunConfig and `use_tpu`; input_fn's
    datasets are appended to the list `called` (if given). With a `tf_random_seed`, input_fn's
    unseeded random ops take TF1's op seeds 0, 1, ... across its calls, counted in
    `op_seeds` (a `graphs.OpSeedCount`, if given).
    """
    return runtime.strategy.distribute_datasets_from_function(
        _host_dataset_fn(input_fn, mode, runtime, plan, estimator_facts, until_input_ends,
                         called, op_seeds))


def _host_dataset_fn(input_fn, mode, runtime, plan, estimator_facts, until_input_ends,
                     called=None, op_seeds=None):
    """`host_dataset(input_context)`: one host's dataset of replica batches (input_fn's
    datasets appended to `called`, if given). The calls of one train/evaluate/predict share
    TF1's op-seed sequence (`op_seeds`), as TF1 built every host's and replica's input in
    the call's one graph, in this order."""
    op_seeds = op_seeds or graphs.OpSeedCount()
    with_signals = mode != ModeKeys.TRAIN
    if runtime.num_hosts > 1:
        logging.info(
            "input_fn runs once on each of the %d hosts, with batch size %s; each host must "
            "read its own shard of the data (nothing is sharded automatically).",
            runtime.num_hosts, plan.input_fn_batch_size)

    def host_dataset(input_context):
        host_id = input_context.input_pipeline_id if input_context else 0
        with graphs.global_seed(getattr(estimator_facts.config, "tf_random_seed", None)), \
                graphs.tf1_op_seeds(op_seeds):
            datasets = [_call(input_fn, mode, runtime, plan, estimator_facts, host_id, index,
                              input_context)
                        for index in range(plan.input_fn_calls_per_host)]
        if called is not None:
            called.extend(datasets)
        if until_input_ends:
            _check_input_ends(datasets[0])
        if with_signals:
            # One process: every local replica has seen a stop batch after 2 rounds of them.
            # Several: others may still have data, so stop batches never end.
            stop_batches = None if runtime.num_workers > 1 else 2 * runtime.replicas_per_host
            datasets = [padding.add_signals(ds, plan.input_fn_batch_size,
                                            pad=runtime.tpu_semantics, stop_batches=stop_batches)
                        for ds in datasets]
        if plan.input_mode == InputPipelineConfig.SLICED and runtime.num_hosts > 1:
            datasets = [_host_slice(ds, host_id, runtime.num_hosts) for ds in datasets]
        dataset = _to_replica_batches(datasets, plan, runtime.replicas_per_host)
        if runtime.tpu_semantics:
            element_spec = dataset.element_spec
            _require_static_shapes(element_spec[0] if with_signals else element_spec,
                                   _embedding_feature_keys(estimator_facts))
        return dataset.prefetch(tf.data.AUTOTUNE)

    return host_dataset


def _without_autotune(dataset):
    """A per-device dataset of MultiDeviceIterator, without an autotuning thread."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def _call(input_fn, mode, runtime, plan, facts, host_id, index, input_context):
    context = None
    if runtime.tpu_semantics:
        context = tpu_context.input_fn_context(
            runtime, host_id, *_deployment(runtime, plan, host_id, index))
    params = facts.call_params(batch_size=plan.input_fn_batch_size, context=context,
                               use_tpu=runtime.tpu_semantics)
    def call(params):
        result = model_bridge.call_input_fn(input_fn, mode, params, facts.config, input_context)
        if isinstance(result, tuple) and len(result) == 2 and result[1] is None:
            return result[0]  # `return features, None`: features alone, labels None
        return result

    with logging.phase("calling input_fn for %s", mode), tf1_shapes.tf1_shapes(), \
            fed_iterators.eager_refusals(), iterators.recording_iterators() as recorded:
        try:
            result = call(params)
        except RuntimeError as error:  # placeholders, iterators a hook's run initializes
            if not fed_iterators.needs_graph(error):
                raise
            result = fed_iterators.fed_dataset(
                lambda: call(facts.call_params(
                    batch_size=plan.input_fn_batch_size, context=context,
                    use_tpu=runtime.tpu_semantics)),
                seed=facts.config.tf_random_seed)
    try:
        iterated = recorded.dataset_of(result)  # `make_one_shot_iterator().get_next()`
    except iterators.ComputedFromIterator:  # ops on that element: run them on every batch
        iterated = iterators.computed_dataset(
            lambda: call(facts.call_params(
                batch_size=plan.input_fn_batch_size, context=context,
                use_tpu=runtime.tpu_semantics)),
            recorded, seed=facts.config.tf_random_seed)
    if iterated is not None:
        result = iterated
    if (mode == ModeKeys.PREDICT and runtime.tpu_semantics
            and not isinstance(result, (tf.data.Dataset, tf.compat.v1.data.Dataset))):
        raise TypeError("For mode PREDICT, `input_fn` must return `Dataset` instead of "
                        "`features` and `labels`.")
    return as_dataset(result)


def _check_input_ends(dataset):
    """evaluate(steps=None) on `dataset` (the first input_fn result of a host)."""
    cardinality = int(dataset.cardinality())
    if cardinality == tf.data.INFINITE_CARDINALITY:
        raise ValueError(
            "evaluate(steps=None) evaluates until the input ends, but the eval input_fn's "
            "input is endless (infinite cardinality: a dataset.repeat(), or features/labels "
            "tensors instead of a Dataset, which repeat their batch), so evaluation would never "
            "finish. Pass evaluate(steps=N) to evaluate N batches, or drop repeat() from the "
            "eval input_fn.")
    if cardinality == tf.data.UNKNOWN_CARDINALITY:
        logging.info("evaluate(steps=None): evaluating until the eval input_fn's input ends "
                     "(its length is not known in advance; an endless input never ends: "
                     "pass steps to bound it).")


def _deployment(runtime, plan, host_id, index):
    """(invocation index, total invocations, replicas consumed) of one input_fn call, as
    the original numbered them for `current_input_fn_deployment()`."""
    if plan.distribution == Distribution.INTERLEAVED:  # PER_SHARD_V1: a call per replica
        calls = plan.input_fn_calls_per_host
        return host_id * calls + index, runtime.num_hosts * calls, 1
    if plan.distribution == Distribution.COPIED:  # BROADCAST: one batch for every replica
        return 0, 1, runtime.num_replicas
    return host_id, runtime.num_hosts, runtime.replicas_per_host


def _host_slice(dataset, host_id, num_hosts):
    """SLICED on several hosts: every host reads the global batch and keeps its own rows
    (the rows its replicas get when the global batch is split across all replicas)."""
    def host_rows(*element):
        def rows(tensor):
            per_host = tensor.shape[0] // num_hosts
            return tensor[host_id * per_host:(host_id + 1) * per_host]
        return tf.nest.map_structure(rows, element if len(element) > 1 else element[0])
    return dataset.map(host_rows)


def _to_replica_batches(datasets, plan, replicas_per_host):
    if plan.distribution == Distribution.INTERLEAVED:
        choices = tf.data.Dataset.range(len(datasets)).repeat()
        return tf.data.Dataset.choose_from_datasets(datasets, choices)
    (dataset,) = datasets
    if plan.distribution == Distribution.SPLIT and replicas_per_host > 1:
        return _split_per_replica(dataset, replicas_per_host)
    if plan.distribution == Distribution.COPIED and replicas_per_host > 1:
        return dataset.flat_map(
            lambda *element: tf.data.Dataset.from_tensors(
                element if len(element) > 1 else element[0]).repeat(replicas_per_host))
    return dataset


def _split_per_replica(dataset, replicas):
    """PER_HOST_V1 and SLICED: every tensor of a batch split along its first dimension into
    one piece per replica, in order, whatever its own batch size (as the original's infeed
    split each tensor per core: features {'labeled': [B], 'unlabeled': [k B]} give each
    replica [B / R] and [k B / R] rows)."""
    for spec in tf.nest.flatten(dataset.element_spec):
        _check_splittable(spec.shape, replicas)

    def pieces(tensor):
        if isinstance(tensor, tf.SparseTensor):  # a TPU embedding feature's ids
            return tf.sparse.reshape(tensor, tf.concat(
                [[replicas, -1], tensor.dense_shape[1:]], 0))
        rows = tf.shape(tensor, out_type=tf.int32)[0]
        with tf.control_dependencies([tf.debugging.assert_equal(
                rows % replicas, 0, message=_cannot_split(tensor.shape, replicas))]):
            split = tf.reshape(tensor, tf.concat([[replicas, -1], tf.shape(tensor)[1:]], 0))
        rows = tf.compat.dimension_value(tensor.shape[0])
        return tf.ensure_shape(split, [replicas, rows // replicas if rows else None]
                               + tensor.shape[1:].as_list())

    return dataset.map(lambda *element: tf.nest.map_structure(
        pieces, element if len(element) > 1 else element[0])).unbatch()


def _check_splittable(shape, replicas):
    rows = tf.compat.dimension_value(shape[0]) if shape.rank else None
    if shape.rank == 0 or (rows is not None and rows % replicas):
        raise ValueError(_cannot_split(shape, replicas))


def _cannot_split(shape, replicas):
    return (f"Shape {shape.as_list() if shape.rank is not None else shape} cannot be sharded "
            f"{replicas} ways along dimension 0. Each tensor input_fn returns is split along "
            f"its first dimension into one piece per core of the host ({replicas}): give "
            f"every part of the batch a first dimension divisible by {replicas}.")


def _embedding_feature_keys(estimator_facts):
    """The features TPU embedding columns read: the original sent their ids to the embedding
    engine, not through the infeed, so their shapes may vary (a `VarLenFeature`'s)."""
    spec = getattr(estimator_facts, "embedding_config_spec", None)
    if spec is None:
        return frozenset()
    return frozenset(column.get_feature_key_name()
                     for column in embedding_spec.tpu_embedding_columns(spec))


def _require_static_shapes(element_spec, exempt_feature_keys=frozenset()):
    features, labels = split_element(element_spec)
    if isinstance(features, dict) and exempt_feature_keys:
        features = {k: v for k, v in features.items() if k not in exempt_feature_keys}
    for kind, structure in (("features", features), ("labels", labels)):
        for spec in tf.nest.flatten(structure) if structure is not None else ():
            if not spec.shape.is_fully_defined():
                raise ValueError(
                    f"The {kind} to the model returned by input_fn must have static shape. "
                    f"Tensor: {spec}. With use_tpu=True every batch must have the same shape: "
                    "batch with drop_remainder=True (dataset.batch(batch_size, "
                    "drop_remainder=True)) and give every feature a fixed size.")
