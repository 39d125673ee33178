"""Tests for tpu_estimator_compat.state.warm_start, checked against TF1's own graph-mode functions."""
import collections
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.state.warm_start import WarmStartSettings, init_from_checkpoint, warm_start

# name: (shape, trainable); the model that was trained and checkpointed.
MODEL = {
    "dense/kernel": ([2, 3], True),
    "dense/bias": ([3], True),
    "dense/kernel/Adam": ([2, 3], False),
    "batch_normalization/moving_mean": ([3], False),
    "global_step": ([], False),
}


def dtype_of(name):
    return tf.int64 if name.endswith("global_step") else tf.float32


def checkpoint_values(specs):
    """Distinct, recognisable values: the i-th variable holds 10*(i+1) + arange."""
    return {name: (10.0 * (i + 1) + np.arange(np.prod(shape, dtype=int))).reshape(shape)
            .astype(np.int64 if name == "global_step" else np.float32)
            for i, (name, (shape, _)) in enumerate(sorted(specs.items()))}


def write_checkpoint(model_dir, specs=MODEL, step=100):
    values = checkpoint_values(specs)
    return checkpoints.CheckpointSaver(model_dir).save(
        {name: tf.Variable(value) for name, value in values.items()}, step), values


def zeros_model(specs=MODEL, strategy=None):
    """`(named_variables, trainable_names)` with every variable zero."""
    scope = strategy.scope() if strategy else tf.init_scope()
    with scope:
        variables = {name: tf.Variable(tf.zeros(shape, dtype_of(name)))
                     for name, (shape, _) in specs.items()}
    return variables, [name for name, (_, trainable) in specs.items() if trainable]


def changed(variables):
    """Names of the variables that are no longer all zero."""
    return sorted(name for name, v in variables.items() if np.any(v.numpy() != 0))


def run_tf1(specs, call):
    """Runs a real TF1 function in a graph over `get_variable` variables of `specs`.

    Returns the names the initializers changed, or raises what TF1 raised.
    """
    with tf.Graph().as_default():
        variables = {}
        for name, (shape, trainable) in specs.items():
            variables[name] = tf.compat.v1.get_variable(
                name, shape, dtype_of(name), initializer=tf.compat.v1.zeros_initializer(),
                trainable=trainable)
        call(variables)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            values = sess.run(variables)
    return sorted(name for name, value in values.items() if np.any(value != 0))


def test_warm_start_settings_fields_and_defaults():
    settings = WarmStartSettings("/ckpt")
    assert settings == ("/ckpt", ".*", {}, {})
    assert settings._fields == ("ckpt_to_initialize_from", "vars_to_warm_start",
                                "var_name_to_vocab_info", "var_name_to_prev_var_name")
    assert WarmStartSettings("/ckpt", vars_to_warm_start=None).vars_to_warm_start is None
    with pytest.raises(ValueError,
                       match="^`ckpt_to_initialize_from` MUST be set in WarmStartSettings$"):
        WarmStartSettings("")
    with pytest.raises(NotImplementedError,
                       match=r"var_name_to_vocab_info \(vocabulary remapping of \['emb'\]\) is "
                             "not supported by tpu_estimator_compat. Remap the embedding rows"):
        WarmStartSettings("/ckpt", var_name_to_vocab_info={"emb": object()})


def saved_model_dir(tmp_path, values):
    """A directory laid out like a SavedModel: variables/variables.{index,data} by TF1 name."""
    export_dir = tmp_path / "export" / "1700000000"
    (export_dir / "variables").mkdir(parents=True)
    saver = tf.compat.v1.train.Saver(
        var_list={name: tf.Variable(value) for name, value in values.items()})
    saver.save(None, str(export_dir / "variables" / "variables"), write_state=False)
    return str(export_dir)


