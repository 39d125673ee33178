"""Model parallelism (`TPUConfig.num_cores_per_replica` = k): replicas of k cores each.

As in the original, k set (with use_tpu) makes replicas = cores // k, and the replicas'
cores come from a `tf.tpu.experimental.DeviceAssignment` of computation shape k built on
the TPU's topology (`device_assignment_for`):

- on a TPU, `tf.distribute.TPUStrategy(resolver, experimental_device_assignment=...)`:
  each replica has k logical devices, and `input_partition_dims` splits the inputs across
  them with `strategy.experimental_split_to_logical_devices` (spatial partitioning);
- on the simulated TPU, the same assignment on the simulated topology (N cores in a row):
  each replica runs on the logical device of its core 0 (a MirroredStrategy over every k-th
  device), and its inputs stay whole; `input_partition_dims` is validated as on a TPU,
  so a program that runs there splits its inputs the same way on a TPU.

Computation shapes are the original's (`[x, y, z, core]`: 2 -> `[1, 1, 1, 2]`, 4 ->
`[1, 2, 1, 2]`, ...) when they fit the topology's mesh, else k cores packed from the
innermost mesh dimension out (the simulated `[1, 1, 1, N]` mesh, TPU v4's one core per chip).
"""
import numpy as np
import tensorflow as tf

from tpu_estimator_compat.tf_internals import distribute

from tpu_estimator_compat.config.tpu_config import InputPipelineConfig

_ORIGINAL_COMPUTATION_SHAPES = {
    1: [1, 1, 1, 1], 2: [1, 1, 1, 2], 4: [1, 2, 1, 2], 8: [2, 2, 1, 2],
    16: [4, 2, 1, 2], 32: [4, 4, 1, 2], 64: [8, 4, 1, 2], 128: [8, 8, 1, 2],
}


def simulated_topology(cores):
    """The `Topology` of the simulated TPU: one task (host), `cores` cores in a row."""
    return tf.tpu.experimental.Topology(
        mesh_shape=[1, 1, 1, cores],
        device_coordinates=[[[0, 0, 0, core] for core in range(cores)]])


def computation_shape(num_cores_per_replica, mesh_shape):
    """The computation shape of one replica of `num_cores_per_replica` cores on a mesh."""
    mesh_shape = [int(size) for size in mesh_shape]
    original = _ORIGINAL_COMPUTATION_SHAPES[num_cores_per_replica]
    if len(original) == len(mesh_shape) and all(
            size % part == 0 for size, part in zip(mesh_shape, original)):
        return original
    shape, remaining = [1] * len(mesh_shape), num_cores_per_replica
    for dim in reversed(range(len(mesh_shape))):
        while remaining > 1 and mesh_shape[dim] % (shape[dim] * 2) == 0:
            shape[dim] *= 2
            remaining //= 2
    if remaining > 1:
        raise ValueError(
            f"TPUConfig.num_cores_per_replica={num_cores_per_replica} does not fit the TPU "
            f"topology's mesh {mesh_shape}: no block of that many cores tiles it. Use a "
            "num_cores_per_replica that divides the mesh.")
    return shape


def check_cores(num_cores_per_replica, num_cores, num_cores_per_host, input_mode):
    """The original's checks of k against the TPU system (its messages)."""
    if num_cores_per_replica > num_cores:
        raise ValueError(
            "The num of cores required by the model parallelism, specified by "
            "TPUConfig.num_cores_per_replica, is larger than the total num of TPU cores in "
            f"the system. num_cores_per_replica: {num_cores_per_replica}, num cores in the "
            f"system: {num_cores}")
    if num_cores % num_cores_per_replica:
        raise RuntimeError(
            f"The num of cores in the system ({num_cores}) is not divisible by the num of "
            f"cores ({num_cores_per_replica}) required by the model parallelism, specified "
            "by TPUConfig.num_cores_per_replica. This should never happen!")
    if (num_cores_per_replica > num_cores_per_host
            and input_mode != InputPipelineConfig.PER_HOST_V2):
        raise ValueError(
            "Except the PER_HOST_V2 mode, the num of cores required by model parallelism "
            "specified by TPUConfig.num_cores_per_replica should be less than or equal to "
            f"the num_cores_per_host. num_cores_per_replica: {num_cores_per_replica}, "
            f"num_cores_per_host: {num_cores_per_host}")


