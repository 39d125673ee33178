"""The session SessionRunHooks get runs what TF1's Session ran outside the device loop.

An EMA-loading hook as public ImageNet classifiers have it (tensorflow/tpu's efficientnet
and mnasnet `LoadEMAHook`: `assign_from_checkpoint_fn(latest_checkpoint, ema.
variables_to_restore(...))` in begin(), called with the session in after_create_session),
and a hook that feeds placeholders, assigns the model's variable and saves with a Saver.
The constants were printed by the original (TF 2.15 + tensorflow-estimator 2.15, graph mode,
`TPUEstimator(use_tpu=False)`, the same model_fn and hooks; its hook built the Saver that
`assign_from_checkpoint_fn` builds, as TF 2.15 has no tf.contrib). On 8 TPU cores the
metric is over every example, and `loss` is replica 0's (the original's TPU `loss`: its
per-step losses averaged over the steps), which the original printed by evaluating the
rows replica 0 sees.
"""
import os

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as v1  # the TF1 namespace (`import tensorflow as tf`)
from helpers import make_estimator
from sequential_hooks_model import GEN_KERNEL
from sequential_hooks_model import OUT_KERNEL
from sequential_hooks_model import finite_input_fn as finite_gan_input_fn
from sequential_hooks_model import input_fn as gan_input_fn
from sequential_hooks_model import make_hook_classes
from sequential_hooks_model import make_model_fn
from sequential_hooks_model import short_input_fn as short_gan_input_fn

FEATURES = (np.arange(64, dtype=np.float32).reshape(32, 2) % 9 - 4) / 4.0
TARGETS = FEATURES @ np.array([[1.0], [-2.0]], np.float32) + 0.3
HIDDEN_INIT = np.array([[0.3, -0.2, 0.1], [-0.4, 0.5, 0.2]], np.float32)

# The original: train(max_steps=6) (train_batch_size 16), then evaluate(steps=2) (16 a step).
ORIGINAL_EMA_KERNEL = [0.28796207904815674, -0.34230679273605347, -0.12900157272815704]
ORIGINAL_EMA_BIAS = 0.24604607
ORIGINAL_MAE = {"trained": 0.6779839, "ema": 0.70385665, "ema_bias_assigned": 0.70410377}
ORIGINAL_LOSS = {"trained": 1.0282626, "ema": 1.0947883, "ema_bias_assigned": 1.0939428}
ORIGINAL_REPLICA0_LOSS = {"trained": 0.3276159, "ema": 0.35282513,
                          "ema_bias_assigned": 0.35493863}
ORIGINAL_SAVED_NAMES = ["global_step", "hidden/bias", "hidden/kernel", "out/bias",
                        "out/kernel"]
ASSIGNED_BIAS = 0.25


def input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    """Two dense layers; the train op maintains moving averages (efficientnet's way)."""
    hidden = v1.layers.dense(features, 3, activation=tf.nn.tanh, name="hidden",
                             kernel_initializer=v1.constant_initializer(HIDDEN_INIT))
    predictions = v1.layers.dense(hidden, 1, name="out",
                                  kernel_initializer=v1.zeros_initializer())
    loss = v1.losses.mean_squared_error(labels, predictions)
    if mode == tec.ModeKeys.EVAL:
        def metric_fn(labels, predictions):
            return {"mae": v1.metrics.mean_absolute_error(labels, predictions)}
        return tec.TPUEstimatorSpec(mode, loss=loss,
                                    eval_metrics=(metric_fn, [labels, predictions]))
    global_step = v1.train.get_global_step()
    optimizer = v1.train.GradientDescentOptimizer(0.1)
    if params["use_tpu"]:
        optimizer = v1.tpu.CrossShardOptimizer(optimizer)
    train_op = optimizer.minimize(loss, global_step)
    ema = v1.train.ExponentialMovingAverage(decay=0.9, num_updates=global_step)
    with v1.control_dependencies([train_op]):
        train_op = ema.apply(v1.trainable_variables())
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def get_ema_vars():
    """efficientnet's utils.get_ema_vars."""
    ema_vars = v1.trainable_variables() + v1.get_collection("moving_vars")
    for v in v1.global_variables():
        if "moving_mean" in v.name or "moving_variance" in v.name:
            ema_vars.append(v)
    return list(set(ema_vars))


