"""Tests for spec.py: ModeKeys, EstimatorSpec, TPUEstimatorSpec, metric-name checks.

Specs are built where model_fns build them: inside a `tf.function` trace, from symbolic
tensors. `in_trace` runs a builder there and hands back what it returned.
"""
import re

import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat.api.export_outputs import (ClassificationOutput, PredictOutput,
                                                RegressionOutput)
from tpu_estimator_compat.api.spec import (EstimatorSpec, ModeKeys, TPUEstimatorSpec,
                                       validate_metric_names)

TRAIN, EVAL, PREDICT = ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT


def in_trace(build):
    """Calls `build()` while tracing a tf.function and returns its result."""
    out = {}

    @tf.function(autograph=False)
    def traced():
        out["value"] = build()
        return tf.constant(0)

    traced()
    return out["value"]


def raises(exc, message):
    """pytest.raises for an exact message prefix (fix hints may follow it)."""
    return pytest.raises(exc, match="^" + re.escape(message))


def scalar(value=1.0):
    return tf.constant(value)


class CountingHook(tf.compat.v1.train.SessionRunHook):
    pass


# ------------------------------------------------------------------------- ModeKeys

def test_mode_keys():
    assert (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT) == ("train", "eval", "infer")


# --------------------------------------------------------------------- field layout

def test_estimator_spec_fields():
    assert EstimatorSpec._fields == (
        "mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
        "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
        "prediction_hooks")


def test_tpu_estimator_spec_fields():
    assert TPUEstimatorSpec._fields == (
        "mode", "predictions", "loss", "train_op", "eval_metrics", "export_outputs",
        "scaffold_fn", "host_call", "training_hooks", "evaluation_hooks", "prediction_hooks")


def test_estimator_spec_defaults_in_trace():
    def build():
        loss = scalar()
        return loss, EstimatorSpec(EVAL, loss=loss)

    loss, spec = in_trace(build)
    assert tf.is_symbolic_tensor(loss)
    assert spec.mode == EVAL and spec.loss is loss
    assert spec.predictions == {} and spec.eval_metric_ops == {}
    assert spec.train_op is None and spec.export_outputs is None
    assert spec.training_chief_hooks == spec.training_hooks == () == spec.evaluation_hooks
    assert spec.prediction_hooks == ()
    assert isinstance(spec.scaffold, tf.compat.v1.train.Scaffold)


def test_tpu_estimator_spec_defaults_in_trace():
    spec = in_trace(lambda: TPUEstimatorSpec(EVAL, loss=scalar()))
    assert spec.predictions == {}
    assert (spec.eval_metrics, spec.export_outputs, spec.scaffold_fn, spec.host_call) == (
        None, None, None, None)
    assert spec.training_hooks == spec.evaluation_hooks == spec.prediction_hooks == ()


@pytest.mark.parametrize("spec_class", [EstimatorSpec, TPUEstimatorSpec])
def test_train_spec_with_v1_train_op_in_trace(spec_class):
    var = tf.Variable(2.0)

    def build():
        loss = tf.reduce_sum(tf.square(var)) * tf.ones([1])
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss,
                                                                             var_list=[var])
        return spec_class(TRAIN, loss=loss, train_op=train_op)

    spec = in_trace(build)
    assert isinstance(spec.train_op, tf.Operation)
    assert spec.loss.shape == tf.TensorShape([])  # The [1] loss became a scalar.
    assert spec.loss.graph is spec.train_op.graph


@pytest.mark.parametrize("spec_class", [EstimatorSpec, TPUEstimatorSpec])
def test_train_op_may_be_a_tensor(spec_class):
    spec = in_trace(lambda: spec_class(TRAIN, loss=scalar(), train_op=tf.constant(3)))
    assert tf.is_tensor(spec.train_op)


def test_loss_reshape_keeps_value_eagerly():
    spec = EstimatorSpec(EVAL, loss=tf.constant([2.5]))
    assert spec.loss.shape == () and float(spec.loss) == 2.5


@pytest.mark.parametrize("shape", [[], [1], [1, 1], [None], None])
def test_loss_shapes_accepted(shape):
    spec = in_trace(lambda: EstimatorSpec(
        EVAL, loss=tf.compat.v1.placeholder_with_default(
            tf.zeros([1] * len(shape)) if shape else 0.0, shape=shape)))
    if shape is None:  # Unknown rank stays as given.
        assert spec.loss.shape.rank is None
    else:
        assert spec.loss.shape == tf.TensorShape([])


