"""The batch sizes input_fn and model_fn see, per mode and input pipeline configuration.

A pure function of the configuration, so the table of the original (behaviour reference
§1.3) is tested directly:

| situation               | input_fn batch | input_fn calls per host | model_fn batch | to replicas   |
|-------------------------|----------------|-------------------------|----------------|---------------|
| CPU/GPU semantics       | G              | 1                       | G              | whole batches |
| PER_SHARD_V1 (TRAIN)    | G // R         | replicas per host       | G // R         | interleaved   |
| PER_HOST_V1             | G // H         | 1                       | G // R         | split         |
| PER_HOST_V2             | G // R         | 1                       | G // R         | whole batches |
| BROADCAST               | G              | 1                       | G              | copied        |
| SLICED (EVAL / PREDICT) | G (1)          | 1                       | G // R         | split         |

(1) The original called input_fn on host 0 only; here every host calls it and keeps its own
    G // H rows of each batch (`inputs._host_slice`), so replicas get the same rows.
"""
import dataclasses
import enum

from tpu_estimator_compat.config.tpu_config import InputPipelineConfig
from tpu_estimator_compat.api.spec import ModeKeys

_BATCH_NAMES = {ModeKeys.TRAIN: "train", ModeKeys.EVAL: "eval", ModeKeys.PREDICT: "predict"}
_METHOD_NAMES = {ModeKeys.TRAIN: "train", ModeKeys.EVAL: "evaluate", ModeKeys.PREDICT: "predict"}


class Distribution(enum.Enum):
    """How the batches a host's input pipeline yields reach that host's replicas."""
    WHOLE = "each replica takes the next whole batch"
    SPLIT = "each batch is split evenly across the host's replicas"
    INTERLEAVED = "one pipeline per replica, taken in turn"
    COPIED = "every replica gets the same batch"


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    input_fn_batch_size: int | None
    model_fn_batch_size: int | None
    input_fn_calls_per_host: int
    distribution: Distribution
    input_mode: int | None  # the effective InputPipelineConfig, None with CPU/GPU semantics


def effective_input_mode(mode, tpu_config):
    """PER_SHARD_V1 applies to TRAIN only; EVAL/PREDICT use per-host input (or SLICED)."""
    input_mode = tpu_config.per_host_input_for_training
    if mode == ModeKeys.TRAIN:
        return input_mode
    if tpu_config.eval_training_input_configuration == InputPipelineConfig.SLICED:
        return InputPipelineConfig.SLICED
    if input_mode == InputPipelineConfig.PER_SHARD_V1:
        return InputPipelineConfig.PER_HOST_V1
    return input_mode


def plan_batches(global_batch_size, mode, runtime, tpu_config, master=""):
    """The BatchPlan for one mode. Raises the original's errors for bad batch sizes and for
    a `TPUConfig.num_shards` that is not the number of replicas (named with `master`)."""
    if not runtime.tpu_semantics:
        return BatchPlan(global_batch_size, global_batch_size, 1, Distribution.WHOLE, None)
    if tpu_config.num_shards and tpu_config.num_shards != runtime.num_replicas:
        raise ValueError(
            "TPUConfig.num_shards is not set correctly. According to TPU system metadata for "
            f"Tensorflow master ({master}): num_replicas should be ({runtime.num_replicas}), "
            f"got ({tpu_config.num_shards}). For non-model-parallelism, num_replicas should be "
            "the total num of TPU cores in the system. For model-parallelism, the total number "
            "of TPU cores should be num_cores_per_replica * num_replicas. Please set it "
            "accordingly or leave it as `None`")
    name = _BATCH_NAMES[mode]
    if global_batch_size is None:
        raise ValueError(
            f"{name}_batch_size in TPUEstimator constructor cannot be `None` if "
            f".{_METHOD_NAMES[mode]} is running on TPU. Pass {name}_batch_size=<global batch>.")
    input_mode = effective_input_mode(mode, tpu_config)
    replicas, hosts = runtime.num_replicas, runtime.num_hosts
    if hosts > 1 and mode != ModeKeys.TRAIN:
        _check_multi_host_inference(mode, tpu_config.per_host_input_for_training, hosts, replicas)
    if input_mode == InputPipelineConfig.BROADCAST:
        return BatchPlan(global_batch_size, global_batch_size, 1, Distribution.COPIED, input_mode)
    if global_batch_size % replicas:
        raise ValueError(
            f"{name} batch size {global_batch_size} must be divisible by number of replicas "
            f"{replicas}")
    per_replica = global_batch_size // replicas
    if input_mode == InputPipelineConfig.PER_SHARD_V1:
        return BatchPlan(per_replica, per_replica, runtime.replicas_per_host,
                         Distribution.INTERLEAVED, input_mode)
    if input_mode == InputPipelineConfig.PER_HOST_V2:
        return BatchPlan(per_replica, per_replica, 1, Distribution.WHOLE, input_mode)
    if input_mode == InputPipelineConfig.SLICED:
        return BatchPlan(global_batch_size, per_replica, 1, Distribution.SPLIT, input_mode)
    return BatchPlan(global_batch_size // hosts, per_replica, 1, Distribution.SPLIT, input_mode)


def _check_multi_host_inference(mode, training_input_mode, hosts, replicas):
    """The original's conditions for evaluate/predict on several hosts (its messages)."""
    broadcast = training_input_mode == InputPipelineConfig.BROADCAST
    per_host_v2 = training_input_mode == InputPipelineConfig.PER_HOST_V2
    if mode == ModeKeys.EVAL and not (broadcast or per_host_v2):
        raise ValueError(
            "TPUEstimator.evaluate is only supported under three conditions: 1. num_hosts=1; "
            "2. BROADCAST mode; 3. PER_HOST_V2 mode. "
            f"mode: {training_input_mode}; num_hosts: {hosts}; num_replicas=1:{replicas}")
    if mode == ModeKeys.PREDICT and not (broadcast or (per_host_v2 and replicas == 1)):
        raise ValueError(
            "TPUEstimator.predict is only supported under three conditions: 1. num_hosts=1; "
            "2. BROADCAST mode; 3. PER_HOST_V2 mode with num_replicas=1. "
            f"mode: {training_input_mode}; num_hosts: {hosts}; num_replicas=1:{replicas}")
