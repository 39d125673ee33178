"""PER_HOST_V1 input whose parts have different batch sizes (semi-supervised programs:
features {'labeled': B rows, 'unlabeled': k B rows}), on the simulated TPU.

The original split every tensor input_fn returned along its first dimension into one piece
per core of the host (its infeed's `tf.split`), whatever that tensor's batch size; a part
not divisible by the cores failed with `Shape [12, 2] cannot be sharded 8 ways along
dimension 0` (TF 2.15's `tpu_feed.InfeedQueue`, run on the CPU). So 8 cores train like one
device on the same global batch, and evaluation counts what the use_tpu=False run counts.
"""
import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.config.run_config import RunConfig
from tpu_estimator_compat.config.tpu_config import InputPipelineConfig as IPC
from tpu_estimator_compat.config.tpu_config import TPUConfig
from tpu_estimator_compat.engine import batching
from tpu_estimator_compat.engine import inputs
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.engine import runtime as runtime_lib
import helpers

v1 = tf.compat.v1
K = 3  # unlabeled examples per labeled one
_rng = np.random.RandomState(3)
LABELED = _rng.randn(64, 2).astype(np.float32)
LABELS = (LABELED[:, 0] - LABELED[:, 1] > 0).astype(np.int64)
UNLABELED = _rng.randn(64 * K, 2).astype(np.float32)


def parts_input_fn(labeled_count=64, unlabeled_ratio=K, labeled_drop_remainder=True):
    """({'labeled': [B, 2], 'unlabeled': [ratio * B, 2]}, labels [B]); the unlabeled part
    repeats, so the labeled part decides the length."""
    def input_fn(params):
        batch = params["batch_size"]
        labeled = tf.data.Dataset.from_tensor_slices(
            (LABELED[:labeled_count], LABELS[:labeled_count])).batch(
                batch, drop_remainder=labeled_drop_remainder)
        unlabeled = tf.data.Dataset.from_tensor_slices(UNLABELED).repeat().batch(
            int(batch * unlabeled_ratio), drop_remainder=True)
        return tf.data.Dataset.zip((labeled, unlabeled)).map(
            lambda xy, u: ({"labeled": xy[0], "unlabeled": u}, xy[1]))
    return input_fn


def mixing_model_fn(features, labels, mode, params):
    """A MixMatch-like model: labeled example i is mixed with its k unlabeled examples (rows
    k i .. k i + k - 1 of the unlabeled part), so the loss pairs the parts row by row."""
    kernel = v1.get_variable("kernel", initializer=tf.constant([[0.5, -0.5], [0.2, 0.1]]))
    bias = v1.get_variable("bias", initializer=tf.constant([0.0, 0.1]))
    labeled, unlabeled = features["labeled"], features["unlabeled"]
    partners = tf.reduce_mean(tf.reshape(unlabeled, [tf.shape(labeled)[0], -1, 2]), axis=1)
    mixed_logits = tf.matmul(0.7 * labeled + 0.3 * partners, kernel) + bias
    loss = v1.losses.sparse_softmax_cross_entropy(labels, mixed_logits)
    if mode == ModeKeys.TRAIN:
        return helpers.sgd_spec(mode, loss, 0.5)
    unlabeled_scores = tf.nn.softmax(tf.matmul(unlabeled, kernel) + bias)[:, 1]

    def metric_fn(labels, logits, labeled, unlabeled_scores):
        return {"accuracy": v1.metrics.accuracy(labels, tf.argmax(logits, 1)),
                "labeled_mean": v1.metrics.mean(labeled[:, 0]),
                "unlabeled_score": v1.metrics.mean(unlabeled_scores)}
    return tec.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(metric_fn, {
        "labels": labels, "logits": tf.matmul(labeled, kernel) + bias, "labeled": labeled,
        "unlabeled_scores": unlabeled_scores}))


def _replica_batches(strategy, input_fn, global_batch, mode=ModeKeys.TRAIN):
    runtime = runtime_lib.runtime_for_strategy(strategy, True)
    plan = batching.plan_batches(global_batch, mode, runtime,
                                 TPUConfig(per_host_input_for_training=IPC.PER_HOST_V1))
    program = model_bridge.UserProgram(None, {}, RunConfig())
    iterator = inputs.distributed_iterator(input_fn, mode, runtime, plan, program)
    step = inputs.step_element_reader(strategy, iterator)(iterator)  # as the device loop
    return [tf.nest.map_structure(np.asarray, element)
            for element in strategy.experimental_local_results(step)]