def test_spec_in_replica_context(eight_devices):
    @tf.function(autograph=False)
    def step():
        def replica_fn():
            ctx = tf.distribute.get_replica_context()
            loss = tf.cast(tf.reshape(ctx.replica_id_in_sync_group, [1]), tf.float32)
            return TPUEstimatorSpec(EVAL, loss=loss).loss
        return eight_devices.run(replica_fn)

    losses = eight_devices.experimental_local_results(step())
    assert [float(x) for x in losses] == list(range(8))
    assert all(x.shape == () for x in losses)


# ----------------------------------------------------------------- base validation

def _hook_fields(spec_class):
    names = ["training_hooks", "evaluation_hooks", "prediction_hooks"]
    return names + (["training_chief_hooks"] if spec_class is EstimatorSpec else [])


BASE_ERRORS = [
    (dict(mode=TRAIN, loss="L"), ValueError, "Missing train_op."),
    (dict(mode=TRAIN, train_op="T"), ValueError, "Missing loss."),
    (dict(mode=EVAL), ValueError, "Missing loss."),
    (dict(mode=PREDICT), ValueError, "Missing predictions."),
    (dict(mode=EVAL, loss="L2"), ValueError, "Loss must be scalar, given: Tensor("),
    (dict(mode=EVAL, loss=1.0), TypeError, "loss must be Tensor, given: 1.0"),
    (dict(mode=TRAIN, loss="L", train_op="not an op"), TypeError,
     "train_op must be Operation or Tensor, given: not an op"),
    (dict(mode=PREDICT, predictions=[1, 2]), TypeError,
     "predictions must be Tensor, given: [1, 2]"),
    (dict(mode=PREDICT, predictions={"probs": np.ones(2)}), TypeError,
     "predictions[probs] must be Tensor, given: [1. 1.]"),
    (dict(mode=PREDICT, predictions="P", export_outputs=["P"]), TypeError,
     "`export_outputs` must be dict, received:"),
    (dict(mode=PREDICT, predictions="P", export_outputs={"a": "P"}), TypeError,
     "Values in `export_outputs` must be ExportOutput objects"),
    (dict(mode="training", loss="L", train_op="T"), ValueError,
     "mode must be one of ModeKeys.TRAIN ('train'), ModeKeys.EVAL ('eval') or "
     "ModeKeys.PREDICT ('infer'); got 'training'."),
]


def _materialize(kwargs):
    """Replaces the placeholders 'L', 'L2', 'T', 'P' by symbolic tensors / ops."""
    made = {"L": lambda: scalar(), "L2": lambda: tf.ones([2]), "T": lambda: tf.no_op(),
            "P": lambda: tf.ones([4, 3])}
    return {k: made[v]() if isinstance(v, str) and v in made else v
            for k, v in kwargs.items()}


@pytest.mark.parametrize("spec_class", [EstimatorSpec, TPUEstimatorSpec])
@pytest.mark.parametrize("kwargs, exc, message", BASE_ERRORS)
def test_base_validation_in_trace(spec_class, kwargs, exc, message):
    with raises(exc, message):
        in_trace(lambda: spec_class(**_materialize(kwargs)))


@pytest.mark.parametrize("spec_class", [EstimatorSpec, TPUEstimatorSpec])
def test_hooks_must_be_session_run_hooks(spec_class):
    for field in _hook_fields(spec_class):
        with raises(TypeError, "All hooks must be SessionRunHook instances, given: not a hook"):
            spec_class(EVAL, loss=scalar(), **{field: [CountingHook(), "not a hook"]})


@pytest.mark.parametrize("spec_class", [EstimatorSpec, TPUEstimatorSpec])
def test_hooks_are_kept_as_tuples(spec_class):
    hooks = [CountingHook(), CountingHook()]
    spec = spec_class(EVAL, loss=scalar(), **{f: hooks for f in _hook_fields(spec_class)})
    for field in _hook_fields(spec_class):
        assert getattr(spec, field) == tuple(hooks)