class LoadEMAHook(v1.train.SessionRunHook):
    """efficientnet's LoadEMAHook, reading back the kernel it loaded."""

    def __init__(self, model_dir):
        self._model_dir = model_dir

    def begin(self):
        ema = v1.train.ExponentialMovingAverage(decay=0.0)
        var_dict = ema.variables_to_restore(get_ema_vars())
        self._load_ema = v1.contrib.framework.assign_from_checkpoint_fn(
            v1.train.latest_checkpoint(self._model_dir), var_dict)
        self.kernel = [v for v in v1.global_variables() if v.op.name == "out/kernel"][0]

    def after_create_session(self, sess, coord):
        self._load_ema(sess)
        self.kernel_value = sess.run(self.kernel)


class FeedHook(v1.train.SessionRunHook):
    """A placeholder with a default, an assign fed from a placeholder, a string fed, runs
    through `run_context.session`, a Saver's save."""

    def __init__(self, save_path):
        self.save_path = save_path

    def begin(self):
        self.out_bias = [v for v in v1.global_variables() if v.op.name == "out/bias"][0]
        self.scale = v1.placeholder_with_default(np.float32(1.0), [])
        self.scaled = self.scale * self.out_bias
        self.value = v1.placeholder(tf.float32, [1], name="bias_value")
        self.assign = v1.assign(self.out_bias, self.value)
        self.saver = v1.train.Saver()
        self.path = v1.placeholder(tf.string, [])
        self.path_length = tf.strings.length(self.path)

    def after_create_session(self, sess, coord):
        self.default = sess.run(self.scaled)
        self.fed = sess.run(self.scaled, feed_dict={self.scale: 2.0})
        with pytest.raises(tf.errors.InvalidArgumentError) as unfed:
            sess.run(self.assign)
        self.unfed_error = unfed.value.message
        sess.run(self.assign, feed_dict={self.value: [ASSIGNED_BIAS]})
        self.assigned = sess.run([self.out_bias, self.scaled])
        self.length = sess.run(self.path_length, feed_dict={self.path: self.save_path})

    def after_run(self, run_context, run_values):
        self.tripled = run_context.session.run(self.scaled, feed_dict={self.scale: 3.0})

    def end(self, sess):
        self.saved = self.saver.save(sess, self.save_path)


def _estimator(model_dir, use_tpu):
    return tec.TPUEstimator(
        model_fn, use_tpu=use_tpu, train_batch_size=16, eval_batch_size=16,
        config=tec.RunConfig(model_dir=str(model_dir), save_summary_steps=None,
                             tpu_config=tec.TPUConfig(iterations_per_loop=2)))


