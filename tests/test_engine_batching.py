"""engine/batching.py: the batch sizes input_fn and model_fn see per mode and input pipeline
configuration (behaviour reference §1.3), as a pure function of the configuration."""
import pytest

from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.config.tpu_config import InputPipelineConfig as IPC
from tpu_estimator_compat.config.tpu_config import TPUConfig
from tpu_estimator_compat.engine import batching
from tpu_estimator_compat.engine.batching import Distribution
from tpu_estimator_compat.engine.runtime import Runtime

G, R, H = 64, 8, 2  # global batch, replicas, hosts


def _runtime(replicas=R, hosts=H, tpu_semantics=True):
    return Runtime(strategy=None, tpu_semantics=tpu_semantics, num_replicas=replicas,
                   num_hosts=hosts)


# (input mode, input_fn batch, input_fn calls per host, model_fn batch, distribution)
_TRAIN_TABLE = [
    (IPC.PER_SHARD_V1, G // R, R // H, G // R, Distribution.INTERLEAVED),
    (IPC.PER_HOST_V1, G // H, 1, G // R, Distribution.SPLIT),
    (IPC.PER_HOST_V2, G // R, 1, G // R, Distribution.WHOLE),
    (IPC.BROADCAST, G, 1, G, Distribution.COPIED),
]


@pytest.mark.parametrize("input_mode, input_batch, calls, model_batch, distribution",
                         _TRAIN_TABLE)
def test_train_batch_plan_follows_the_originals_table(input_mode, input_batch, calls,
                                                      model_batch, distribution):
    plan = batching.plan_batches(G, ModeKeys.TRAIN, _runtime(),
                                 TPUConfig(per_host_input_for_training=input_mode))
    assert plan == batching.BatchPlan(input_batch, model_batch, calls, distribution,
                                      input_mode)


@pytest.mark.parametrize("training_mode, sliced, expected_mode", [
    (IPC.PER_SHARD_V1, False, IPC.PER_HOST_V1),  # per-core input is for training only
    (IPC.PER_HOST_V1, False, IPC.PER_HOST_V1),
    (IPC.PER_HOST_V2, False, IPC.PER_HOST_V2),
    (IPC.BROADCAST, False, IPC.BROADCAST),
    (IPC.PER_HOST_V2, True, IPC.SLICED),
])
@pytest.mark.parametrize("mode", [ModeKeys.EVAL, ModeKeys.PREDICT])
def test_inference_input_mode(mode, training_mode, sliced, expected_mode):
    tpu_config = TPUConfig(per_host_input_for_training=training_mode,
                           eval_training_input_configuration=IPC.SLICED if sliced
                           else IPC.PER_HOST_V1)
    assert batching.effective_input_mode(mode, tpu_config) == expected_mode
    assert batching.effective_input_mode(ModeKeys.TRAIN, tpu_config) == training_mode
    # One host (multi-host inference has its own conditions, tests/test_multi_worker.py).
    plan = batching.plan_batches(G, mode, _runtime(hosts=1), tpu_config)
    assert plan.input_mode == expected_mode
    assert plan.input_fn_calls_per_host == 1


def test_sliced_input_fn_reads_the_global_batch_and_replicas_get_their_slice():
    tpu_config = TPUConfig(per_host_input_for_training=IPC.PER_HOST_V2,
                           eval_training_input_configuration=IPC.SLICED)
    plan = batching.plan_batches(G, ModeKeys.EVAL, _runtime(hosts=1), tpu_config)
    assert plan == batching.BatchPlan(G, G // R, 1, Distribution.SPLIT, IPC.SLICED)


@pytest.mark.parametrize("mode", [ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT])
@pytest.mark.parametrize("batch_size", [None, 12])
def test_cpu_gpu_semantics_give_the_configured_batch_whole(mode, batch_size):
    plan = batching.plan_batches(batch_size, mode, _runtime(tpu_semantics=False),
                                 TPUConfig(per_host_input_for_training=IPC.PER_SHARD_V1))
    assert plan == batching.BatchPlan(batch_size, batch_size, 1, Distribution.WHOLE, None)


@pytest.mark.parametrize("mode, name, method", [
    (ModeKeys.TRAIN, "train", "train"), (ModeKeys.EVAL, "eval", "evaluate"),
    (ModeKeys.PREDICT, "predict", "predict")])
def test_tpu_batch_size_errors_are_the_originals(mode, name, method):
    with pytest.raises(ValueError, match=rf"{name}_batch_size in TPUEstimator constructor "
                                         rf"cannot be `None` if .{method} is running on TPU"):
        batching.plan_batches(None, mode, _runtime(hosts=1), TPUConfig())
    with pytest.raises(ValueError, match=f"{name} batch size 60 must be divisible by number "
                                         "of replicas 8"):
        batching.plan_batches(60, mode, _runtime(hosts=1), TPUConfig())


def test_broadcast_needs_no_divisible_batch():
    plan = batching.plan_batches(60, ModeKeys.TRAIN, _runtime(),
                                 TPUConfig(per_host_input_for_training=IPC.BROADCAST))
    assert (plan.input_fn_batch_size, plan.model_fn_batch_size) == (60, 60)
