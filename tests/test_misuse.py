"""The misuse table: every bad input gets an error naming the cause and the fix, raised
before any training step runs, and the model_dir stays restorable."""
import re

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from tpu_estimator_compat import checkpoints

v1 = tf.compat.v1
PER_HOST_V1 = tec.InputPipelineConfig.PER_HOST_V1
PER_HOST_V2 = tec.InputPipelineConfig.PER_HOST_V2


def input_fn(params):
    features = np.ones([64, 2], np.float32)
    return tf.data.Dataset.from_tensor_slices((features, features[:, :1])).repeat().batch(
        params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    predictions = tf.matmul(features, v1.get_variable("w", [2, 1]))
    loss = v1.losses.mean_squared_error(labels, predictions)
    optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.1))
    train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def spec_model_fn(**spec_kwargs):
    def bad_model_fn(features, labels, mode, params):
        spec = model_fn(features, labels, mode, params)
        return tec.TPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op, **spec_kwargs)
    return bad_model_fn


class Case:
    def __init__(self, name, action, error, cause, fix):
        self.name, self.action, self.error, self.cause, self.fix = name, action, error, cause, fix

    def __repr__(self):
        return self.name


def config(model_dir, strategy, **kwargs):
    tpu_config = kwargs.pop("tpu_config", tec.TPUConfig(iterations_per_loop=2))
    return tec.RunConfig(model_dir=model_dir, train_distribute=strategy, tpu_config=tpu_config,
                         **kwargs)


def estimator(model_dir, strategy, fn=model_fn, **kwargs):
    kwargs.setdefault("train_batch_size", 16)
    return tec.TPUEstimator(fn, config=config(model_dir, strategy), **kwargs)


def train(model_dir, strategy, fn=model_fn, input_function=input_fn, batch=16, **train_kwargs):
    train_kwargs.setdefault("steps", 2)
    estimator(model_dir, strategy, fn, train_batch_size=batch).train(input_function,
                                                                     **train_kwargs)


class FakeResolver:
    def master(self):
        return ""

    def cluster_spec(self):
        return tf.train.ClusterSpec({})


