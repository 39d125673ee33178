"""engine/inputs.py: what each replica receives from `input_fn`, per input pipeline mode,
with the padding signals of EVAL/PREDICT, on the 8 simulated cores (no model, no estimator).

Examples are numbered rows (`x` = example number, `y` = 10 x), so each replica's batch shows
which examples it got.
"""
import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.config.run_config import RunConfig
from tpu_estimator_compat.config.tpu_config import InputPipelineConfig as IPC
from tpu_estimator_compat.config.tpu_config import TPUConfig
from tpu_estimator_compat.engine import batching
from tpu_estimator_compat.engine import inputs
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.engine import runtime as runtime_lib

REPLICAS = 8


def _input_fn(count, drop_remainder=True, repeat=False, calls=None):
    """An input_fn of `count` examples (x, 10 x) in batches of params['batch_size'];
    `calls` records its params."""
    def input_fn(params):
        if calls is not None:
            calls.append(dict(params))
        x = tf.range(count, dtype=tf.float32)
        dataset = tf.data.Dataset.from_tensor_slices((x, 10 * x)).batch(
            params["batch_size"], drop_remainder=drop_remainder)
        return dataset.repeat() if repeat else dataset
    return input_fn


def _replica_batches(strategy, input_fn, mode, global_batch, steps, tpu_semantics=True,
                     input_mode=IPC.PER_HOST_V2, params=None, **iterator_kwargs):
    """[step][replica] -> that replica's element (numpy), from `distributed_iterator`."""
    runtime = runtime_lib.runtime_for_strategy(strategy, tpu_semantics)
    plan = batching.plan_batches(global_batch, mode, runtime,
                                 TPUConfig(per_host_input_for_training=input_mode))
    program = model_bridge.UserProgram(None, dict(params or {}), RunConfig())
    iterator = inputs.distributed_iterator(input_fn, mode, runtime, plan, program,
                                           **iterator_kwargs)
    read_step = inputs.step_element_reader(strategy, iterator)  # what the device loop reads
    return [[tf.nest.map_structure(np.asarray, element)
             for element in strategy.experimental_local_results(read_step(iterator))]
            for _ in range(steps)]


def test_per_host_v2_each_replica_takes_the_next_whole_batch(eight_devices):
    calls = []
    input_fn = _input_fn(64, calls=calls)
    steps = _replica_batches(eight_devices, input_fn, ModeKeys.TRAIN, 16, steps=2,
                             params={"lr": 0.5})

    assert [(c["batch_size"], c["lr"], c["use_tpu"]) for c in calls] == [(2, 0.5, True)]
    for step, replicas in enumerate(steps):
        for replica, (x, y) in enumerate(replicas):
            first = 16 * step + 2 * replica
            assert x.tolist() == [first, first + 1] and y.tolist() == [10 * first, 10 * first + 10]


def test_per_host_v1_splits_the_hosts_batch_across_its_replicas(eight_devices):
    calls = []
    input_fn = _input_fn(64, calls=calls)
    (replicas,) = _replica_batches(eight_devices, input_fn, ModeKeys.TRAIN, 16, steps=1,
                                   input_mode=IPC.PER_HOST_V1)

    assert [c["batch_size"] for c in calls] == [16]  # G // hosts
    assert [x.tolist() for x, _ in replicas] == [[2 * r, 2 * r + 1] for r in range(REPLICAS)]


def test_broadcast_gives_every_replica_the_same_global_batch(eight_devices):
    calls = []
    input_fn = _input_fn(64, calls=calls)
    steps = _replica_batches(eight_devices, input_fn, ModeKeys.TRAIN, 16, steps=2,
                             input_mode=IPC.BROADCAST)

    assert [c["batch_size"] for c in calls] == [16]
    for step, replicas in enumerate(steps):
        assert all(x.tolist() == list(range(16 * step, 16 * step + 16)) for x, _ in replicas)


def test_per_shard_v1_gives_each_replica_its_own_input_fn_call(eight_devices):
    def input_fn(params):
        index = params["context"].current_input_fn_deployment()[1]
        features = tf.fill([params["batch_size"]], float(index))
        return features, 10 * features

    steps = _replica_batches(eight_devices, input_fn, ModeKeys.TRAIN, 16, steps=2,
                             input_mode=IPC.PER_SHARD_V1)
    for replicas in steps:
        assert [x.tolist() for x, _ in replicas] == [[float(r)] * 2 for r in range(REPLICAS)]


