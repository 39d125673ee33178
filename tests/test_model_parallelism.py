"""Model parallelism (`TPUConfig.num_cores_per_replica`, `input_partition_dims`): replicas of k
cores on the simulated TPU (8 logical CPUs) end to end, and on a TPU up to the TPUStrategy
call (device assignments built from topology descriptions, partition dims validated and
handed to the strategy's split)."""
import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from tpu_estimator_compat.engine import cluster_resolver
from tpu_estimator_compat.engine import model_parallelism
from tpu_estimator_compat.engine import runtime as runtime_lib

pytestmark = pytest.mark.slow  # estimator runs (and processes): seconds each

IPC = tec.InputPipelineConfig
v1 = tf.compat.v1
FEATURES = np.random.RandomState(1).randn(128, 4).astype(np.float32)
TARGETS = (FEATURES @ np.array([[1.0], [-2.0], [3.0], [0.5]]) + 0.1).astype(np.float32)
GLOBAL_BATCH = 16


def _topology(mesh_shape, tasks):
    """A TPU topology description: `tasks` hosts sharing the mesh's cores in order."""
    coordinates = [[x, y, z, c] for z in range(mesh_shape[2]) for y in range(mesh_shape[1])
                   for x in range(mesh_shape[0]) for c in range(mesh_shape[3])]
    per_task = len(coordinates) // tasks
    return tf.tpu.experimental.Topology(
        mesh_shape=mesh_shape,
        device_coordinates=[coordinates[t * per_task:(t + 1) * per_task] for t in range(tasks)])


V3_8 = ([2, 2, 1, 2], 1)  # one host, 4 chips of 2 cores
V3_16 = ([2, 4, 1, 2], 2)  # two hosts of 8 cores


@pytest.mark.parametrize("cores_per_replica, mesh_shape, expected", [
    (2, [2, 2, 1, 2], [1, 1, 1, 2]),  # the original's table where it fits
    (4, [2, 2, 1, 2], [1, 2, 1, 2]),
    (8, [2, 2, 1, 2], [2, 2, 1, 2]),
    (16, [2, 4, 1, 2], [2, 4, 1, 2]),  # the table's [4, 2, 1, 2] does not fit this mesh
    (2, [1, 1, 1, 8], [1, 1, 1, 2]),  # the simulated TPU: cores in a row
    (4, [1, 1, 1, 8], [1, 1, 1, 4]),
    (2, [2, 2, 1, 1], [1, 2, 1, 1]),  # one core per chip (TPU v4)
])
def test_computation_shape(cores_per_replica, mesh_shape, expected):
    assert model_parallelism.computation_shape(cores_per_replica, mesh_shape) == expected


def test_computation_shape_that_cannot_tile_the_mesh_names_the_fix():
    with pytest.raises(ValueError, match=r"num_cores_per_replica=4 does not fit the TPU "
                                         r"topology's mesh \[1, 1, 1, 2\]"):
        model_parallelism.computation_shape(4, [1, 1, 1, 2])


@pytest.mark.parametrize("cores_per_replica, replicas", [(1, 8), (2, 4), (4, 2), (8, 1)])
def test_device_assignment_on_a_v3_8_topology(cores_per_replica, replicas):
    assignment = model_parallelism.device_assignment_for(
        _topology(*V3_8), cores_per_replica, IPC.PER_HOST_V2)
    assert assignment.num_replicas == replicas
    assert assignment.num_cores_per_replica == cores_per_replica
    cores = {tuple(c) for replica in assignment.core_assignment.tolist() for c in replica}
    assert len(cores) == 8  # every core used once
    assert assignment.host_device(replica=replicas - 1, job="worker") == (
        "/job:worker/task:0/device:CPU:0")


def test_replica_spanning_hosts_needs_per_host_v2_as_in_the_original():
    topology = _topology(*V3_16)
    assignment = model_parallelism.device_assignment_for(topology, 16, IPC.PER_HOST_V2)
    assert assignment.num_replicas == 1
    with pytest.raises(ValueError, match=(
            "Except the PER_HOST_V2 mode, the num of cores required by model parallelism "
            "specified by TPUConfig.num_cores_per_replica should be less than or equal to the "
            "num_cores_per_host. num_cores_per_replica: 16, num_cores_per_host: 8")):
        model_parallelism.device_assignment_for(topology, 16, IPC.PER_HOST_V1)


def test_more_cores_per_replica_than_the_system_has():
    with pytest.raises(ValueError, match=(
            "The num of cores required by the model parallelism, specified by "
            "TPUConfig.num_cores_per_replica, is larger than the total num of TPU cores in the "
            "system. num_cores_per_replica: 16, num cores in the system: 8")):
        model_parallelism.device_assignment_for(_topology(*V3_8), 16, IPC.PER_HOST_V2)


