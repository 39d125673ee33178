"""`tf.tpu.experimental.initialize_tpu_system` with this package's `TPUClusterResolver`
(google-research/simclr's start-up): a logged no-op returning a one-host topology on the
simulated TPU; without one and without a TPU, the resolver's own `NoTPUFoundError`."""
import logging

import pytest

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