@pytest.mark.parametrize("form", ["checkpoint_file", "model_dir", "saved_model_dir", "bytes"])
def test_string_path_warm_starts_trainable_variables_only(tmp_path, form):
    path, values = write_checkpoint(str(tmp_path / "run"))
    source = {"checkpoint_file": lambda: path, "model_dir": lambda: str(tmp_path / "run"),
              "saved_model_dir": lambda: saved_model_dir(tmp_path, values),
              "bytes": path.encode}[form]()
    variables, trainable = zeros_model()

    names = warm_start(variables, trainable, source)

    assert names == ["dense/kernel", "dense/bias"]
    assert changed(variables) == ["dense/bias", "dense/kernel"]
    np.testing.assert_array_equal(variables["dense/kernel"].numpy(), values["dense/kernel"])
    np.testing.assert_array_equal(variables["dense/bias"].numpy(), values["dense/bias"])


@pytest.mark.parametrize("vars_to_warm_start, expected", [
    (".*", ["dense/bias", "dense/kernel"]),
    (".*kernel", ["dense/kernel"]),  # a string regex covers TRAINABLE variables only
    ([".*kernel"], ["dense/kernel", "dense/kernel/Adam"]),  # a list covers ALL variables
    (["dense/bias", "global_step"], ["dense/bias", "global_step"]),
    (["dense/kernel"], ["dense/kernel", "dense/kernel/Adam"]),  # names are prefix regexes
    (["dense/kernel$"], []),  # matched against 'dense/kernel:0', as TF1 did
    (None, []),
])
def test_vars_to_warm_start_selects_like_tf1(tmp_path, vars_to_warm_start, expected):
    path, _ = write_checkpoint(str(tmp_path))
    variables, trainable = zeros_model()

    names = warm_start(variables, trainable, WarmStartSettings(path, vars_to_warm_start))

    assert sorted(names) == changed(variables) == expected
    tf1_changed = run_tf1(MODEL, lambda _: tf.compat.v1.train.warm_start(
        path, vars_to_warm_start=vars_to_warm_start))
    assert tf1_changed == expected


def test_vars_to_warm_start_accepts_variables(tmp_path):
    path, _ = write_checkpoint(str(tmp_path))
    variables, trainable = zeros_model()

    names = warm_start(variables, trainable, WarmStartSettings(
        path, [variables["dense/bias"], variables["global_step"]]))

    assert names == ["dense/bias", "global_step"] == changed(variables)


def test_var_name_to_prev_var_name_renames(tmp_path):
    path, values = write_checkpoint(str(tmp_path))
    specs = {"head/kernel": ([2, 3], True), "dense/bias": ([3], True)}
    variables, trainable = zeros_model(specs)

    names = warm_start(variables, trainable, WarmStartSettings(
        path, var_name_to_prev_var_name={"head/kernel": "dense/kernel"}))

    assert names == ["head/kernel", "dense/bias"]
    np.testing.assert_array_equal(variables["head/kernel"].numpy(), values["dense/kernel"])


def test_unused_prev_var_name_is_an_error(tmp_path):
    path, _ = write_checkpoint(str(tmp_path))
    variables, trainable = zeros_model()

    with pytest.raises(ValueError) as error:
        warm_start(variables, trainable, WarmStartSettings(
            path, var_name_to_prev_var_name={"dense/kernal": "dense/kernel"}))

    assert str(error.value) == (
        "You provided the following variables in var_name_to_prev_var_name that were not used: "
        "['dense/kernal'].  Perhaps you misspelled them?  Here is the list of viable variable "
        "names: ['dense/kernel', 'dense/bias']")
    assert changed(variables) == []


def test_selected_variable_missing_from_checkpoint_is_an_error(tmp_path):
    path, _ = write_checkpoint(str(tmp_path), specs={"dense/kernel": ([2, 3], True)})
    variables, trainable = zeros_model()
    reader_map = tf.train.load_checkpoint(path).get_variable_to_shape_map()

    with pytest.raises(ValueError) as error:
        warm_start(variables, trainable, path)

    assert str(error.value) == f"Tensor dense/bias is not found in {path} checkpoint {reader_map}"
    assert changed(variables) == []


def test_shape_mismatch_is_an_error_and_nothing_is_assigned(tmp_path):
    path, _ = write_checkpoint(str(tmp_path))
    specs = {"dense/bias": ([3], True), "dense/kernel": ([3, 3], True)}
    variables, trainable = zeros_model(specs)

    with pytest.raises(ValueError) as error:
        warm_start(variables, trainable, path)

    assert str(error.value) == (
        "Shape of variable dense/kernel:0 ((3, 3)) doesn't match with shape of tensor "
        "dense/kernel ([2, 3]) from checkpoint reader.")
    assert changed(variables) == []