@pytest.mark.parametrize("eval_metric_ops, message", [
    ([("acc", 1)], "eval_metric_ops must be a dict, given: [('acc', 1)]"),
    ({"acc": "V"}, "Values of eval_metric_ops must be (metric_value, update_op) tuples, "
                   "given: V for key: acc"),
    ({"acc": ["V", "U"]}, "Values of eval_metric_ops must be (metric_value, update_op) tuples"),
    ({"acc": ("V", "U", "X")}, "Values of eval_metric_ops must be (metric_value, update_op)"),
    ({"acc": (0.5, "U")}, "eval_metric_ops[acc] must be Operation or Tensor, given: 0.5"),
    ({"acc": ("V", None)}, "eval_metric_ops[acc] must be Operation or Tensor, given: None"),
])
def test_eval_metric_ops_validation(eval_metric_ops, message):
    def build():
        made = {"V": tf.constant(0.5), "U": tf.no_op()}
        ops = eval_metric_ops
        if isinstance(ops, dict):
            ops = {k: (tuple(made.get(x, x) for x in v) if isinstance(v, tuple) else
                       [made.get(x, x) for x in v] if isinstance(v, list) else v)
                   for k, v in ops.items()}
        return EstimatorSpec(EVAL, loss=scalar(), eval_metric_ops=ops)

    with raises(TypeError, message):
        in_trace(build)


def test_eval_metric_ops_accepts_nested_values_and_copies():
    def build():
        ops = {"acc": (tf.constant(0.5), tf.no_op()),
               "pair": ((tf.constant(1.0), tf.constant(2.0)), tf.constant(0))}
        return ops, EstimatorSpec(EVAL, loss=scalar(), eval_metric_ops=ops)

    ops, spec = in_trace(build)
    assert spec.eval_metric_ops == ops and spec.eval_metric_ops is not ops


def test_scaffold_validation():
    scaffold = tf.compat.v1.train.Scaffold()
    assert EstimatorSpec(EVAL, loss=scalar(), scaffold=scaffold).scaffold is scaffold
    with raises(TypeError, "scaffold must be tf.train.Scaffold. Given: a scaffold"):
        EstimatorSpec(EVAL, loss=scalar(), scaffold="a scaffold")


# -------------------------------------------------------------------- export outputs

@pytest.mark.parametrize("spec_class", [EstimatorSpec, TPUEstimatorSpec])
def test_predict_default_export_output(spec_class):
    def build():
        predictions = {"probs": tf.ones([4, 3]), "ids": tf.zeros([4], tf.int64)}
        return predictions, spec_class(PREDICT, predictions=predictions)

    predictions, spec = in_trace(build)
    assert spec.predictions == predictions
    assert list(spec.export_outputs) == ["serving_default"]
    output = spec.export_outputs["serving_default"]
    assert isinstance(output, PredictOutput) and output.outputs == predictions


def test_predict_single_tensor_prediction():
    spec = in_trace(lambda: EstimatorSpec(PREDICT, predictions=tf.ones([2, 1])))
    assert list(spec.export_outputs["serving_default"].outputs) == ["output"]


def test_single_named_export_output_is_also_serving_default():
    def build():
        given = {"regress": RegressionOutput(tf.ones([4]))}
        return given, EstimatorSpec(PREDICT, predictions=tf.ones([4]), export_outputs=given)

    given, spec = in_trace(build)
    assert spec.export_outputs["serving_default"] is spec.export_outputs["regress"]
    assert list(given) == ["regress"]  # The user's dict is not modified.


def test_several_export_outputs_need_a_default():
    def build(with_default):
        outputs = {"regress": RegressionOutput(tf.ones([4])),
                   "classify": ClassificationOutput(scores=tf.ones([4, 2]))}
        if with_default:
            outputs["serving_default"] = PredictOutput(tf.ones([4]))
        return EstimatorSpec(PREDICT, predictions=tf.ones([4]), export_outputs=outputs)

    assert len(in_trace(lambda: build(True)).export_outputs) == 3
    with raises(ValueError, "Multiple `export_outputs` were provided, but none of them are "
                            "specified as the default."):
        in_trace(lambda: build(False))


def test_export_outputs_not_checked_outside_predict():
    spec = EstimatorSpec(EVAL, loss=scalar(), export_outputs={"x": "unchecked"})
    assert spec.export_outputs == {"x": "unchecked"}


# ------------------------------------------------------------------------- _replace

