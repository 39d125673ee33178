"""`tf.tpu.experimental.initialize_tpu_system`, `shutdown_tpu_system` and
`tf.config.experimental_connect_to_cluster` that accept this package's `TPUClusterResolver`
(TensorFlow's assert that the resolver is TensorFlow's own), also in TF1 graph mode.

- On the simulated TPU (`TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES=N`, read by the resolver
  when built, or now when no resolver is given) there is no TPU system: initialising logs
  that and returns the `tf.tpu.experimental.Topology` of one host with N cores in a row
  (mesh shape `[1, 1, 1, N]`); shutting down does nothing.
- Otherwise our resolver is resolved first, so that without a TPU the call raises the
  resolver's `NoTPUFoundError` (what was tried, how to run without a TPU), as the estimator
  does; TensorFlow's function then runs with TensorFlow's resolver.
- `experimental_connect_to_cluster` connects under eager execution even when called in graph
  mode (TF1 programs call it after `disable_v2_behavior()`; TensorFlow's function raises
  there): the connection is the eager context's, the one the engine runs on; the caller's
  graph mode is left as it was.
"""
import logging

import tensorflow as tf

from tpu_estimator_compat.engine import cluster_resolver as _resolvers
from tpu_estimator_compat.engine.model_parallelism import simulated_topology
from tpu_estimator_compat.tf_internals import graphs

_log = logging.getLogger("tensorflow")


def _simulated_cores(cluster_resolver):
    if cluster_resolver is None:
        return _resolvers.simulated_tpu_cores()
    if isinstance(cluster_resolver, _resolvers.TPUClusterResolver):
        return cluster_resolver.simulated_cores
    return None


def _tensorflows(cluster_resolver):
    """TensorFlow's resolver for `cluster_resolver` (None: the local TPU, as TensorFlow's
    default `TPUClusterResolver('')`), looked up with our resolver's bound and message."""
    if cluster_resolver is None:
        cluster_resolver = _resolvers.TPUClusterResolver("")
    if isinstance(cluster_resolver, _resolvers.TPUClusterResolver):
        return cluster_resolver.resolve()
    return cluster_resolver


def initialize_tpu_system(cluster_resolver=None):
    """TF1/TF2 `tf.tpu.experimental.initialize_tpu_system` (see the module docstring).

    Returns:
      The TPU system's `tf.tpu.experimental.Topology`.

    Raises:
      NoTPUFoundError: no TPU is simulated and the resolver finds none.
    """
    cores = _simulated_cores(cluster_resolver)
    if cores:
        _log.info("initialize_tpu_system: the TPU is simulated on %d local devices "
                  "(%s=%d); there is no TPU system to initialise.", cores,
                  _resolvers.SIMULATED_TPU_CORES_ENV, cores)
        return simulated_topology(cores)
    return tf.tpu.experimental.initialize_tpu_system(_tensorflows(cluster_resolver))


def shutdown_tpu_system(cluster_resolver=None):
    """`tf.tpu.experimental.shutdown_tpu_system`: nothing to do on the simulated TPU."""
    if _simulated_cores(cluster_resolver):
        return None
    return tf.tpu.experimental.shutdown_tpu_system(_tensorflows(cluster_resolver))


def experimental_connect_to_cluster(cluster_spec_or_resolver, *args, **kwargs):
    """`tf.config.experimental_connect_to_cluster`, callable in graph mode too (see the module
    docstring). A simulated TPU has no cluster: logged, nothing done."""
    cores = _simulated_cores(cluster_spec_or_resolver) if isinstance(
        cluster_spec_or_resolver, _resolvers.TPUClusterResolver) else None
    if cores:
        _log.info("experimental_connect_to_cluster: the TPU is simulated on %d local devices "
                  "(%s=%d); there is no cluster to connect to.", cores,
                  _resolvers.SIMULATED_TPU_CORES_ENV, cores)
        return None
    if isinstance(cluster_spec_or_resolver, _resolvers.TPUClusterResolver):
        cluster_spec_or_resolver = cluster_spec_or_resolver.resolve()
    with graphs.eager_mode():
        return tf.config.experimental_connect_to_cluster(
            cluster_spec_or_resolver, *args, **kwargs)