@pytest.mark.slow  # trains or evaluates for several seconds
def test_each_part_is_split_into_one_piece_per_core(eight_devices):
    replicas = _replica_batches(eight_devices, parts_input_fn(), 16)

    for replica, (features, labels) in enumerate(replicas):
        np.testing.assert_array_equal(features["labeled"], LABELED[2 * replica:2 * replica + 2])
        np.testing.assert_array_equal(labels, LABELS[2 * replica:2 * replica + 2])
        np.testing.assert_array_equal(features["unlabeled"],
                                      UNLABELED[6 * replica:6 * replica + 6])


def test_a_part_not_divisible_by_the_cores_is_the_originals_error(eight_devices):
    with pytest.raises(ValueError, match=r"Shape \[12, 2\] cannot be sharded 8 ways along "
                                         r"dimension 0\..*divisible by 8"):
        _replica_batches(eight_devices, parts_input_fn(unlabeled_ratio=0.75), 16)


def _estimator(model_dir, strategy, use_tpu=True):
    config = tec.RunConfig(
        model_dir=str(model_dir), train_distribute=strategy,
        tpu_config=tec.TPUConfig(iterations_per_loop=2,
                                 per_host_input_for_training=IPC.PER_HOST_V1))
    return tec.TPUEstimator(mixing_model_fn, config=config, use_tpu=use_tpu,
                            train_batch_size=16, eval_batch_size=8)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_eight_cores_train_like_one_device_on_the_same_parts(tmp_path, one_device,
                                                             eight_devices):
    weights = []
    for name, strategy in (("one", one_device), ("eight", eight_devices)):
        estimator = _estimator(tmp_path / name, strategy)
        estimator.train(parts_input_fn(), steps=4)
        weights.append({v: estimator.get_variable_value(v) for v in ("kernel", "bias")})
    one, eight = weights
    assert not np.allclose(one["kernel"], [[0.5, -0.5], [0.2, 0.1]])  # it trained
    for name in one:
        np.testing.assert_allclose(eight[name], one[name], rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory, one_device):
    model_dir = tmp_path_factory.mktemp("trained")
    _estimator(model_dir, one_device).train(parts_input_fn(), steps=2)
    return model_dir


def _evaluate(model_dir, strategy, use_tpu, input_fn, steps):
    return _estimator(model_dir, strategy, use_tpu).evaluate(input_fn, steps=steps)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_evaluate_steps_counts_every_labeled_example_as_use_tpu_false(trained_dir,
                                                                       eight_devices):
    # eval_batch_size 8 on 8 cores, 2 steps: 16 labeled and 48 unlabeled examples.
    tpu = _evaluate(trained_dir, eight_devices, True, parts_input_fn(), steps=2)
    cpu = _evaluate(trained_dir, None, False, parts_input_fn(), steps=2)

    assert tpu["labeled_mean"] == pytest.approx(LABELED[:16, 0].mean(), rel=1e-5)
    assert tpu["labeled_mean"] == pytest.approx(cpu["labeled_mean"], rel=1e-5)
    assert round(tpu["accuracy"] * 16, 4) == int(round(tpu["accuracy"] * 16))
    assert tpu["accuracy"] == pytest.approx(cpu["accuracy"])
    scores = 1 / (1 + np.exp(-(UNLABELED[:48] @ _kernel_difference(trained_dir)
                               + _bias_difference(trained_dir))))
    assert tpu["unlabeled_score"] == pytest.approx(cpu["unlabeled_score"], rel=1e-5)
    assert tpu["unlabeled_score"] == pytest.approx(scores.mean(), rel=1e-5)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_a_partial_labeled_batch_is_padded_and_only_its_real_rows_count(trained_dir,
                                                                        eight_devices):
    # 20 labeled examples in batches of 8 (the last has 4); the unlabeled part stays full.
    input_fn = parts_input_fn(labeled_count=20, labeled_drop_remainder=False)
    tpu = _evaluate(trained_dir, eight_devices, True, input_fn, steps=None)
    cpu = _evaluate(trained_dir, None, False, input_fn, steps=None)

    assert tpu["labeled_mean"] == pytest.approx(LABELED[:20, 0].mean(), rel=1e-5)
    assert tpu["labeled_mean"] == pytest.approx(cpu["labeled_mean"], rel=1e-5)
    assert round(tpu["accuracy"] * 20, 4) == int(round(tpu["accuracy"] * 20))
    assert tpu["accuracy"] == pytest.approx(cpu["accuracy"])
    logits = LABELED[:20] @ _variable(trained_dir, "kernel") + _variable(trained_dir, "bias")
    assert tpu["accuracy"] == pytest.approx(np.mean(logits.argmax(1) == LABELS[:20]))


def _variable(model_dir, name):
    return tf.train.load_variable(str(model_dir), name)


def _kernel_difference(model_dir):
    kernel = _variable(model_dir, "kernel")
    return kernel[:, 1] - kernel[:, 0]


def _bias_difference(model_dir):
    bias = _variable(model_dir, "bias")
    return bias[1] - bias[0]