def device_assignment_for(topology, num_cores_per_replica, input_mode):
    """The `DeviceAssignment` of replicas of `num_cores_per_replica` cores on `topology`,
    after the original's checks."""
    num_cores = topology.num_tasks * topology.num_tpus_per_task
    check_cores(num_cores_per_replica, num_cores, topology.num_tpus_per_task, input_mode)
    return tf.tpu.experimental.DeviceAssignment.build(
        topology, computation_shape=computation_shape(num_cores_per_replica,
                                                      topology.mesh_shape),
        num_replicas=num_cores // num_cores_per_replica)


def replica_ordinals(device_assignment):
    """The core (device ordinal) each replica's logical core 0 runs on."""
    return [int(device_assignment.tpu_ordinal(replica=replica))
            for replica in range(device_assignment.num_replicas)]


def logical_device_splitter(strategy):
    """`strategy.experimental_split_to_logical_devices` on a TPU, else None."""
    if isinstance(strategy, (tf.distribute.TPUStrategy, tf.distribute.experimental.TPUStrategy)):
        return strategy.experimental_split_to_logical_devices
    return None


def partition_inputs(features, labels, input_partition_dims, num_cores_per_replica,
                     split=None):
    """`features`, `labels` with `input_partition_dims` applied (one replica, traced).

    Validates the dims against the inputs (the original's messages for the structure; the
    TPU's conditions for each tensor), then calls `split(tensor, dims)` for every tensor to
    partition (a TPUStrategy's `experimental_split_to_logical_devices`); with `split=None`
    (the simulated TPU) the tensors stay whole.
    """
    feature_dims, label_dims = (list(input_partition_dims) + [None])[:2]
    flat_dims = _flatten_dims(features, feature_dims, 0)
    if labels is not None:
        flat_dims += (_flatten_dims(labels, label_dims, 1) if label_dims is not None
                      else [None] * len(tf.nest.flatten(labels)))
    flat = tf.nest.flatten((features, labels))
    for tensor, dims in zip(flat, flat_dims):
        _check_tensor_dims(tensor, dims, num_cores_per_replica)
    if split is None:
        return features, labels
    partitioned = [tensor if dims is None or np.prod(dims) == 1 else split(tensor, list(dims))
                   for tensor, dims in zip(flat, flat_dims)]
    return tf.nest.pack_sequence_as((features, labels), partitioned)


def _flatten_dims(structure, dims, index):
    """`dims` flattened as `tf.nest.flatten(structure)` is (the original's checks)."""
    kind = ("features", "labels")[index]
    if _keys(structure) != _keys(dims):
        raise ValueError(
            f"TPUConfig.input_partition_dims[{index}] mismatched {kind[:-1]} keys. Expected "
            f"{_keys(structure)}, got {_keys(dims)}")
    try:
        return distribute.flatten_up_to(structure, dims)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"TPUConfig.input_partition_dims[{index}] mismatched the structure of {kind}. "
            f"input_partition_dims[{index}]: {dims}, {kind} {structure}. {e}") from None


def _keys(structure):
    return sorted(structure) if isinstance(structure, dict) else []


def _check_tensor_dims(tensor, dims, num_cores_per_replica):
    if dims is None:
        return
    dims = np.array(dims)
    if (dims < 1).any():
        raise ValueError("All input partition dims must be >= 1.")
    if dims.prod() == 1:
        return
    if dims.prod() != num_cores_per_replica:
        raise ValueError(
            "The product of each input partition dim should equal to num_cores_per_replica. "
            f"(dim = {dims}, num_cores_per_replica = {num_cores_per_replica})")
    shape = tensor.shape.as_list()
    if len(dims) != len(shape):
        raise ValueError(
            "Input partition dims must have the same number of dimensions as the `Tensor` to "
            f"be partitioned. (tensor shape = {shape}, input partition dims = {dims}).")
    uneven = [axis for axis, (size, parts) in enumerate(zip(shape, dims)) if size % parts]
    if uneven:
        raise ValueError(
            f"Input partition dims {dims.tolist()} do not divide the tensor shape {shape} "
            f"(axis {uneven[0]}): TensorFlow 2's TPUStrategy splits a tensor across logical "
            "devices only into equal parts. Pad the tensor, or pick dims that divide it.")
