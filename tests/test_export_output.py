"""Export outputs, their SignatureDefs and the signature-map rules of the original export
(`api/export_outputs.py`, `export/signatures.py`)."""
import pytest
import tensorflow as tf

from tpu_estimator_compat.api import export_outputs as eo
from tpu_estimator_compat.export import signatures as signature_map

_sm = tf.compat.v1.saved_model


@pytest.fixture
def graph():
    with tf.Graph().as_default() as g:
        yield g


def _placeholders():
    examples = tf.compat.v1.placeholder(tf.string, [None], name="examples")
    parsed = tf.compat.v1.io.parse_example(
        examples, {"x": tf.io.FixedLenFeature([2], tf.float32)})["x"]
    raw = tf.compat.v1.placeholder(tf.float32, [None, 2], name="raw")
    return examples, parsed, raw


def test_classification_output_validation(graph):
    scores = tf.constant([[0.5]])
    classes = tf.constant([["a"]])
    with pytest.raises(ValueError) as e:
        eo.ClassificationOutput(scores=classes)
    assert str(e.value) == f"Classification scores must be a float32 Tensor; got {classes}"
    with pytest.raises(ValueError) as e:
        eo.ClassificationOutput(classes=scores)
    assert str(e.value) == f"Classification classes must be a string Tensor; got {scores}"
    with pytest.raises(ValueError, match=r"^At least one of scores and classes must be set\.$"):
        eo.ClassificationOutput()
    only_scores = eo.ClassificationOutput(scores=scores)
    assert only_scores.scores is scores and only_scores.classes is None


def test_classification_signature(graph):
    examples, parsed, _ = _placeholders()
    scores = tf.nn.softmax(tf.concat([parsed, parsed], 1))
    classes = tf.constant([["a", "b", "c", "d"]])
    sig = eo.ClassificationOutput(scores, classes).as_signature_def({"examples": examples})
    assert sig.method_name == _sm.CLASSIFY_METHOD_NAME
    assert dict(sig.inputs)["inputs"].name == examples.name
    assert dict(sig.outputs)["scores"].name == scores.name
    assert dict(sig.outputs)["classes"].name == classes.name
    for bad in ({"a": examples, "b": examples}, {"x": parsed}):
        with pytest.raises(ValueError) as e:
            eo.ClassificationOutput(scores).as_signature_def(bad)
        assert str(e.value) == f"Classification input must be a single string Tensor; got {bad}"


def test_regression_output(graph):
    examples, parsed, raw = _placeholders()
    ints = tf.constant([1])
    with pytest.raises(ValueError) as e:
        eo.RegressionOutput(ints)
    assert str(e.value) == f"Regression output value must be a float32 Tensor; got {ints}"
    value = tf.reduce_sum(parsed, 1)
    sig = eo.RegressionOutput(value).as_signature_def({"examples": examples})
    assert sig.method_name == _sm.REGRESS_METHOD_NAME
    assert dict(sig.inputs)["inputs"].name == examples.name
    assert dict(sig.outputs)["outputs"].name == value.name
    with pytest.raises(ValueError) as e:
        eo.RegressionOutput(value).as_signature_def({"raw": raw})
    assert str(e.value) == ("Regression input must be a single string Tensor; "
                            f"got {{'raw': {raw!r}}}")


def test_predict_output(graph):
    _, _, raw = _placeholders()
    y = tf.reduce_sum(raw, 1)
    assert eo.PredictOutput(y).outputs == {"output": y}
    assert eo.PredictOutput({("head", "y"): y}).outputs == {"head/y": y}
    with pytest.raises(ValueError, match=r"^Prediction output key must be a string; got 1\.$"):
        eo.PredictOutput({1: y})
    with pytest.raises(ValueError, match=r"^Prediction output value must be a Tensor; got 3\.$"):
        eo.PredictOutput({"y": 3})
    sig = eo.PredictOutput({"y": y}).as_signature_def({"raw": raw})
    assert sig.method_name == _sm.PREDICT_METHOD_NAME
    assert dict(sig.inputs)["raw"].name == raw.name
    assert dict(sig.outputs)["y"].name == y.name