def test_warm_start_argument_errors(tmp_path):
    variables, trainable = zeros_model()
    assert warm_start(variables, trainable, None) == []
    with pytest.raises(ValueError, match="^warm_start_from must be a string or a "
                                         "WarmStartSettings, instead got <class 'int'>$"):
        warm_start(variables, trainable, 3)
    with pytest.raises(ValueError, match=f"^Could not find a checkpoint in {tmp_path}: it has "
                                         "no `checkpoint` state file and is not a SavedModel"):
        warm_start(variables, trainable, str(tmp_path))


def test_warm_start_logs_the_names(tmp_path, caplog):
    path, _ = write_checkpoint(str(tmp_path))
    variables, trainable = zeros_model()

    with caplog.at_level(logging.INFO, logger="tensorflow"):
        warm_start(variables, trainable, path)

    assert f"Warm-starting from: {path}" in caplog.messages
    assert "Warm-started 2 variables: ['dense/kernel', 'dense/bias']" in caplog.messages


def test_warm_start_sets_every_replica(tmp_path, eight_devices):
    path, values = write_checkpoint(str(tmp_path))
    variables, trainable = zeros_model(strategy=eight_devices)

    warm_start(variables, trainable, path)

    components = variables["dense/kernel"].values
    assert len(components) == 8
    for component in components:
        np.testing.assert_array_equal(component.numpy(), values["dense/kernel"])


# A BERT-like pretrained checkpoint and a fine-tuning model.
PRETRAINED = {
    "bert/embeddings/word_embeddings": ([5, 2], True),
    "bert/encoder/layer_0/kernel": ([2, 2], True),
    "cls/predictions/output_bias": ([5], True),
    "global_step": ([], False),
}
FINE_TUNING = {
    "bert/embeddings/word_embeddings": ([5, 2], True),
    "bert/encoder/layer_0/kernel": ([2, 2], True),
    "output_weights": ([3, 2], True),
    "global_step": ([], False),
}


@pytest.mark.parametrize("assignment_map, expected", [
    ({"bert/": "bert/"},
     ["bert/embeddings/word_embeddings", "bert/encoder/layer_0/kernel"]),
    (collections.OrderedDict((n, n) for n in ["bert/embeddings/word_embeddings",
                                              "bert/encoder/layer_0/kernel"]),
     ["bert/embeddings/word_embeddings", "bert/encoder/layer_0/kernel"]),
    ({"bert/encoder/": "bert/encoder/"}, ["bert/encoder/layer_0/kernel"]),
    ({"global_step": "global_step"}, ["global_step"]),
])
def test_init_from_checkpoint_matches_tf1(tmp_path, assignment_map, expected):
    path, values = write_checkpoint(str(tmp_path), specs=PRETRAINED)
    variables, _ = zeros_model(FINE_TUNING)

    targets = init_from_checkpoint(str(tmp_path), assignment_map, variables)

    assert sorted(targets) == changed(variables) == expected
    for name in expected:
        np.testing.assert_array_equal(variables[name].numpy(), values[name])
    assert run_tf1(FINE_TUNING, lambda _: tf.compat.v1.train.init_from_checkpoint(
        str(tmp_path), assignment_map)) == expected


@pytest.mark.parametrize("assignment_map, model_specs, expected", [
    ({"bert/": "student/"},  # scope rename
     {"student/embeddings/word_embeddings": ([5, 2], True), "other": ([1], True)},
     {"student/embeddings/word_embeddings": "bert/embeddings/word_embeddings"}),
    ({"/": "tower/"},  # checkpoint root into a model scope
     {"tower/global_step": ([], False), "tower/bert/encoder/layer_0/kernel": ([2, 2], True)},
     {"tower/global_step": "global_step",
      "tower/bert/encoder/layer_0/kernel": "bert/encoder/layer_0/kernel"}),
    ({"bert/encoder/": "/"},  # a checkpoint scope onto the model root
     {"layer_0/kernel": ([2, 2], True)},
     {"layer_0/kernel": "bert/encoder/layer_0/kernel"}),
])
def test_init_from_checkpoint_scope_mappings(tmp_path, assignment_map, model_specs, expected):
    path, values = write_checkpoint(str(tmp_path), specs=PRETRAINED)
    variables, _ = zeros_model(model_specs)

    targets = init_from_checkpoint(path, assignment_map, variables)

    assert targets == expected
    for name, ckpt_name in expected.items():
        np.testing.assert_array_equal(variables[name].numpy(), values[ckpt_name])
    assert run_tf1(model_specs, lambda _: tf.compat.v1.train.init_from_checkpoint(
        path, assignment_map)) == sorted(expected)