@pytest.mark.slow  # trains and evaluates several times
@pytest.mark.parametrize("cores", [None, 8], ids=["1_replica", "8_tpu_cores"])
def test_an_ema_loading_hook_evaluates_the_moving_averages(tmp_path, monkeypatch, cores):
    """Issue 32, item 1: `assign_from_checkpoint_fn(...)(sess)` in after_create_session
    raised "cannot feed values into the traced device loop". Evaluations with the hooks
    give the original's numbers; the next one without them the trained weights' again.
    The first evaluation places the hooks while the model is traced (before the
    checkpoint's restore), the next one with hooks in that trace (before the restore too),
    the last one (the same hooks again) calls them after the restore."""
    if cores:
        from tpu_estimator_compat.engine import cluster_resolver, runtime  # noqa: PLC0415
        monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, str(cores))
        monkeypatch.setenv(runtime.SIMULATED_TPU_XLA_ENV, "0")
    expected_loss = ORIGINAL_REPLICA0_LOSS if cores else ORIGINAL_LOSS
    model_dir = tmp_path / "model"
    estimator = _estimator(model_dir, use_tpu=bool(cores))
    estimator.train(input_fn, max_steps=6)
    np.testing.assert_allclose(
        estimator.get_variable_value("out/kernel/ExponentialMovingAverage").ravel(),
        ORIGINAL_EMA_KERNEL, rtol=1e-6)
    os.makedirs(tmp_path / "saved")
    save_path = str(tmp_path / "saved" / "model.ckpt")
    feed_hook = FeedHook(save_path)
    runs, ema_hooks = {}, [LoadEMAHook(str(model_dir))]
    for name, hooks in [("ema_bias_assigned", [LoadEMAHook(str(model_dir)), feed_hook]),
                        ("trained", []), ("ema", ema_hooks), ("ema_again", ema_hooks)]:
        runs[name] = estimator.evaluate(input_fn, steps=2, hooks=hooks)
        if hooks:
            np.testing.assert_allclose(hooks[0].kernel_value.ravel(), ORIGINAL_EMA_KERNEL,
                                       rtol=1e-6)
    runs["trained_again"] = estimator.evaluate(input_fn, steps=2)
    for name, results in runs.items():
        name = name.replace("_again", "")
        np.testing.assert_allclose(results["mae"], ORIGINAL_MAE[name], rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(results["loss"], expected_loss[name], rtol=1e-6,
                                   err_msg=name)

    # The placeholder with a default, fed and not; the assign reached every replica (the
    # metric over all examples is the original's).
    np.testing.assert_allclose(feed_hook.default, [ORIGINAL_EMA_BIAS], rtol=1e-6)
    np.testing.assert_allclose(feed_hook.fed, [2 * ORIGINAL_EMA_BIAS], rtol=1e-6)
    np.testing.assert_allclose(feed_hook.assigned, [[ASSIGNED_BIAS], [ASSIGNED_BIAS]])
    np.testing.assert_allclose(feed_hook.tripled, [3 * ASSIGNED_BIAS])
    assert feed_hook.length == len(save_path)
    assert feed_hook.unfed_error == ("You must feed a value for placeholder tensor "
                                     "'bias_value' with dtype float and shape [1]")

    # The hook's Saver wrote the evaluated weights (the moving averages, the bias it
    # assigned) where TF1's did; a model evaluating that checkpoint gets the same numbers.
    assert feed_hook.saved == save_path
    assert sorted(os.listdir(tmp_path / "saved")) == [
        "checkpoint", "model.ckpt.data-00000-of-00001", "model.ckpt.index"]  # no .meta
    assert tf.train.get_checkpoint_state(str(tmp_path / "saved")).model_checkpoint_path \
        == save_path
    assert [name for name, _ in tf.train.list_variables(save_path)] == ORIGINAL_SAVED_NAMES
    np.testing.assert_allclose(tf.train.load_variable(save_path, "out/kernel").ravel(),
                               ORIGINAL_EMA_KERNEL, rtol=1e-6)
    np.testing.assert_allclose(tf.train.load_variable(save_path, "out/bias"), [ASSIGNED_BIAS])
    results = _estimator(tmp_path / "other", use_tpu=bool(cores)).evaluate(
        input_fn, steps=2, checkpoint_path=save_path)
    np.testing.assert_allclose(results["mae"], ORIGINAL_MAE["ema_bias_assigned"], rtol=1e-6)
    np.testing.assert_allclose(results["loss"], expected_loss["ema_bias_assigned"], rtol=1e-6)


# -- a Scaffold's init_fn, run with the session when no checkpoint is restored ----------------

PRETRAINED_KERNEL = np.array([[0.5], [-1.5]], np.float32)
# The original: train(max_steps=2), then train(max_steps=4) resuming from the checkpoint.
ORIGINAL_FINE_TUNED = {"dense/kernel": [0.5546677708625793, -1.5510166883468628],
                       "dense/bias": [-0.06663964688777924], "bias_scale": 0.5}
ORIGINAL_RESUMED_KERNEL = [0.6031221151351929, -1.5975641012191772]
# The same without the scaffold, the kernel initialized by a hook's init_from_checkpoint.
ORIGINAL_HOOK_INITIALIZED = {"dense/kernel": [0.5542624592781067, -1.5568369626998901],
                             "dense/bias": [0.11349707841873169], "bias_scale": 0.0}
ORIGINAL_HOOK_RESUMED_KERNEL = [0.6028426885604858, -1.6061491966247559]


class InitFromCheckpointHook(v1.train.SessionRunHook):
    def __init__(self, pretrained):
        self.pretrained = pretrained

    def begin(self):
        v1.train.init_from_checkpoint(self.pretrained, {"pretrained/kernel": "dense/kernel"})


def _fine_tuning_model_fn(pretrained, scaffold_kind):
    def model_fn(features, labels, mode, params):
        predictions = v1.layers.dense(features, 1, name="dense",
                                      kernel_initializer=v1.zeros_initializer())
        bias_scale = v1.get_variable("bias_scale", [], initializer=v1.zeros_initializer(),
                                     trainable=False)
        loss = v1.losses.mean_squared_error(labels, predictions + bias_scale)
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, v1.train.get_global_step())

        def scaffold_fn():
            kernel = [v for v in v1.global_variables() if v.op.name == "dense/kernel"][0]
            load = v1.contrib.framework.assign_from_checkpoint_fn(
                pretrained, {"pretrained/kernel": kernel})
            value = v1.placeholder(tf.float32, [], name="scale_value")
            assign = v1.assign(bias_scale, value)
            if scaffold_kind == "init_op":
                with v1.control_dependencies([v1.global_variables_initializer()]):
                    init_op = v1.group(assign)
                return v1.train.Scaffold(init_op=init_op, init_feed_dict={value: 0.5},
                                         init_fn=lambda scaffold, sess: load(sess))

            def init_fn(scaffold, sess):
                load(sess)
                sess.run(assign, feed_dict={value: 0.5})
            return v1.train.Scaffold(init_fn=init_fn)
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                    scaffold_fn=scaffold_fn if scaffold_kind else None)
    return model_fn