class _FakeTPUStrategy:
    def __init__(self, resolver, experimental_device_assignment=None):
        self.resolver = resolver
        self.device_assignment = experimental_device_assignment


class _Resolver(tf.distribute.cluster_resolver.SimpleClusterResolver):
    def __init__(self):
        super().__init__(tf.train.ClusterSpec({}), master="grpc://10.0.0.2:8470")


def test_tpu_strategy_gets_the_device_assignment(monkeypatch):
    """A real TPU, up to the TPUStrategy call: the system's topology gives the assignment."""
    calls = []
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster", calls.append)
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system",
                        lambda resolver: _topology(*V3_8))
    monkeypatch.setattr(tf.distribute, "TPUStrategy", _FakeTPUStrategy)
    monkeypatch.setattr(runtime_lib, "_tpu_strategies", {})
    monkeypatch.setattr(runtime_lib, "_tpu_topologies", {})
    config = tec.RunConfig(cluster=_Resolver(), tpu_config=tec.TPUConfig(
        num_cores_per_replica=4, per_host_input_for_training=IPC.PER_HOST_V2))
    strategy, assignment = runtime_lib._tpu_strategy(config, 4, IPC.PER_HOST_V2)
    assert strategy.device_assignment is assignment
    assert (assignment.num_replicas, assignment.num_cores_per_replica) == (2, 4)
    assert assignment.core_assignment[0].tolist() == [[0, 0, 0, 0], [0, 0, 0, 1],
                                                      [0, 1, 0, 0], [0, 1, 0, 1]]
    plain, none = runtime_lib._tpu_strategy(config, None, IPC.PER_HOST_V2)
    assert none is None and plain.device_assignment is None
    assert len(calls) == 1  # the TPU system is initialised once


# -- input_partition_dims ------------------------------------------------------------------

def _spec(*shape):
    return tf.zeros(shape)


def _split_recorder():
    calls = []

    def split(tensor, dims):
        calls.append((tensor.shape.as_list(), dims))
        return tensor
    return calls, split


def test_partition_dims_split_the_tensors_named_on_a_tpu():
    calls, split = _split_recorder()
    features = {"image": _spec(2, 8, 8, 3), "id": _spec(2, 1)}
    labels = _spec(2, 8, 8, 1)
    dims = [{"image": [1, 2, 2, 1], "id": None}, [1, 2, 2, 1]]
    model_parallelism.partition_inputs(features, labels, dims, 4, split)
    assert calls == [([2, 8, 8, 3], [1, 2, 2, 1]), ([2, 8, 8, 1], [1, 2, 2, 1])]
    calls.clear()
    model_parallelism.partition_inputs(features, labels, [{"image": [1, 1, 1, 1], "id": None}],
                                       4, split)
    assert calls == []  # product 1: replicated; no label dims: labels replicated
    model_parallelism.partition_inputs((_spec(2, 8), _spec(2, 4)), _spec(2, 8),
                                       [(None, [1, 4]), [1, 4]], 4, split)
    assert calls == [([2, 4], [1, 4]), ([2, 8], [1, 4])]  # a tuple of features


@pytest.mark.parametrize("features, dims, message", [
    ({"image": _spec(2, 8)}, [{"img": [1, 4]}],
     r"TPUConfig.input_partition_dims\[0\] mismatched feature keys. Expected \['image'\], "
     r"got \['img'\]"),
    ({"image": _spec(2, 8)}, [{"image": [1, 2]}],
     r"The product of each input partition dim should equal to num_cores_per_replica. "
     r"\(dim = \[1 2\], num_cores_per_replica = 4\)"),
    ({"image": _spec(2, 8)}, [{"image": [1, 2, 2]}],
     r"Input partition dims must have the same number of dimensions as the `Tensor` to be "
     r"partitioned. \(tensor shape = \[2, 8\]"),
    ({"image": _spec(2, 6)}, [{"image": [1, 4]}],
     r"Input partition dims \[1, 4\] do not divide the tensor shape \[2, 6\] \(axis 1\)"),
    ({"image": _spec(2, 8)}, [{"image": [0, 4]}], r"All input partition dims must be >= 1."),
    ((_spec(2, 8), _spec(2, 8)), [[[1, 4], None]],
     r"TPUConfig.input_partition_dims\[0\] mismatched the structure of features."),
])
def test_partition_dims_validation(features, dims, message):
    with pytest.raises(ValueError, match=message):
        model_parallelism.partition_inputs(features, None, dims, 4, _split_recorder()[1])
    with pytest.raises(ValueError, match=message):  # the simulated TPU checks the same
        model_parallelism.partition_inputs(features, None, dims, 4, None)


