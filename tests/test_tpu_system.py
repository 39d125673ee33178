"""`tf.tpu.experimental.initialize_tpu_system` and `tf.config.experimental_connect_to_cluster`
with this package's `TPUClusterResolver` (google-research/simclr's start-up, which calls both
after `disable_v2_behavior()`): logged no-ops on the simulated TPU, the first returning a
one-host topology; without one and without a TPU, the resolver's own `NoTPUFoundError`; a real
cluster is connected to even from graph mode."""
import json
import logging
import os
import subprocess
import sys

import pytest
import tensorflow as tf

import tpu_estimator_compat
import tpu_estimator_compat.v1 as v1
from tpu_estimator_compat.engine import cluster_resolver
from tpu_estimator_compat.v1.tpu.experimental import initialize_tpu_system

_NO_TPU = ("No TPU found: TPUClusterResolver(tpu='', zone=None, project=None) (no TPU name "
           "given, and none of $TPU_NAME, $KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS, $TPU_CONFIG is "
           "set); looking up the TPU failed with ValueError: Please provide a TPU Name to "
           "connect to. To run without a TPU, pass `use_tpu=False` to TPUEstimator")


@pytest.fixture
def no_tpu_environment(monkeypatch):
    for name in ("TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "TPU_CONFIG",
                 cluster_resolver.SIMULATED_TPU_CORES_ENV):
        monkeypatch.delenv(name, raising=False)


def _assert_one_host(topology, cores):
    assert isinstance(topology, v1.tpu.experimental.Topology)
    assert list(topology.mesh_shape) == [1, 1, 1, cores]
    assert (topology.num_tasks, topology.num_tpus_per_task) == (1, cores)
    assert topology.task_ordinal_at_coordinates([0, 0, 0, cores - 1]) == 0


def test_simulated_tpu_initialises_as_a_logged_no_op(no_tpu_environment, monkeypatch, caplog):
    del no_tpu_environment
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "8")
    caplog.set_level(logging.INFO, logger="tensorflow")
    for resolver in (v1.distribute.cluster_resolver.TPUClusterResolver(),
                     v1.contrib.cluster_resolver.TPUClusterResolver("my-tpu")):
        v1.config.experimental_connect_to_cluster(resolver)  # master '' : local, nothing to do
        _assert_one_host(v1.tpu.experimental.initialize_tpu_system(resolver), 8)
        assert v1.tpu.experimental.shutdown_tpu_system(resolver) is None
    assert initialize_tpu_system is v1.tpu.experimental.initialize_tpu_system
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "4")
    _assert_one_host(initialize_tpu_system(), 4)  # no resolver: the environment decides
    assert caplog.messages[-1] == (
        "initialize_tpu_system: the TPU is simulated on 4 local devices "
        "(TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES=4); there is no TPU system to initialise.")
    assert v1.distribute.cluster_resolver.TPUClusterResolver.connect().simulated_cores == 4
    # TensorFlow's other names are TensorFlow's.
    assert v1.tpu.experimental.DeviceAssignment.__module__.startswith("tensorflow.")


def test_without_a_tpu_fails_with_the_resolvers_message(no_tpu_environment):
    del no_tpu_environment
    resolver = v1.distribute.cluster_resolver.TPUClusterResolver("")
    for call in (v1.tpu.experimental.initialize_tpu_system,
                 v1.tpu.experimental.shutdown_tpu_system,
                 v1.config.experimental_connect_to_cluster):
        with pytest.raises(cluster_resolver.NoTPUFoundError) as raised:
            call(resolver)
        assert str(raised.value).startswith(_NO_TPU)
    with pytest.raises(cluster_resolver.NoTPUFoundError) as raised:
        v1.tpu.experimental.initialize_tpu_system()
    assert str(raised.value).startswith(_NO_TPU)


def test_connect_to_cluster_in_graph_mode_on_the_simulated_tpu(
        no_tpu_environment, monkeypatch, caplog):
    """simclr: `tf.disable_v2_behavior()`, then `experimental_connect_to_cluster(resolver)`
    (TensorFlow's own refuses graph mode: "can only be called in eager mode")."""
    del no_tpu_environment
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "8")
    caplog.set_level(logging.INFO, logger="tensorflow")
    resolver = v1.distribute.cluster_resolver.TPUClusterResolver()
    with tf.Graph().as_default():
        assert v1.config.experimental_connect_to_cluster(resolver) is None
        assert not tf.executing_eagerly()
    assert caplog.messages[-1] == (
        "experimental_connect_to_cluster: the TPU is simulated on 8 local devices "
        "(TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES=8); there is no cluster to connect to.")
    assert tf.config.list_logical_devices("CPU")[-1].name == "/device:CPU:7"  # unchanged
    # The TF1 module paths serve the same function; the rest of `config` is TensorFlow's.
    from tpu_estimator_compat.v1.compat.v1.config import (  # noqa: PLC0415
        experimental_connect_to_cluster)
    assert experimental_connect_to_cluster is v1.config.experimental_connect_to_cluster
    assert v1.config.list_logical_devices is tf.compat.v1.config.list_logical_devices
    assert v1.config.experimental is tf.compat.v1.config.experimental


def test_connect_to_cluster_in_graph_mode_without_a_tpu(no_tpu_environment):
    del no_tpu_environment
    resolver = v1.distribute.cluster_resolver.TPUClusterResolver("")
    with tf.Graph().as_default(), pytest.raises(cluster_resolver.NoTPUFoundError) as raised:
        v1.config.experimental_connect_to_cluster(resolver)
    assert str(raised.value).startswith(_NO_TPU)


_CONNECT_FROM_GRAPH_MODE = """
import json
import tensorflow as tf
import tpu_estimator_compat.v1 as v1
server = tf.distribute.Server.create_local_server()
v1.disable_v2_behavior()
v1.config.experimental_connect_to_cluster(
    v1.train.ClusterSpec({"worker": [server.target[len("grpc://"):]]}))
still_graph = not tf.executing_eagerly()
with tf.compat.v1.Session(server.target) as session:
    session.run(tf.constant(1))
with tf.init_scope():  # eager: the remote devices are known
    print(json.dumps([still_graph, [d.name for d in tf.config.list_logical_devices("CPU")]]))
"""


@pytest.mark.slow  # starts processes
def test_connect_to_cluster_from_graph_mode_connects_eagerly():
    """A real cluster (an in-process gRPC server): connected to under eager execution, as
    TF 2 programs are; the program's graph mode is left as it was."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(tpu_estimator_compat.__file__)))
    result = subprocess.run(
        [sys.executable, "-c", _CONNECT_FROM_GRAPH_MODE], capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=repo, TF_CPP_MIN_LOG_LEVEL="3"), timeout=120,
        check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    still_graph, devices = json.loads(result.stdout.strip().splitlines()[-1])
    assert still_graph
    assert "/job:worker/replica:0/task:0/device:CPU:0" in devices