@pytest.mark.slow  # trains twice
@pytest.mark.parametrize("scaffold_kind", ["init_fn", "init_op", None])
def test_init_fn_and_init_from_checkpoint_load_a_pretrained_checkpoint(tmp_path, scaffold_kind):
    """Fine-tuning from a pretrained checkpoint: scaffold_fn's Scaffold(init_fn=...) calls
    `assign_from_checkpoint_fn(...)(sess)` and runs a fed assign, when training starts
    without a checkpoint, not when it resumes from one; or its init_op (the variables'
    initializers, then the assign) runs fed `init_feed_dict`. Without a scaffold, a hook's begin() calls `tf.train.init_from_checkpoint`, which acts
    the same way."""
    pretrained = str(tmp_path / "pretrained" / "model.ckpt")
    os.makedirs(os.path.dirname(pretrained))
    tf.raw_ops.SaveV2(prefix=pretrained, tensor_names=["pretrained/kernel"],
                      shape_and_slices=[""], tensors=[tf.constant(PRETRAINED_KERNEL)])
    estimator = tec.TPUEstimator(
        _fine_tuning_model_fn(pretrained, scaffold_kind), use_tpu=False,
        train_batch_size=16, config=tec.RunConfig(model_dir=str(tmp_path / "model"),
                                                  save_summary_steps=None))
    hooks = [] if scaffold_kind else [InitFromCheckpointHook(pretrained)]
    initialized, resumed_kernel = ((ORIGINAL_FINE_TUNED, ORIGINAL_RESUMED_KERNEL)
                                   if scaffold_kind else
                                   (ORIGINAL_HOOK_INITIALIZED, ORIGINAL_HOOK_RESUMED_KERNEL))
    estimator.train(input_fn, max_steps=2, hooks=hooks)
    for name, expected in initialized.items():
        np.testing.assert_allclose(np.ravel(estimator.get_variable_value(name)), expected,
                                   rtol=1e-5, err_msg=name)
    estimator.train(input_fn, max_steps=4, hooks=hooks)
    np.testing.assert_allclose(estimator.get_variable_value("dense/kernel").ravel(),
                               resumed_kernel, rtol=1e-5)
    assert estimator.get_variable_value("bias_scale") == initialized["bias_scale"]


