"""The misuse table: every bad input gets an error naming the cause and the fix, raised
before any training step runs, and the model_dir stays restorable."""
import os
import re
import shutil
import tempfile

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.export import receivers
import helpers

pytestmark = pytest.mark.slow  # estimator runs (and processes): seconds each

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
    return helpers.sgd_spec(mode, loss)


def spec_model_fn(**spec_kwargs):
    def bad_model_fn(features, labels, mode, params):
        spec = model_fn(features, labels, mode, params)
        return tec.TPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op, **spec_kwargs)
    return bad_model_fn


def features_dataset(params, rows=64):
    return tf.data.Dataset.from_tensor_slices(np.ones([rows, 2], np.float32)).repeat().batch(
        params["batch_size"], drop_remainder=True)


def labelled(labels):
    """An input_fn of all-ones features [B, 2] and the given per-example labels."""
    def make(params):
        dataset = tf.data.Dataset.from_tensor_slices((np.ones([64, 2], np.float32), labels))
        return dataset.repeat().batch(params["batch_size"], drop_remainder=True)
    return make


def three_tuples(params):
    features = np.ones([64, 2], np.float32)
    return tf.data.Dataset.from_tensor_slices((features, features, features[:, :1])).repeat(
        ).batch(params["batch_size"], drop_remainder=True)


def generator_input_fn(params):
    yield np.ones([params["batch_size"], 2], np.float32), np.ones([params["batch_size"], 1])


def servable_model_fn(features, labels, mode, params):
    if mode != tec.ModeKeys.PREDICT:
        return model_fn(features, labels, mode, params)
    return tec.TPUEstimatorSpec(mode, predictions={
        "y": tf.matmul(features, v1.get_variable("w", [2, 1]))})


def export(model_dir, strategy, receiver_fn):
    return estimator(model_dir, strategy, servable_model_fn).export_saved_model(
        tempfile.mkdtemp(), receiver_fn)


def tensor_receiver():
    return tensor_receiver_of_width(2)


def tensor_receiver_of_width(width):
    features = v1.placeholder(tf.float32, [None, width])
    return receivers.TensorServingInputReceiver(features, features)


def classifier_model_fn(features, labels, mode, params):
    logits = tf.matmul(features, v1.get_variable("w", [2, 3]))
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    return helpers.sgd_spec(mode, loss)


def own_shapes_model_fn(features, labels, mode, params):
    hidden = tf.matmul(features, v1.get_variable("w_hidden", [2, 4]))
    # w_out needs 4 rows:
    predictions = tf.matmul(hidden, v1.get_variable("w_out", [3, 1]))
    loss = v1.losses.mean_squared_error(labels, predictions)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=v1.train.get_global_step())
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def features_width_model_fn(features, labels, mode, params):
    predictions = tf.matmul(features, v1.get_variable("w_in", [3, 1]))  # features: [B, 2]
    loss = v1.losses.mean_squared_error(labels, predictions)
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=v1.train.GradientDescentOptimizer(
        0.1).minimize(loss, global_step=v1.train.get_global_step()))


def host_call_dict_model_fn(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    loss = tf.reshape(spec.loss, [1])
    return tec.TPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op, host_call=(
        lambda a, b: [], {"a": loss, "c": loss}))


def eval_metrics_dict_model_fn(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    return tec.TPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op, eval_metrics=(
        lambda labels, predictions: {}, {"labels": labels, "logits": features}))


def receiver_without_features():
    return receivers.ServingInputReceiver({}, {"x": v1.placeholder(tf.float32, [None, 2])})


def damaged_copy(model_dir, damage="truncated newest"):
    """A copy of model_dir with its newest checkpoint's data file truncated, or (damage=
    'garbled state, no index') its state file garbled and every checkpoint index gone."""
    copy = tempfile.mkdtemp()
    shutil.copytree(model_dir, copy, dirs_exist_ok=True)
    if damage == "truncated newest":
        data = checkpoints.latest_checkpoint(copy) + ".data-00000-of-00001"
        with open(data, "r+b") as handle:
            handle.truncate(os.path.getsize(data) // 2)
    else:
        with open(os.path.join(copy, "checkpoint"), "wb") as handle:
            handle.write(b"model_checkpoint_path: \"model.ck")
        for name in os.listdir(copy):
            if name.endswith(".index"):
                os.remove(os.path.join(copy, name))
    return copy


def metric_model_fn(metric_fn, tensors_of, loss_of=None):
    """model_fn with eval_metrics=(metric_fn, tensors_of(features, labels, predictions));
    `loss_of(predictions)` replaces the labelled loss (a model that needs no labels)."""
    def fn(features, labels, mode, params):
        predictions = tf.matmul(features, v1.get_variable("w", [2, 1]))
        loss = (loss_of(predictions) if loss_of
                else v1.losses.mean_squared_error(labels, predictions))
        return tec.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(
            metric_fn, tensors_of(features, labels, predictions)))
    return fn