CASES = [
    # RunConfig
    Case("checkpoint steps and secs", lambda d, s: tec.RunConfig(
        save_checkpoints_steps=10, save_checkpoints_secs=10), ValueError,
        "cannot be both set", r"save_checkpoints_steps=None|one of"),
    Case("negative summary steps", lambda d, s: tec.RunConfig(save_summary_steps=-1),
         ValueError, "save_summary_steps should be >= 0", r"0|disable"),
    Case("zero log steps", lambda d, s: tec.RunConfig(log_step_count_steps=0), ValueError,
         "log_step_count_steps should be > 0", r"positive|e\.g\."),
    Case("float seed", lambda d, s: tec.RunConfig(tf_random_seed=1.5), ValueError,
         "tf_random_seed must be integer", r"int|None"),
    Case("master and cluster", lambda d, s: tec.RunConfig(master="grpc://x:1",
                                                         cluster=FakeResolver()),
         ValueError, "Both master and cluster are set", r"not both"),
    Case("empty model_dir", lambda d, s: tec.RunConfig(model_dir=""), ValueError,
         "model_dir should be non-empty", r"None|path"),
    Case("strategy that is not one", lambda d, s: tec.RunConfig(train_distribute="mirrored"),
         (TypeError, ValueError), "train_distribute", r"tf\.distribute"),
    # TPUConfig
    Case("zero iterations_per_loop", lambda d, s: tec.TPUConfig(iterations_per_loop=0),
         ValueError, "Invalid TPUConfig `iterations_per_loop` value", r"positive integer"),
    Case("bad time unit", lambda d, s: tec.TPUConfig(iterations_per_loop="5x"), ValueError,
         "Invalid TPUConfig `iterations_per_loop` value", r"<N><s\|m\|h>|s\|m\|h"),
    Case("zero num_shards", lambda d, s: tec.TPUConfig(num_shards=0), ValueError,
         "num_shards must be positive", r"None|replicas|positive"),
    Case("float num_shards", lambda d, s: tec.TPUConfig(num_shards=2.0), TypeError,
         "num_shards must be int", r"int"),
    Case("bad cores per replica", lambda d, s: tec.TPUConfig(num_cores_per_replica=3),
         ValueError, "num_cores_per_replica must be 1, 2, 4, 8", r"1, 2, 4, 8"),
    Case("bad eval input configuration", lambda d, s: tec.TPUConfig(
        eval_training_input_configuration=PER_HOST_V2), ValueError,
        "eval_training_input_configuration must be PER_HOST_V1 or SLICED", r"PER_HOST_V1 or"),
    Case("partition dims without PER_HOST_V2", lambda d, s: tec.TPUConfig(
        input_partition_dims=[[1, 2]], num_cores_per_replica=2,
        per_host_input_for_training=PER_HOST_V1), ValueError,
        "input_partition_dims is only supported in PER_HOST_V2 mode", r"PER_HOST_V2"),
    # TPUEstimator constructor
    Case("no config", lambda d, s: tec.TPUEstimator(model_fn, train_batch_size=16), ValueError,
         "`config` must be provided", r"tpu_config.RunConfig"),
    Case("reserved params key", lambda d, s: tec.TPUEstimator(
        model_fn, config=config(d, s), params={"batch_size": 1}, train_batch_size=16),
        ValueError, "are reserved keys", r"train_batch_size|reserved"),
    Case("no train batch size", lambda d, s: tec.TPUEstimator(model_fn, config=config(d, s)),
         ValueError, "`train_batch_size` cannot be `None`", r"train_batch_size"),
    Case("float batch size", lambda d, s: estimator(d, s, train_batch_size=16.0), TypeError,
         "train_batch_size must be int", r"int"),
    Case("zero eval batch size", lambda d, s: estimator(d, s, eval_batch_size=0), ValueError,
         "eval_batch_size must be positive", r"positive"),
    Case("bad export api version", lambda d, s: estimator(
        d, s, export_saved_model_api_version=3), ValueError,
        "export_saved_model_api_version should be 1 or 2", r"1 or 2"),
    Case("model_fn without features", lambda d, s: estimator(
        d, s, lambda inputs, labels, mode, params: None), ValueError,
        "must include features argument", r"features"),
    Case("model_fn with extra args", lambda d, s: estimator(
        d, s, lambda features, labels, mode, params, extra: None), ValueError,
        "has following not expected args", r"features, labels, mode, params, config"),
    Case("model_dir disagrees with config", lambda d, s: tec.TPUEstimator(
        model_fn, model_dir=d + "_other", config=config(d, s), train_batch_size=16),
        ValueError, "model_dir", r"only one place|same value"),
    # train()
    Case("steps and max_steps", lambda d, s: train(d, s, steps=2, max_steps=4), ValueError,
         "Can not provide both steps and max_steps", r"steps|max_steps"),
    Case("no steps on TPU", lambda d, s: train(d, s, steps=None), ValueError,
         "one of `steps` or `max_steps` must be set", r"steps"),
    Case("negative steps", lambda d, s: train(d, s, steps=-1), ValueError,
         "Must specify steps > 0", r"> 0"),
    Case("float steps", lambda d, s: train(d, s, steps=2.5), TypeError,
         "Train steps must be int", r"int"),
    Case("model_fn without params", lambda d, s: train(
        d, s, lambda features, labels, mode: None), ValueError,
        "does not include params argument", r"params\['batch_size'\]"),
    Case("input_fn without params", lambda d, s: train(d, s, input_function=lambda: None),
         ValueError, "input_fn .* does not include params argument", r"params\[\"batch_size\"\]"),
    Case("batch not divisible by replicas", lambda d, s: train(d, s, batch=12), ValueError,
         "train batch size 12 must be divisible by number of replicas 8",
         r"multiple of|divisible"),
    Case("dynamic batch dimension", lambda d, s: train(d, s, input_function=lambda params: (
        tf.data.Dataset.from_tensor_slices(np.ones([64, 2], np.float32)).map(
            lambda x: (x, x[:1])).batch(params["batch_size"]))),
        ValueError, "must have static shape", r"drop_remainder=True"),
    Case("labels but model_fn takes none", lambda d, s: train(
        d, s, lambda features, mode, params: None), ValueError,
        "model_fn does not take labels, but input_fn returns labels", r"labels"),
    # TPUEstimatorSpec returned by model_fn
    Case("train spec without train_op", lambda d, s: train(
        d, s, lambda features, labels, mode, params: tec.TPUEstimatorSpec(
            mode, loss=tf.constant(1.0))), ValueError, "Missing train_op", r"train_op"),
    Case("eval_metrics not a tuple", lambda d, s: train(
        d, s, spec_model_fn(eval_metrics="accuracy")), ValueError,
        "eval_metrics should be tuple or list", r"\(metric_fn, tensors\)|tuple"),
    Case("host_call fn not callable", lambda d, s: train(
        d, s, spec_model_fn(host_call=(1, []))), TypeError,
        r"host_call\[0\] should be callable", r"callable"),
    Case("eval_metrics arity", lambda d, s: train(
        d, s, spec_model_fn(eval_metrics=(lambda a, b: {}, [tf.constant([1.0])]))),
        RuntimeError, "does not match method args", r"tensors|args"),
    Case("scaffold_fn returning None", lambda d, s: train(
        d, s, spec_model_fn(scaffold_fn=lambda: None)), ValueError,
        "scaffold_fn returns None", r"Scaffold"),
    Case("non-spec from model_fn", lambda d, s: train(
        d, s, lambda features, labels, mode, params: {"loss": 1}), TypeError,
        "must return a TPUEstimatorSpec or EstimatorSpec", r"TPUEstimatorSpec"),
    # evaluate()
    Case("no eval batch size on TPU", lambda d, s: estimator(d, s).evaluate(input_fn),
         ValueError, "eval_batch_size in TPUEstimator constructor cannot be `None`",
         r"eval_batch_size="),
    Case("zero eval steps", lambda d, s: estimator(d, s, eval_batch_size=16).evaluate(
        input_fn, steps=0), ValueError, "Eval steps must be positive", r"positive|None"),
]


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory, eight_devices):
    model_dir = str(tmp_path_factory.mktemp("misuse"))
    estimator(model_dir, eight_devices).train(input_fn, steps=2)
    return model_dir


def restorable_values(model_dir):
    latest = checkpoints.latest_checkpoint(model_dir)
    return {name: checkpoints.load_variable(latest, name)
            for name in checkpoints.list_variable_names(latest)}


def test_the_table_has_at_least_thirty_cases():
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_misuse_gets_a_clear_error_and_leaves_model_dir_restorable(case, trained_dir,
                                                                  eight_devices):
    before = restorable_values(trained_dir)
    with pytest.raises(case.error) as raised:
        case.action(trained_dir, eight_devices)
    message = str(raised.value)
    assert re.search(case.cause, message), message
    assert re.search(case.fix, message), message
    after = restorable_values(trained_dir)
    assert sorted(after) == sorted(before)
    for name in before:
        np.testing.assert_array_equal(after[name], before[name])