class SaveThriceHook(v1.train.SessionRunHook):
    def __init__(self, save_path):
        self.save_path = save_path

    def begin(self):
        self.saver = v1.train.Saver(max_to_keep=2)
        self.global_step = v1.train.get_global_step()

    def end(self, sess):
        self.saved = [self.saver.save(sess, self.save_path, global_step=step)
                      for step in (1, 2, self.global_step)]


@pytest.mark.slow  # trains and evaluates
def test_a_hooks_saver_keeps_its_last_max_to_keep_checkpoints(tmp_path):
    """As TF1's Saver: `global_step` (a number or the global step's tensor) names the
    checkpoint; the state file lists the last `max_to_keep`, older files are deleted."""
    estimator = _estimator(tmp_path / "model", use_tpu=False)
    estimator.train(input_fn, max_steps=3)
    os.makedirs(tmp_path / "saved")
    hook = SaveThriceHook(str(tmp_path / "saved" / "model.ckpt"))
    estimator.evaluate(input_fn, steps=1, hooks=[hook])
    prefix = str(tmp_path / "saved" / "model.ckpt")
    assert hook.saved == [f"{prefix}-1", f"{prefix}-2", f"{prefix}-3"]
    state = tf.train.get_checkpoint_state(str(tmp_path / "saved"))
    assert list(state.all_model_checkpoint_paths) == [f"{prefix}-2", f"{prefix}-3"]
    assert state.model_checkpoint_path == f"{prefix}-3"
    assert sorted(os.listdir(tmp_path / "saved")) == [
        "checkpoint", "model.ckpt-2.data-00000-of-00001", "model.ckpt-2.index",
        "model.ckpt-3.data-00000-of-00001", "model.ckpt-3.index"]
    assert tf.train.load_variable(f"{prefix}-3", "global_step") == 3