def int32_loss_model_fn(features, labels, mode, params):
    loss = tf.cast(tf.reduce_sum(tf.matmul(features, v1.get_variable("w", [2, 1]))), tf.int32)
    return helpers.sgd_spec(mode, loss)


def memory_hungry_model_fn(features, labels, mode, params):
    """Needs 2**39 floats per example: more memory than any host has (fails at once)."""
    spec = model_fn(features, labels, mode, params)
    huge = tf.tile(features, [2 ** 38, 1])
    return spec._replace(loss=spec.loss + 0.0 * tf.reduce_sum(huge))


def scalar_prediction_model_fn(features, labels, mode, params):
    weights = v1.get_variable("w", [2, 1])
    return tec.TPUEstimatorSpec(mode, predictions={"y": tf.matmul(features, weights),
                                                   "norm": tf.norm(weights)})


def width_model_fn(features, labels, mode, params):
    """Its weights take the features' width: a wider receiver makes a wider `w`."""
    if mode != tec.ModeKeys.PREDICT:
        return model_fn(features, labels, mode, params)
    weights = v1.get_variable("w", [features.shape[-1], 1])
    return tec.TPUEstimatorSpec(mode, predictions={"y": tf.matmul(features, weights)})


def dict_features_model_fn(features, labels, mode, params):
    if mode != tec.ModeKeys.PREDICT:
        return model_fn(features, labels, mode, params)
    return tec.TPUEstimatorSpec(mode, predictions={
        "y": tf.matmul(features["x"], v1.get_variable("w", [2, 1]))})


def receiver_of_y():
    y = v1.placeholder(tf.float32, [None, 2])
    return receivers.ServingInputReceiver({"y": y}, {"y": y})


def a_file():
    handle, path = tempfile.mkstemp()
    os.close(handle)
    return path