def test_replace_revalidates_and_keeps_mode():
    spec = EstimatorSpec(EVAL, loss=tf.constant([1.0]))
    new = spec._replace(loss=tf.constant([3.0]))
    assert isinstance(new, EstimatorSpec) and float(new.loss) == 3.0 and new.loss.shape == ()
    with raises(ValueError, "mode of EstimatorSpec cannot be changed."):
        spec._replace(mode=TRAIN)
    with raises(ValueError, "Missing loss."):
        spec._replace(loss=None)
    tpu_spec = TPUEstimatorSpec(EVAL, loss=scalar())
    with raises(ValueError, "host_call should have two elements."):
        tpu_spec._replace(host_call=(print,))


# ------------------------------------------------------- eval_metrics and host_call

def metric_fn_2(labels, logits):
    return {"n": (labels, logits)}


HOST_CALL_ERRORS = [
    ({print: 1}, ValueError, "{name} should be tuple or list"),
    ((metric_fn_2,), ValueError, "{name} should have two elements."),
    ((metric_fn_2, [], 3), ValueError, "{name} should have two elements."),
    (("metric_fn", []), TypeError, "{name}[0] should be callable."),
    ((metric_fn_2, "labels"), ValueError, "{name}[1] should be tuple or list, or dict."),
    ((metric_fn_2, ["A"]), RuntimeError,
     "In TPUEstimatorSpec.{name}, length of tensors 1 does not match method args of the "
     "function, which takes 2."),
    ((lambda a, b=None, c=None: {}, ["A", "A"]), RuntimeError,
     "In TPUEstimatorSpec.{name}, length of tensors 2 does not match method args of the "
     "function, which takes 3."),
]


@pytest.mark.parametrize("name", ["eval_metrics", "host_call"])
@pytest.mark.parametrize("value, exc, message", HOST_CALL_ERRORS)
def test_host_call_validation(name, value, exc, message):
    def build():
        call = tuple(
            [x if x != "A" else tf.ones([2]) for x in v] if isinstance(v, list) else v
            for v in value) if isinstance(value, tuple) else value
        return TPUEstimatorSpec(EVAL, loss=scalar(), **{name: call})

    with raises(exc, message.format(name=name)):
        in_trace(build)


class MetricObject:
    def __call__(self, labels, logits):
        return {}

    def bound(self, labels, logits):
        return {}


@pytest.mark.parametrize("fn, tensors", [
    (metric_fn_2, ["A", "A"]),
    (metric_fn_2, ("A", "A")),
    (lambda *tensors: {}, ["A", "A", "A"]),
    (lambda first, *rest: {}, ["A"]),
    (MetricObject(), ["A", "A"]),
    (MetricObject().bound, ["A", "A"]),
    (metric_fn_2, {"labels": "A", "logits": "A"}),
    (metric_fn_2, {"anything": "A"}),  # Dicts are only checked when called.
])
def test_host_call_accepted(fn, tensors):
    def build():
        def make(v):
            return tf.ones([2]) if v == "A" else v
        given = (type(tensors)(make(v) for v in tensors) if not isinstance(tensors, dict)
                 else {k: make(v) for k, v in tensors.items()})
        return TPUEstimatorSpec(EVAL, loss=scalar(), eval_metrics=(fn, given),
                                host_call=[fn, given])

    spec = in_trace(build)
    assert spec.eval_metrics[0] is fn and spec.host_call[0] is fn


def test_scaffold_fn_must_be_callable():
    with raises(TypeError, "scaffold_fn must be a function that takes no arguments"):
        TPUEstimatorSpec(EVAL, loss=scalar(), scaffold_fn=tf.compat.v1.train.Scaffold())


# --------------------------------------------------------------- as_estimator_spec

def _labels_logits():
    return tf.constant([1.0, 0.0, 1.0]), tf.constant([0.9, 0.2, 0.4])


def _metric_fn(labels, logits):
    error = tf.reduce_sum(tf.abs(labels - logits))
    return {"abs_error": (error, tf.identity(error))}