# The original (TF 2.15 + tensorflow-estimator 2.15, graph mode, resource variables:
# tests/data/make_sequential_hooks_reference.py) on tests/sequential_hooks_model.py: the
# variables after train(max_steps=2) and after a new Estimator resumed to max_steps=4, and
# what the hooks' session.run calls returned (a train op's loss), in order.
ORIGINAL_SEQUENTIAL_HOOKS = {
    "sequential": {
        "after_2": {
            "Generator/gen/kernel": [
                [0.1001577153801918, 0.19953198730945587, -0.29958733916282654],
                [0.4029245376586914, -0.5075177550315857, 0.6024929881095886]],
            "Discriminator/out/kernel": [[-0.018075868487358093],
                                     [0.16147316992282867],
                                     [0.017448026686906815],
                                         [-0.3015731871128082]],
            "global_step": 2,
        },
        "after_4": {
            "Generator/gen/kernel": [
                [0.10035544633865356, 0.19898773729801178, -0.2993597686290741],
                [0.4038665294647217, -0.5107023119926453, 0.6030445694923401]],
            "Generator/gen/bias": [-0.023554613813757896, 0.06522634625434875,
                                   -0.01890738680958748],
            "Discriminator/hidden/bias": [-0.04956766217947006, -0.32076191902160645,
                                          -0.2645445466041565, -0.1590115875005722],
            "Discriminator/out/kernel": [[0.11163634806871414],
                                     [0.0818568766117096],
                                         [-0.012636194005608559],
                                         [-0.24514281749725342]],
            "Discriminator/out/bias/Adam_1": [0.0],
            "beta1_power": 0.3874204158782959,
            "global_step": 4,
        },
        "returned": [[-0.04099211096763611],
                 [0.4766295552253723],
                     [-0.1510269045829773],
                     [-0.004727862775325775],
                 [0.23731350898742676],
                     [-0.09987644851207733],
                     [-0.0017973314970731735],
                 [0.16129226982593536],
                     [-0.08462229371070862],
                     [-0.010357732884585857],
                 [0.12599243223667145],
                     [-0.0822383314371109]],
    },
    "custom": {
        "after_2": {
            "Generator/gen/kernel": [
                [0.10096115618944168, 0.18800771236419678, -0.29713159799575806],
                [0.409248411655426, -0.5143433213233948, 0.6007606387138367]],
            "Discriminator/out/kernel": [[-0.10728465020656586],
                                     [0.39958667755126953],
                                     [0.07755789160728455],
                                         [-0.3788660168647766]],
            "global_step": 2,
        },
        "after_4": {
            "Generator/gen/kernel": [
                [0.0992254912853241, 0.1728600561618805, -0.2926456928253174],
                [0.4137459993362427, -0.534784734249115, 0.6032392978668213]],
            "Generator/gen/bias": [-0.02875613421201706, 0.12015782296657562,
                                   -0.01912761479616165],
            "Discriminator/hidden/bias": [0.18248268961906433, -0.15227964520454407,
                                          -0.17945024371147156, 0.08806837350130081],
            "Discriminator/out/kernel": [[-0.042644742876291275],
                                     [0.4887380599975586],
                                     [0.1202441155910492],
                                         [-0.42365801334381104]],
            "Discriminator/out/bias/Adam_1": [0.0],
            "beta1_power": 0.59048992395401,
            "global_step": 4,
        },
        "returned": [0.04441523551940918, -0.15917009115219116, 0.036294110119342804,
                     -0.34203487634658813],
    },
}

# The same original's 'sequential' training on the finite input (4 batches), to max_steps=10:
# the first hook's run of the second step met the end of the input.
ORIGINAL_FINITE_INPUT = {
    "global_step": 1,
    "Generator/gen/kernel": [[0.10007031261920929, 0.19967235624790192, -0.2996710240840912],
                             [0.4014763832092285, -0.5046771764755249, 0.6018316745758057]],
    "Discriminator/out/kernel": [[-0.10294705629348755], [0.22000500559806824],
                                 [0.0434357188642025], [-0.3381241261959076]],
    "beta1_power": 0.7289999127388,
}
ORIGINAL_FINITE_INPUT_RETURNED = [[-0.04099211096763611], [0.4766295552253723],
                                  [-0.1510269045829773]]
# ... and on the short input (2 batches): the first step's second discriminator run met its
# end. TF1's CheckpointSaverHook had saved model.ckpt-0 before the hooks ran, and saved no
# other: the checkpoint holds the initial weights.
ORIGINAL_SHORT_INPUT = {
    "global_step": 0,
    "Generator/gen/kernel": GEN_KERNEL,
    "Discriminator/out/kernel": OUT_KERNEL,
    "beta1_power": 0.8999999761581421,
}
ORIGINAL_SHORT_INPUT_RETURNED = [[-0.04099211096763611], [0.4766295552253723]]


def _sequential_hooks_estimator(model_dir, kind, returned, **kwargs):
    model = make_model_fn(v1, kind, returned)
    if not kwargs:
        return v1.estimator.Estimator(model, model_dir=str(model_dir))
    return make_estimator(model_dir, model=lambda features, labels, mode, params: model(
        features, labels, mode), batch_size=2, **kwargs)