def evaluate(model_dir, strategy, fn, input_function=input_fn):
    return estimator(model_dir, strategy, fn, eval_batch_size=16).evaluate(input_function,
                                                                           steps=1)


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
    Case("batch size beyond a tensor dimension", lambda d, s: estimator(
        d, s, train_batch_size=2**34), ValueError,
        r"train_batch_size \(17179869184\) is larger than a batch TensorFlow can hold",
        r"smaller batch size"),
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
    # input_fn returning something malformed
    Case("dict of datasets", lambda d, s: train(d, s, input_function=lambda params: {
        "x": features_dataset(params), "y": features_dataset(params)}), TypeError,
        r"input_fn returned a dict holding tf\.data\.Datasets \(at input_fn\(\)\['x'\], "
        r"input_fn\(\)\['y'\]\)", r"tf\.data\.Dataset\.zip\(\(features_dataset, "),
    Case("tuple of datasets", lambda d, s: train(d, s, input_function=lambda params: (
        features_dataset(params), features_dataset(params))), TypeError,
        r"returned a tuple holding tf\.data\.Datasets \(at input_fn\(\)\[0\]",
        r"tf\.data\.Dataset\.zip"),
    Case("list of features and labels", lambda d, s: train(d, s, input_function=lambda params: [
        tf.ones([16, 2]), tf.ones([16, 1])]), TypeError,
        r"input_fn returned a Python list of 2 items; expected a tf\.data\.Dataset",
        r"return a tuple \(features, labels\)"),
    Case("3-tuple dataset elements", lambda d, s: train(d, s, input_function=three_tuples),
         TypeError, r"dataset elements are tuples of 3 items",
         r"extra tensors into the features dict"),
    Case("generator from input_fn", lambda d, s: train(d, s, input_function=generator_input_fn),
         TypeError, r"input_fn returned a Python generator", r"Dataset\.from_generator"),
    Case("non-rectangular lists", lambda d, s: train(d, s, input_function=lambda params: (
        {"x": [[1.0, 2.0], [3.0]]}, [[1.0], [2.0]])), ValueError,
        r"input_fn returned values that cannot be converted to tensors .*non-rectangular.*"
        r"\{'x': \[\[1\.0, 2\.0\], \[3\.0\]\]\}", r"pad the rows to one length"),
    Case("a None feature", lambda d, s: train(d, s, input_function=lambda params: (
        {"x": tf.ones([16, 2]), "mask": None}, tf.ones([16, 1]))), TypeError,
        r"input_fn returned None at input_fn\(\)\[0\]\['mask'\]",
        r"Drop that key from the dict, or give it a tensor value"),
    Case("a None feature in dataset elements", lambda d, s: train(
        d, s, input_function=lambda params: input_fn(params).map(
            lambda x, y: ({"x": x, "mask": None}, y))), TypeError,
        r"input_fn's dataset elements hold None at input_fn\(\)\[0\]\['mask'\]",
        r"Drop that key from the dict"),
    Case("train(None)", lambda d, s: estimator(d, s).train(None, steps=2), TypeError,
         r"input_fn must be a function .*; got NoneType: None", r"Pass the function itself"),
    Case("evaluate(None)", lambda d, s: estimator(d, s, eval_batch_size=16).evaluate(None),
         TypeError, r"input_fn must be a function .*; got NoneType", r"not its result or None"),
    Case("labels of the wrong dtype", lambda d, s: train(
        d, s, classifier_model_fn, input_function=labelled(np.ones([64], np.float32))),
        TypeError, r"model_fn failed on the features and labels from input_fn: .*'labels' has "
        r"DataType float32 not in list of allowed values: int32, int64.*\n  features given: "
        r"float32\[2, 2\]\n  labels given: float32\[2\]", r"dtypes and shapes model_fn expects"),
    Case("labels of the wrong shape", lambda d, s: train(d, s, input_function=labelled(
        np.ones([64], np.float32))), ValueError,
        r"model_fn failed on .*input_fn: Shapes \(2, 1\) and \(2,\) are incompatible\n"
        r".*\n  labels given: float32\[2\]", r"shape \[batch_size, 1\]"),
    Case("a shape error among model_fn's own tensors", lambda d, s: train(
        d, s, own_shapes_model_fn), ValueError,
        r"model_fn failed building its op MatMul_1 \(MatMul\) at \S+test_misuse\.py:\d+ "
        r"\(`predictions = tf\.matmul\(hidden, v1\.get_variable\(\"w_out\", \[3, 1\]\)\)`\): "
        r"Dimensions must be equal, but are 4 and 3 .*\n  the op's inputs \(MatMul, "
        r"MatMul_1/ReadVariableOp\) are tensors model_fn computed, none is a feature or label "
        r"from input_fn as given\n  features given: float32\[2, 2\]\n  labels given: "
        r"float32\[2, 1\]\n",
        # model_fn is named, not input_fn
        r"^(?![\s\S]*input_fn return)[\s\S]*Fix the shapes in model_fn there"),
    Case("a shape error on a feature as input_fn gave it", lambda d, s: train(
        d, s, features_width_model_fn), ValueError,
        r"model_fn failed on the features and labels from input_fn: Dimensions must be equal, "
        r"but are 2 and 3 .*\n  features given: float32\[2, 2\]",
        r"Make input_fn return the dtypes and shapes model_fn expects"),
    # params
    Case("params not a dict", lambda d, s: tec.TPUEstimator(
        model_fn, config=config(d, s), params=[("learning_rate", 0.1)], train_batch_size=16),
        TypeError, r"params must be a dict \(or None\); got list: \[\('learning_rate', 0\.1\)\]",
        r"params=\{'learning_rate': 0\.1\}"),
    # host_call
    Case("host_call keys not the fn's args", lambda d, s: train(d, s, host_call_dict_model_fn),
        TypeError, r"host_call, the keys of the tensors dict \['a', 'c'\] do not match the "
        r"arguments of the function, which takes \['a', 'b'\]: \['c'\] are not arguments "
        r"and \['b'\] are missing", r"name each key after an argument"),
    Case("eval_metrics keys not the fn's args", lambda d, s: estimator(
        d, s, eval_metrics_dict_model_fn, eval_batch_size=16).evaluate(input_fn, steps=1),
        TypeError,
        r"eval_metrics, the keys of the tensors dict \['labels', 'logits'\] do not match the "
        r"arguments of the function, which takes \['labels', 'predictions'\]: \['logits'\] "
        r"are not arguments and \['predictions'\] are missing", r"name each key after"),
    # checkpoints named by the user, damaged checkpoints
    Case("warm_start_from a path that does not exist", lambda d, s: tec.TPUEstimator(
        model_fn, config=config(tempfile.mkdtemp(), s), train_batch_size=16,
        warm_start_from=os.path.join(d, "nowhere", "model.ckpt-7")).train(input_fn, steps=2),
        checkpoints.CheckpointNotFoundError,
        r"No checkpoint at .*/nowhere/model\.ckpt-7: there is no file .*model\.ckpt-7\.index "
        r"and no directory .*\(the directory .*/nowhere does not exist either\)",
        r"Pass an existing model_dir, or a checkpoint prefix such as "
        r"model_dir/model\.ckpt-<step>"),
    Case("evaluate a checkpoint_path that does not exist", lambda d, s: estimator(
        d, s, eval_batch_size=16).evaluate(input_fn, steps=1,
                                           checkpoint_path=os.path.join(d, "model.ckpt-99")),
        checkpoints.CheckpointNotFoundError,
        r"No checkpoint at .*model\.ckpt-99: .*holds the checkpoints model\.ckpt-0, "
        r"model\.ckpt-2", r"Pass an existing model_dir"),
    Case("export with a damaged newest checkpoint", lambda d, s: export(
        damaged_copy(d), s, tensor_receiver),
        checkpoints.CorruptCheckpointError,
        r"Cannot read checkpoint .*model\.ckpt-2: its data file .* is truncated or damaged",
        r"restore .*model\.ckpt-0 instead"),
    Case("get_variable_value with a truncated data file", lambda d, s: estimator(
        damaged_copy(d), s).get_variable_value("w"), checkpoints.CorruptCheckpointError,
        r"Cannot read checkpoint .*model\.ckpt-2: its data file .* is truncated or damaged",
        r"restore .*model\.ckpt-0 instead"),
    Case("garbled state file and no readable checkpoint", lambda d, s: train(
        damaged_copy(d, "garbled state, no index"), s), checkpoints.CorruptCheckpointStateError,
        r"checkpoint state file .*/checkpoint is damaged \(it cannot be parsed",
        r"To train from scratch in this model_dir, delete .*/checkpoint"),
    # export receivers
    Case("receiver fn returning None", lambda d, s: export(d, s, lambda: None), TypeError,
         r"serving_input_receiver_fn \(.*\) returned NoneType: None; expected a "
         r"ServingInputReceiver", r"return tf\.estimator\.export\.ServingInputReceiver"),
    Case("receiver without features", lambda d, s: export(d, s, receiver_without_features),
         ValueError, r"The receiver's features are an empty dict",
         r"ServingInputReceiver\(features=\{'x': x\}"),
    Case("receiver missing a feature key", lambda d, s: estimator(
        d, s, dict_features_model_fn).export_saved_model(tempfile.mkdtemp(), receiver_of_y),
        KeyError, r"model_fn looked up features\['x'\], but the features from "
        r"serving_input_receiver_fn have the keys \['y'\]",
        r"ServingInputReceiver\(features=\{'x': tensor\}"),
    Case("receiver that does not fit the checkpoint", lambda d, s: estimator(
        d, s, width_model_fn).export_saved_model(tempfile.mkdtemp(),
                                                 lambda: tensor_receiver_of_width(7)),
        ValueError,
        r"does not fit checkpoint .*: w: graph \(7, 1\) float32 vs checkpoint \(2, 1\) "
        r"float32", r"Make the receiver's tensors the shapes and dtypes"),
    Case("export_dir_base that is a file", lambda d, s: estimator(
        d, s, servable_model_fn).export_saved_model(a_file(), tensor_receiver), ValueError,
        r"export_dir_base is a file, not a directory", r"Pass a directory path"),
    # bad values from model_fn
    Case("metric name not a string", lambda d, s: evaluate(d, s, metric_model_fn(
        lambda labels, predictions: {1: v1.metrics.mean(predictions)},
        lambda features, labels, predictions: [labels, predictions])), TypeError,
        r"returned the metric name 1 \(int\); metric names must be strings",
        r"Use e\.g\. '1' as the key"),
    Case("a float among the eval_metrics tensors", lambda d, s: evaluate(d, s, metric_model_fn(
        lambda labels, threshold: {"m": v1.metrics.mean(labels)},
        lambda features, labels, predictions: [labels, 0.5])), TypeError,
        r"eval_metrics\[1\]\[1\] is float 0\.5, not a tensor",
        r"functools\.partial\(metric_fn, threshold=0\.5\)"),
    Case("labels None while metric_fn uses them", lambda d, s: evaluate(d, s, metric_model_fn(
        lambda labels, predictions: {"m": v1.metrics.mean_squared_error(labels, predictions)},
        lambda features, labels, predictions: [labels, predictions],
        loss_of=tf.reduce_mean), features_dataset), ValueError,
        r"eval_metrics\[1\]\[0\] is None: the labels are None, as input_fn returned "
        r"features only", r"Return \(features, labels\) from input_fn"),
    Case("int32 loss", lambda d, s: train(d, s, int32_loss_model_fn), TypeError,
         r"model_fn's loss \(.*\) has dtype int32: an optimizer can only differentiate a "
         r"floating-point loss.*the features and labels from input_fn are not the cause",
         r"tf\.cast\(loss, tf\.float32\)"),
    Case("a scalar among TPU predictions", lambda d, s: list(estimator(
        d, s, scalar_prediction_model_fn, predict_batch_size=16).predict(
            lambda params: features_dataset(params, 16).take(1))), ValueError,
        r"key \(norm\) in TPUEstimatorSpec.predictions is a scalar",
        r"tf\.fill\(\[batch_size\], value\)"),
    Case("batch too big for memory", lambda d, s: train(d, s, memory_hungry_model_fn),
         tf.errors.ResourceExhaustedError,
         r"Out of memory in a train step with a batch of 2 examples per replica \(16 in all "
         r"on 8 replica\(s\)\): OOM when allocating",
         r"Lower the batch size \(TPUEstimator's train_batch_size"),
    Case("model_dir that is a file", lambda d, s: estimator(a_file(), s), ValueError,
         r"model_dir .* is a file, not a directory", r"Pass a directory path"),
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