@pytest.mark.slow  # trains or evaluates for several seconds
def test_eval_pads_the_partial_batch_and_sends_stop_batches_after_the_data(eight_devices):
    # 5 examples, 2 per replica: replicas 0-1 full, 2 has one real row, 3-7 only stop batches.
    input_fn = _input_fn(5, drop_remainder=False)
    steps = _replica_batches(eight_devices, input_fn, ModeKeys.EVAL, 16, steps=2)

    (first_step, second_step) = steps
    for replica, ((x, y), signals) in enumerate(first_step):
        rows = max(0, min(2, 5 - 2 * replica))
        assert x.shape == (2,) and y.shape == (2,)  # static: padded to the batch size
        assert x[:rows].tolist() == [2 * replica + i for i in range(rows)]
        assert not x[rows:].any() and not y[rows:].any()
        assert signals["mask"].tolist() == [True] * rows + [False] * (2 - rows)
        assert signals["stop"].tolist() == [rows == 0] * 2
    assert all(signals["stop"].all() and not signals["mask"].any()
               for _, signals in second_step)


def test_cpu_semantics_keep_batch_sizes_and_the_stop_batch_is_one_zero_row(one_device):
    calls = []
    input_fn = _input_fn(5, drop_remainder=False, calls=calls)
    steps = _replica_batches(one_device, input_fn, ModeKeys.EVAL, 4, steps=3,
                             tpu_semantics=False)

    assert calls == [{"batch_size": 4, "use_tpu": False}]  # no `context` off TPU
    elements = [element for (element,) in steps]  # one replica
    assert [x.tolist() for (x, _), _ in elements] == [[0, 1, 2, 3], [4], [0]]
    assert [s["mask"].tolist() for _, s in elements] == [[True] * 4, [True], [False]]
    assert [s["stop"].tolist() for _, s in elements] == [[False] * 4, [False], [True]]


def test_tpu_semantics_require_static_shapes_naming_drop_remainder(eight_devices):
    input_fn = _input_fn(64, drop_remainder=False)
    with pytest.raises(ValueError, match=r"The features to the model returned by input_fn "
                                         r"must have static shape.*drop_remainder=True"):
        _replica_batches(eight_devices, input_fn, ModeKeys.TRAIN, 16, steps=1)


def test_evaluating_an_endless_input_to_its_end_is_refused_before_any_step(eight_devices):
    input_fn = _input_fn(64, repeat=True)
    with pytest.raises(ValueError, match=r"evaluate\(steps=None\) evaluates until the input "
                                         r"ends, but the eval input_fn's input is endless"):
        _replica_batches(eight_devices, input_fn, ModeKeys.EVAL, 16, steps=1,
                         until_input_ends=True)


def test_tpu_predict_needs_a_dataset(eight_devices):
    def input_fn(params):
        return tf.zeros([params["batch_size"], 3])
    with pytest.raises(TypeError, match="For mode PREDICT, `input_fn` must return `Dataset` "
                                        "instead of `features` and `labels`."):
        _replica_batches(eight_devices, input_fn, ModeKeys.PREDICT, 16, steps=1)


def test_sliced_input_on_several_hosts_keeps_each_hosts_rows_of_the_global_batch():
    """SLICED: every host reads the global batch; host h keeps the rows its replicas would
    get if the batch were split across all replicas (here 2 hosts, batch 8; static shapes, as
    after padding)."""
    x = tf.range(16, dtype=tf.float32)
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, 10 * x)).batch(8, drop_remainder=True)
    for host, first in ((0, 0), (1, 4)):
        sliced = inputs._host_slice(dataset, host, 2)  # pylint: disable=protected-access
        batches = [tf.nest.map_structure(np.asarray, element) for element in sliced]
        assert [(f["x"].tolist(), y.tolist()) for f, y in batches] == [
            (list(range(step + first, step + first + 4)),
             [10 * v for v in range(step + first, step + first + 4)]) for step in (0, 8)]