@pytest.mark.slow  # trains twice per kind
@pytest.mark.parametrize("kind", ["sequential", "custom"])
def test_hooks_running_train_ops_train_as_the_original(tmp_path, kind):
    """TF-GAN's GANEstimator layout (RunTrainOpsHook running the generator's train op once
    and the discriminator's twice, the train_op only incrementing the global step), and a
    call hook running a second train op in before_run: each session.run takes an input
    batch of its own and updates the variables, as TF1's Session.run; resuming from the
    checkpoint (the hooks' first runs happen before the restore) gives the same."""
    expected = ORIGINAL_SEQUENTIAL_HOOKS[kind]
    returned = []
    for max_steps, names in ((2, "after_2"), (4, "after_4")):
        hooks = [make_hook_classes(v1)[1](returned)] if kind == "custom" else []
        estimator = _sequential_hooks_estimator(tmp_path, kind, returned)
        estimator.train(gan_input_fn, hooks=hooks, max_steps=max_steps)
        for name, value in expected[names].items():
            np.testing.assert_allclose(estimator.get_variable_value(name), value, rtol=1e-6,
                                       atol=1e-6, err_msg=f"{name} {names}")
    np.testing.assert_allclose(returned, expected["returned"], rtol=1e-6, atol=1e-6)
    # The first checkpoint holds the weights before the first step's hook runs, as TF1's
    # CheckpointSaverHook saved it in after_create_session.
    first = tf.train.load_checkpoint(str(tmp_path / "model.ckpt-0"))
    np.testing.assert_array_equal(first.get_tensor("Generator/gen/kernel"),
                                  np.float32(GEN_KERNEL))


@pytest.mark.parametrize("input_fn, expected, expected_returned", [
    (finite_gan_input_fn, ORIGINAL_FINITE_INPUT, ORIGINAL_FINITE_INPUT_RETURNED),
    (short_gan_input_fn, ORIGINAL_SHORT_INPUT, ORIGINAL_SHORT_INPUT_RETURNED),
], ids=["in_the_second_step", "in_the_first_step"])
def test_a_hooks_train_op_meeting_the_end_of_the_input_ends_training(
        tmp_path, input_fn, expected, expected_returned):
    """TF1's MonitoredSession ended training normally at the OutOfRangeError a hook's
    session.run raised: the last checkpoint is the step before (also when the first
    step's hooks, run while the step is traced, meet it)."""
    returned = []
    estimator = _sequential_hooks_estimator(tmp_path, "sequential", returned)
    estimator.train(input_fn, max_steps=10)
    for name, value in expected.items():
        np.testing.assert_allclose(estimator.get_variable_value(name), value, rtol=1e-6,
                                   atol=1e-6, err_msg=name)
    np.testing.assert_allclose(returned, expected_returned, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("use_tpu", [True, False], ids=["tpu", "two_replicas"])
def test_hooks_running_train_ops_are_refused_where_the_original_had_none(tmp_path,
                                                                         two_devices,
                                                                         use_tpu):
    """On TPU the original's model_fn ran inside the TPU loop, whose ops a Session could not
    run apart; on several replicas a hook's ops are one replica's."""
    estimator = _sequential_hooks_estimator(tmp_path, "sequential", [], strategy=two_devices,
                                            use_tpu=use_tpu)
    message = (r"\. With use_tpu=True the original built model_fn inside the TPU loop, "
               r"whose ops a Session could not run apart from it\. Run it in the train_op"
               if use_tpu else
               r", while training on 2 replicas: tpu_estimator_compat runs such ops on their "
               r"own input batch only on one device\. Run it in the train_op")
    message = (r"A hook's session.run\(\) ran \S+, which needs the model's input \(a "
               r"train op run by a hook, as TF-GAN's RunTrainOpsHook\)" + message)
    with pytest.raises(NotImplementedError, match=message):
        estimator.train(gan_input_fn, max_steps=1)