# -- the simulated TPU, end to end ---------------------------------------------------------

class _Recorder:
    def __init__(self):
        self.input_fn_calls = []
        self.model_fn_calls = []

    def input_fn(self, params):
        context = params.get("context")
        if context is not None:
            with pytest.raises(RuntimeError, match="must not be called from input_fn"):
                context.device_assignment  # pylint: disable=pointless-statement
            self.input_fn_calls.append(dict(
                batch_size=params["batch_size"], num_replicas=context.num_replicas,
                num_cores=context.num_cores, num_hosts=context.num_hosts,
                deployment=context.current_input_fn_deployment()[1:]))
        dataset = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS))
        return dataset.repeat().batch(params["batch_size"], drop_remainder=True)

    def model_fn(self, features, labels, mode, params):
        context = params.get("context")
        if context is not None:
            assignment = context.device_assignment
            with pytest.raises(ValueError, match="num_of_replicas_per_host is not supported "
                                                 "for model_parallelism"):
                context.num_of_replicas_per_host  # pylint: disable=pointless-statement
            self.model_fn_calls.append(dict(
                batch_size=params["batch_size"], num_replicas=context.num_replicas,
                num_cores=context.num_cores, cores_per_host=context.num_of_cores_per_host,
                assignment=(assignment.num_replicas, assignment.num_cores_per_replica),
                last_replica=context.device_for_replica(context.num_replicas - 1)))
        with v1.variable_scope("linear"):
            weights = v1.get_variable("w", [4, 1], initializer=v1.constant_initializer(0.2))
            bias = v1.get_variable("b", [1], initializer=v1.zeros_initializer())
        predictions = tf.matmul(features, weights) + bias
        if mode == tec.ModeKeys.PREDICT:
            return tec.TPUEstimatorSpec(mode, predictions={"y": predictions})
        loss = v1.losses.mean_squared_error(labels, predictions)
        if mode == tec.ModeKeys.TRAIN:
            optimizer = tec.CrossShardOptimizer(v1.train.MomentumOptimizer(0.05, 0.9))
            train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
            return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)
        return tec.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(
            lambda labels, predictions: {"mae": v1.metrics.mean_absolute_error(
                labels, predictions)}, [labels, predictions]))


@pytest.fixture
def simulated_tpu(monkeypatch):
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "8")


def _estimator(model_fn, model_dir, cores_per_replica, input_mode, use_tpu=True,
               partition_dims=None):
    config = tec.RunConfig(model_dir=str(model_dir), tpu_config=tec.TPUConfig(
        iterations_per_loop=2, num_cores_per_replica=cores_per_replica,
        per_host_input_for_training=input_mode, input_partition_dims=partition_dims))
    return tec.TPUEstimator(model_fn, config=config, use_tpu=use_tpu,
                            train_batch_size=GLOBAL_BATCH, eval_batch_size=GLOBAL_BATCH,
                            predict_batch_size=GLOBAL_BATCH)


def _weights(estimator):
    return {name: estimator.get_variable_value(name) for name in estimator.get_variable_names()
            if name.startswith("linear/")}


@pytest.fixture(scope="module")
def one_device_run(tmp_path_factory):
    """The same model and global batch on one device (use_tpu=False): weights, eval, predict."""
    model_dir = tmp_path_factory.mktemp("one_device")
    estimator = _estimator(_Recorder().model_fn, model_dir, None, IPC.PER_HOST_V2, use_tpu=False)
    estimator.train(_Recorder().input_fn, steps=4)
    return dict(weights=_weights(estimator),
                eval=estimator.evaluate(_Recorder().input_fn, steps=2),
                predictions=[p["y"] for p in estimator.predict(_finite_input_fn)])


def _finite_input_fn(params):
    return tf.data.Dataset.from_tensor_slices(FEATURES[:48]).batch(params["batch_size"],
                                                                  drop_remainder=True)


@pytest.mark.parametrize("cores_per_replica, input_mode", [
    (2, IPC.PER_HOST_V2), (4, IPC.PER_HOST_V2), (2, IPC.PER_HOST_V1), (4, IPC.BROADCAST)])