@pytest.mark.parametrize("as_dict", [False, True])
def test_as_estimator_spec_calls_metric_fn(as_dict):
    hooks = (CountingHook(),)

    def build():
        labels, logits = _labels_logits()
        tensors = {"labels": labels, "logits": logits} if as_dict else [labels, logits]
        spec = TPUEstimatorSpec(EVAL, loss=tf.constant([0.25]),
                                eval_metrics=(_metric_fn, tensors), evaluation_hooks=hooks)
        converted = spec.as_estimator_spec()
        return spec, converted, converted.eval_metric_ops["abs_error"][0] * 1.0

    spec, converted, _ = in_trace(build)
    assert isinstance(converted, EstimatorSpec)
    assert converted.mode == EVAL and converted.loss is spec.loss
    assert list(converted.eval_metric_ops) == ["abs_error"]
    assert converted.evaluation_hooks == hooks
    assert converted.training_hooks == () == converted.prediction_hooks


def test_as_estimator_spec_metric_values_eagerly():
    labels, logits = _labels_logits()
    spec = TPUEstimatorSpec(EVAL, loss=scalar(), eval_metrics=(_metric_fn, [labels, logits]))
    value, _ = spec.as_estimator_spec().eval_metric_ops["abs_error"]
    assert float(value) == pytest.approx(0.1 + 0.2 + 0.6)


def test_as_estimator_spec_with_v1_metrics_in_a_graph():
    graph = tf.Graph()
    with graph.as_default():
        labels = tf.compat.v1.placeholder(tf.float32, [None])
        predictions = tf.compat.v1.placeholder(tf.float32, [None])

        def metric_fn(labels, predictions):
            return {"mean_error": tf.compat.v1.metrics.mean(tf.abs(labels - predictions))}

        spec = TPUEstimatorSpec(EVAL, loss=tf.reduce_mean(labels),
                                eval_metrics=(metric_fn, [labels, predictions]))
        value, update_op = spec.as_estimator_spec().eval_metric_ops["mean_error"]
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            sess.run(update_op, {labels: [1.0, 2.0], predictions: [0.0, 2.0]})
            sess.run(update_op, {labels: [3.0], predictions: [1.0]})
            assert sess.run(value) == pytest.approx(1.0)  # (1 + 0 + 2) / 3


def test_as_estimator_spec_dict_mismatch_raises_type_error():
    labels, logits = _labels_logits()
    spec = TPUEstimatorSpec(EVAL, loss=scalar(),
                            eval_metrics=(_metric_fn, {"labels": labels, "wrong": logits}))
    with pytest.raises(TypeError, match="wrong"):
        spec.as_estimator_spec()


def test_as_estimator_spec_scaffold_and_host_call():
    scaffold = tf.compat.v1.train.Scaffold()
    calls = []

    def scaffold_fn():
        calls.append("scaffold_fn")
        return scaffold

    def host_fn(step):
        calls.append("host_fn")
        return []

    hooks = (CountingHook(),)
    spec = TPUEstimatorSpec(TRAIN, loss=scalar(), train_op=tf.constant(0),
                            scaffold_fn=scaffold_fn, host_call=(host_fn, [tf.ones([1])]),
                            training_hooks=hooks)
    converted = spec.as_estimator_spec()
    assert converted.scaffold is scaffold
    assert calls == ["scaffold_fn"]  # host_call is the engine's to run.
    assert converted.training_hooks == hooks  # No hook was added for host_call.
    assert converted.eval_metric_ops == {}
    assert spec.host_call[0] is host_fn


def test_as_estimator_spec_without_scaffold_fn_uses_default_scaffold():
    converted = TPUEstimatorSpec(EVAL, loss=scalar()).as_estimator_spec()
    assert isinstance(converted.scaffold, tf.compat.v1.train.Scaffold)


def test_as_estimator_spec_predict_keeps_export_outputs():
    def build():
        spec = TPUEstimatorSpec(PREDICT, predictions={"y": tf.ones([2])})
        return spec, spec.as_estimator_spec()

    spec, converted = in_trace(build)
    assert converted.export_outputs == spec.export_outputs
    assert converted.predictions == spec.predictions


# ----------------------------------------------------------- validate_metric_names

def test_validate_metric_names():
    validate_metric_names({"accuracy": None, "auc": None})
    validate_metric_names([])
    with raises(ValueError, 'Metric with name "loss" is not allowed, because Estimator '
                            "already defines a default metric with the same name."):
        validate_metric_names({"accuracy": None, "loss": None})
    with raises(ValueError, "Metric with name `global_step` is not allowed, because "
                            "Estimator already defines a default metric with the same name."):
        validate_metric_names({"global_step": None})