def test_get_export_outputs_defaults_and_serving_default_rules(graph):
    y = tf.constant([1.0])
    default = eo.get_export_outputs(None, {"y": y})
    assert list(default) == ["serving_default"]
    assert default["serving_default"].outputs == {"y": y}
    head = eo.RegressionOutput(y)
    single = eo.get_export_outputs({"head": head}, None)
    assert single == {"head": head, "serving_default": head}
    both = {"serving_default": eo.PredictOutput(y), "head": head}
    assert eo.get_export_outputs(dict(both), None) == both
    with pytest.raises(ValueError) as e:
        eo.get_export_outputs({"a": head, "b": eo.PredictOutput(y)}, None)
    assert str(e.value) == (
        "Multiple `export_outputs` were provided, but none of them are specified as the "
        "default. Use`tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY` to specify a "
        "default.")
    with pytest.raises(TypeError, match=r"^`export_outputs` must be dict, received: \[\]\.$"):
        eo.get_export_outputs([], None)
    with pytest.raises(TypeError, match="^Values in `export_outputs` must be ExportOutput"):
        eo.get_export_outputs({"a": y}, None)


def test_signature_map_with_alternatives_and_dropped_signatures(graph):
    examples, parsed, raw = _placeholders()
    scores = tf.nn.softmax(parsed)
    outputs = eo.get_export_outputs({
        "serving_default": eo.PredictOutput({"scores": scores}),
        "classify": eo.ClassificationOutput(scores=scores),
        "regress": eo.RegressionOutput(tf.reduce_sum(parsed, 1)),
    }, None)
    signatures = signature_map.build_all_signature_defs(
        {"examples": examples}, outputs, {"raw": {"x": parsed}, "raw2": raw})
    # Classify/Regress need a single string input: only the tf.Example receiver has one.
    # `raw2` feeds a tensor the outputs do not depend on, so nothing is servable from it.
    assert sorted(signatures) == ["classify", "raw:serving_default", "regress",
                                  "serving_default"]
    assert signatures["classify"].method_name == _sm.CLASSIFY_METHOD_NAME
    assert dict(signatures["raw:serving_default"].inputs)["x"].name == parsed.name
    single = signature_map.build_all_signature_defs(
        raw, {"p": eo.PredictOutput(tf.identity(raw))})
    assert list(dict(single["p"].inputs)) == ["input"]
    with pytest.raises(ValueError, match="^`export_outputs` must be a dict. Received None"):
        signature_map.build_all_signature_defs(raw, None)


def test_unservable_output_is_dropped(graph):
    fed = tf.compat.v1.placeholder(tf.float32, [None], name="fed")
    unfed = tf.compat.v1.placeholder(tf.float32, [None], name="unfed")
    outputs = {"serving_default": eo.PredictOutput({"sum": fed + unfed}),
               "ok": eo.PredictOutput({"double": 2.0 * fed})}
    assert sorted(signature_map.build_all_signature_defs({"fed": fed}, outputs)) == ["ok"]


def test_eval_and_train_outputs(graph):
    x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
    loss = tf.reduce_mean(x)
    mean, update = tf.compat.v1.metrics.mean(x)
    eval_output = signature_map.export_outputs_for_mode(
        "eval", loss=loss, predictions={"p": x}, metrics={"m": (mean, update.op)})
    assert list(eval_output) == ["eval"]
    sig = eval_output["eval"].as_signature_def({"x": x})
    assert sig.method_name == "tensorflow/supervised/eval"
    assert sorted(sig.outputs) == ["loss", "metrics/m/update_op", "metrics/m/value",
                                   "predictions/p"]
    # An update Operation is exported as an empty tensor that depends on it.
    assert sig.outputs["metrics/m/update_op"].name.startswith("metric_op_wrapper")
    train = signature_map.export_outputs_for_mode(
        "train", loss={"loss": loss, "aux": loss})["train"]
    assert sorted(train.as_signature_def({"x": x}).outputs) == ["loss", "loss/aux"]
    assert train.as_signature_def({"x": x}).method_name == "tensorflow/supervised/training"
    # Eval/train signatures are not servable: they survive only with serving_only=False.
    assert signature_map.build_all_signature_defs({"x": x}, eval_output) == {}
    assert list(signature_map.build_all_signature_defs(
        {"x": x}, eval_output, serving_only=False)) == ["eval"]
    with pytest.raises(ValueError, match="^Export output type not found for `mode`: x"):
        signature_map.export_outputs_for_mode("x")