def test_replicas_of_k_simulated_cores_train_like_one_device(
        cores_per_replica, input_mode, simulated_tpu, tmp_path, one_device_run):
    replicas = 8 // cores_per_replica
    per_replica = GLOBAL_BATCH // replicas
    recorder = _Recorder()
    estimator = _estimator(recorder.model_fn, tmp_path, cores_per_replica, input_mode)
    estimator.train(recorder.input_fn, steps=4)
    input_batch, model_batch, consumed = {
        IPC.PER_HOST_V2: (per_replica, per_replica, replicas),
        IPC.PER_HOST_V1: (GLOBAL_BATCH, per_replica, replicas),
        IPC.BROADCAST: (GLOBAL_BATCH, GLOBAL_BATCH, replicas)}[input_mode]
    assert recorder.input_fn_calls == [dict(batch_size=input_batch, num_replicas=replicas,
                                            num_cores=8, num_hosts=1,
                                            deployment=(0, 1, consumed))]
    last_core = (replicas - 1) * cores_per_replica
    expected = dict(batch_size=model_batch, num_replicas=replicas, num_cores=8,
                    cores_per_host=8, assignment=(replicas, cores_per_replica),
                    last_replica=("/job:worker/task:0/device:CPU:0", last_core))
    # once per replica, and once more for the checkpoint's MetaGraph
    assert recorder.model_fn_calls == [expected] * (replicas + 1)
    if input_mode == IPC.BROADCAST:  # every replica has the whole batch: not the same run
        return
    for name, value in one_device_run["weights"].items():
        np.testing.assert_allclose(_weights(estimator)[name], value, rtol=0, atol=1e-6)


@pytest.mark.parametrize("cores_per_replica", [2, 4])
def test_evaluate_and_predict_shard_over_the_replicas_of_k_cores(
        cores_per_replica, simulated_tpu, tmp_path, one_device_run):
    recorder = _Recorder()
    estimator = _estimator(recorder.model_fn, tmp_path, cores_per_replica, IPC.PER_HOST_V2)
    estimator.train(recorder.input_fn, steps=4)
    recorder.model_fn_calls.clear()
    results = estimator.evaluate(recorder.input_fn, steps=2)
    assert {call["batch_size"] for call in recorder.model_fn_calls} == {
        GLOBAL_BATCH * cores_per_replica // 8}
    np.testing.assert_allclose(results["mae"], one_device_run["eval"]["mae"], atol=1e-6)
    predictions = [p["y"] for p in estimator.predict(_finite_input_fn)]
    np.testing.assert_allclose(predictions, one_device_run["predictions"], atol=1e-6)


def test_partition_dims_on_the_simulated_tpu(simulated_tpu, tmp_path):
    recorder = _Recorder()
    estimator = _estimator(recorder.model_fn, tmp_path / "ok", 2, IPC.PER_HOST_V2,
                           partition_dims=[[1, 2], None])
    estimator.train(recorder.input_fn, steps=2)
    assert recorder.model_fn_calls[0]["batch_size"] == 4  # whole (4, 4) batches per replica
    estimator = _estimator(recorder.model_fn, tmp_path / "bad", 2, IPC.PER_HOST_V2,
                           partition_dims=[[2, 2]])
    with pytest.raises(ValueError, match="The product of each input partition dim should "
                                         "equal to num_cores_per_replica"):
        estimator.train(recorder.input_fn, steps=2)


def test_more_cores_per_replica_than_simulated_cores(simulated_tpu, tmp_path):
    estimator = _estimator(_Recorder().model_fn, tmp_path, 16, IPC.PER_HOST_V2)
    with pytest.raises(ValueError, match="num_cores_per_replica: 16, num cores in the system: 8"):
        estimator.train(_Recorder().input_fn, steps=2)


def test_model_parallelism_needs_per_host_input(tmp_path):
    config = tec.RunConfig(model_dir=str(tmp_path), tpu_config=tec.TPUConfig(
        num_cores_per_replica=2, per_host_input_for_training=IPC.PER_SHARD_V1))
    with pytest.raises(ValueError, match=(
            "Model parallelism only supports per host input for training. Please adjust "
            "TPURunconfig.per_host_input_for_training.")):
        tec.TPUEstimator(_Recorder().model_fn, config=config, train_batch_size=16)


def test_num_shards_must_be_the_number_of_replicas_of_k_cores(simulated_tpu, tmp_path):
    config = tec.RunConfig(model_dir=str(tmp_path), tpu_config=tec.TPUConfig(
        num_shards=8, num_cores_per_replica=2, per_host_input_for_training=IPC.PER_HOST_V2))
    estimator = tec.TPUEstimator(_Recorder().model_fn, config=config, train_batch_size=16)
    with pytest.raises(ValueError, match=(
            r"TPUConfig.num_shards is not set correctly. According to TPU system metadata for "
            r"Tensorflow master \(\): num_replicas should be \(4\), got \(8\).")):
        estimator.train(_Recorder().input_fn, steps=2)
    estimator = tec.TPUEstimator(_Recorder().model_fn, config=config.replace(
        tpu_config=config.tpu_config._replace(num_shards=4)), train_batch_size=16)
    estimator.train(_Recorder().input_fn, steps=2)