def test_host_call_tensors_of_different_first_dimensions_are_passed_as_tf1_and_logged(
        tmp_path, eight_devices, caplog):
    # Legal in TF1 (each tensor is concatenated across the replicas on its own), so accepted;
    # the log names the dimensions in case a reshape was forgotten.
    seen = []

    def host_fn(loss, features):
        seen.append((loss.shape.as_list(), features.shape.as_list()))
        return []

    def host_call_model_fn(features, labels, mode, params):
        spec = model_fn(features, labels, mode, params)
        return tec.TPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op, host_call=(
            host_fn, [tf.reshape(spec.loss, [1]), features]))

    caplog.set_level("INFO")
    train(str(tmp_path), eight_devices, host_call_model_fn)
    assert seen == [([None], [None, 2])]
    assert ("The host_call tensors have different first dimensions (0: 8, 1: 16, concatenated "
            "across replicas)") in caplog.text


def test_export_and_predict_before_any_training_say_no_checkpoint_was_found(
        tmp_path, eight_devices, caplog):
    def predicting_model_fn(features, labels, mode, params):
        if mode == tec.ModeKeys.PREDICT:
            return tec.TPUEstimatorSpec(mode, predictions={"y": tf.matmul(
                features, v1.get_variable("w", [2, 1]))})
        return model_fn(features, labels, mode, params)

    untrained = estimator(str(tmp_path / "never_trained"), eight_devices,
                          fn=predicting_model_fn, predict_batch_size=16)

    def serving_input_receiver_fn():
        x = v1.placeholder(tf.float32, [None, 2])
        return tec.export.ServingInputReceiver(x, {"x": x})

    with pytest.raises(ValueError, match=r"^Couldn't find trained model at .*never_trained: no "
                                         r"checkpoint .* was found there\. Train first"):
        untrained.export_saved_model(str(tmp_path / "export"), serving_input_receiver_fn)
    caplog.set_level("INFO", logger="tensorflow")
    predictions = list(untrained.predict(features_dataset_once))
    assert len(predictions) == 16
    assert ("running initialization to predict. No checkpoint there: the results come from "
            "untrained initial weights (train first, or pass checkpoint_path)." in caplog.text)


def features_dataset_once(params):
    return tf.data.Dataset.from_tensor_slices(np.ones([16, 2], np.float32)).batch(
        params["batch_size"])