def test_init_from_checkpoint_accepts_variables_as_values(tmp_path):
    path, values = write_checkpoint(str(tmp_path), specs=PRETRAINED)
    variables, _ = zeros_model(FINE_TUNING)

    targets = init_from_checkpoint(
        path, {"bert/encoder/layer_0/kernel": variables["bert/encoder/layer_0/kernel"]}, variables)

    assert targets == {"bert/encoder/layer_0/kernel": "bert/encoder/layer_0/kernel"}
    assert changed(variables) == ["bert/encoder/layer_0/kernel"]
    with pytest.raises(ValueError, match="is not one of the model's variables"):
        init_from_checkpoint(path, {"global_step": tf.Variable(0, dtype=tf.int64,
                                                               name="elsewhere")}, variables)


def tf1_error(specs, path, assignment_map):
    with pytest.raises(ValueError) as error:
        run_tf1(specs, lambda _: tf.compat.v1.train.init_from_checkpoint(path, assignment_map))
    return str(error.value)


@pytest.mark.parametrize("assignment_map, model_specs", [
    ({"bert/missing": "bert/encoder/layer_0/kernel"}, FINE_TUNING),  # not in the checkpoint
    ({"bert/": "bert/"},  # a model variable under the scope that the checkpoint lacks
     dict(FINE_TUNING, **{"bert/pooler/dense/kernel": ([2, 2], True)})),
    ({"bert/encoder/layer_0/kernel": "bert/encoder/layer_0/kernal"}, FINE_TUNING),  # not a var
    ({"bert/encoder/layer_0/kernel": "bert/embeddings/word_embeddings"}, FINE_TUNING),  # shape
])
def test_init_from_checkpoint_errors_are_tf1s(tmp_path, assignment_map, model_specs):
    path, _ = write_checkpoint(str(tmp_path), specs=PRETRAINED)
    variables, _ = zeros_model(model_specs)
    # A valid entry processed first (entries go in sorted order) must not be assigned either.
    assignment_map = dict(assignment_map, **{
        "bert/embeddings/word_embeddings": "bert/embeddings/word_embeddings"})

    with pytest.raises(ValueError) as error:
        init_from_checkpoint(path, assignment_map, variables)

    expected = tf1_error(model_specs, path, assignment_map)
    assert str(error.value).startswith(expected)
    assert changed(variables) == []


def test_unknown_model_name_error_explains_the_scope_reading(tmp_path):
    path, _ = write_checkpoint(str(tmp_path), specs=PRETRAINED)
    variables, _ = zeros_model(FINE_TUNING)

    with pytest.raises(ValueError) as error:
        init_from_checkpoint(path, {"bert/encoder/layer_0/kernel": "bert/encoder/layer_0/kernal"},
                             variables)

    assert str(error.value) == (
        "Assignment map with scope only name bert/encoder/layer_0 should map to scope only "
        "bert/encoder/layer_0/kernel. Should be 'scope/': 'other_scope/'. (The model has no "
        "variable named 'bert/encoder/layer_0/kernal', so it was read as a scope; check the "
        "name against the model's variables or map scope to scope.)")


def test_init_from_checkpoint_sets_every_replica(tmp_path, eight_devices):
    path, values = write_checkpoint(str(tmp_path), specs=PRETRAINED)
    variables, _ = zeros_model(FINE_TUNING, strategy=eight_devices)

    init_from_checkpoint(path, {"bert/": "bert/"}, variables)

    for component in variables["bert/encoder/layer_0/kernel"].values:
        np.testing.assert_array_equal(component.numpy(), values["bert/encoder/layer_0/kernel"])
    assert os.path.basename(path) == "model.ckpt-100"
