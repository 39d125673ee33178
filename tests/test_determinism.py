"""RunConfig(tf_random_seed=...) makes training repeatable on the simulated 8-core TPU, as it
is on one device: same initial values (tf_keras legacy layers' initializers), same dropout.
Initializers take TF1's seeds and give the original's initial values."""
import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as v1
import helpers

pytestmark = pytest.mark.slow  # estimator runs (and processes): seconds each


def model_fn(features, labels, mode, params):
    hidden = v1.layers.dense(features, 16, activation=v1.nn.relu, name="hidden")
    hidden = v1.layers.dropout(hidden, 0.5, training=True)
    predictions = v1.layers.dense(hidden, 1, name="out")
    loss = v1.losses.mean_squared_error(labels, predictions)
    return helpers.sgd_spec(mode, loss)


def input_fn(params):
    x = np.linspace(-1, 1, 256 * 4, dtype=np.float32).reshape(256, 4)
    return v1.data.Dataset.from_tensor_slices((x, x.sum(1, keepdims=True))).repeat().batch(
        params["batch_size"], drop_remainder=True)


def trained(model_dir, strategy, seed, train_input_fn=input_fn):
    """The estimator after 6 steps (3 a loop) of batch 64 with `tf_random_seed=seed`."""
    config = tec.RunConfig(model_dir=str(model_dir), tf_random_seed=seed,
                           train_distribute=strategy,
                           tpu_config=tec.TPUConfig(iterations_per_loop=3))
    estimator = tec.TPUEstimator(model_fn, config=config, train_batch_size=64)
    estimator.train(train_input_fn, max_steps=6)
    return estimator


def trained_weights(model_dir, strategy, seed):
    estimator = trained(model_dir, strategy, seed)
    return {name: estimator.get_variable_value(name)
            for name in ("hidden/kernel", "hidden/bias", "out/kernel")}


def test_same_seed_same_weights_on_eight_replicas(tmp_path, eight_devices):
    first = trained_weights(tmp_path / "a", eight_devices, seed=7)
    second = trained_weights(tmp_path / "b", eight_devices, seed=7)
    other = trained_weights(tmp_path / "c", eight_devices, seed=8)
    for name, value in first.items():
        np.testing.assert_array_equal(value, second[name], err_msg=name)
    assert not np.array_equal(first["hidden/kernel"], other["hidden/kernel"])


def augmented_input_fn(params):
    """Random augmentation without op seeds, as TF1 programs wrote it (`tf.random_normal` in
    `dataset.map`): TF1 derived its op seeds from the graph seed, `tf_random_seed`."""
    x = np.linspace(-1, 1, 256 * 4, dtype=np.float32).reshape(256, 4)
    dataset = v1.data.Dataset.from_tensor_slices((x, x.sum(1, keepdims=True))).repeat()
    dataset = dataset.map(lambda x, y: (x + v1.random_normal([4], stddev=0.5), y))
    return dataset.shuffle(64).batch(params["batch_size"], drop_remainder=True)


def augmented_weights(model_dir, strategy, seed):
    return trained(model_dir, strategy, seed, augmented_input_fn).get_variable_value(
        "hidden/kernel")


@pytest.mark.parametrize("devices", ["one_device", "eight_devices"])
def test_same_seed_same_weights_with_random_ops_in_input_fn(tmp_path, devices, request):
    strategy = request.getfixturevalue(devices)
    first = augmented_weights(tmp_path / "a", strategy, seed=1)
    second = augmented_weights(tmp_path / "b", strategy, seed=1)
    other = augmented_weights(tmp_path / "c", strategy, seed=2)
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, other)


# The original's initial values (TF 2.15 + tensorflow-estimator 2.15, graph mode, TPUEstimator
# use_tpu=False) of `seeded_initializers_model_fn`'s variables, by RunConfig.tf_random_seed.
# Without a graph seed, unseeded initializers are random: only the seeded ones are compared.
ORIGINAL_INITIAL_VALUES = {
    None: {
        "a": [-0.22337746620178223, 0.3273656368255615, -0.6161785125732422],
        "c": [-0.046945683658123016, -1.2039023637771606, 1.1668351888656616],
    },
    3: {
        "a": [-0.20466160774230957, 0.6851363182067871, -0.990962028503418],
        "c": [-0.4506755471229553, -0.6528815031051636, 0.3364031910896301],
        "e": [0.556138277053833, 0.010576963424682617, 0.2500731945037842],
        "f": [[0.7689663171768188, -0.7766960859298706, -0.7396938800811768],
              [0.814513087272644, -0.08980095386505127, 0.07323014736175537]],
    },
}


def seeded_initializers_model_fn(features, labels, mode, params):
    init = v1.random_uniform_initializer(-1, 1, seed=5)
    a = v1.get_variable("a", [3], initializer=init)
    b = v1.get_variable("b", [3], initializer=init)  # TF1: the same values as a
    seeded_op = v1.random_normal([3], seed=7)
    c = v1.get_variable("c", initializer=seeded_op)
    d = v1.get_variable("d", initializer=seeded_op)  # TF1: the same values as c
    dropped = v1.nn.dropout(features, rate=0.5)  # an unseeded random op: takes op seed 0...
    e = v1.get_variable("e", [3], initializer=v1.random_uniform_initializer(-1, 1))  # ... 1
    f = v1.get_variable("f", [2, 3])  # the default glorot_uniform: op seed 2
    loss = (tf.reduce_sum(dropped) * 0.0 + tf.reduce_sum(a + b + c + d + e)
            + tf.reduce_sum(f))
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=v1.assign_add(
        v1.train.get_global_step(), 1))


def constant_input_fn(params):
    x = np.ones([8, 2], np.float32)
    return v1.data.Dataset.from_tensor_slices((x, x)).repeat().batch(
        params["batch_size"], drop_remainder=True)


@pytest.mark.parametrize("devices", [None, "eight_devices"])
def test_initializers_take_tf1_seeds_and_give_the_originals_values(tmp_path, devices, request):
    strategy = request.getfixturevalue(devices) if devices else None
    tf.random.set_seed(11)  # the caller's global seed does not seed the model's graph
    values = {}
    for seed in (3, None, 3):
        config = tec.RunConfig(model_dir=str(tmp_path / f"{seed}-{len(values)}"),
                               tf_random_seed=seed, train_distribute=strategy)
        estimator = tec.TPUEstimator(seeded_initializers_model_fn, config=config,
                                     use_tpu=strategy is not None, train_batch_size=8)
        estimator.train(constant_input_fn, max_steps=1)
        values[seed] = {name: estimator.get_variable_value(name) for name in "abcdef"}
        for name, expected in ORIGINAL_INITIAL_VALUES[seed].items():
            np.testing.assert_allclose(values[seed][name], expected, rtol=1e-6, err_msg=name)
        np.testing.assert_array_equal(values[seed]["b"], values[seed]["a"])
        np.testing.assert_array_equal(values[seed]["d"], values[seed]["c"])


@pytest.mark.parametrize("tf_random_seed", [None, 5])
def test_the_programs_own_eager_random_draws_continue_across_estimator_calls(
        tmp_path, one_device, tf_random_seed):
    """input_fn and model_fn take tf_random_seed as their seed; the program's own global seed
    and op-seed sequence are restored after each call as they were, so a draw after train()
    and evaluate() is the one the program would have made without them (before, the
    sequence restarted: the draw after the calls repeated the first)."""
    import helpers  # noqa: PLC0415
    tf.random.set_seed(3)
    expected = [tf.random.uniform([4]).numpy() for _ in range(2)]
    tf.random.set_seed(3)
    first = tf.random.uniform([4]).numpy()
    estimator = helpers.make_estimator(tmp_path, one_device, tf_random_seed=tf_random_seed)
    estimator.train(helpers.input_fn, steps=2)
    estimator.evaluate(helpers.input_fn, steps=1)
    second = tf.random.uniform([4]).numpy()
    np.testing.assert_array_equal(first, expected[0])
    np.testing.assert_array_equal(second, expected[1])



def shuffled_eval_input_fn(params):
    """The helpers' examples shuffled without a seed, as mnasnet's imagenet_input.py shuffles
    its validation files: TF1 took the op seed from each evaluate()'s new graph, so with
    tf_random_seed every evaluation saw the same order."""
    import helpers  # noqa: PLC0415
    dataset = v1.data.Dataset.from_tensor_slices((helpers.FEATURES, helpers.TARGETS))
    return dataset.shuffle(len(helpers.FEATURES)).batch(params["batch_size"],
                                                        drop_remainder=True)


def test_a_seeded_shuffled_evaluation_repeats_in_process_and_in_a_fresh_estimator(
        tmp_path, eight_devices):
    """One batch of 16 shuffled examples on 8 replicas (the model is deterministic and the
    reported loss replica 0's, as TF1's on a TPU, so only the order moves it): the same in
    each evaluate() after train() and in a new estimator on the checkpoint; another seed
    draws another order (6: the helpers' rows repeat every 7, and seed 5's order starts
    with rows equal to seed 4's first two)."""
    import helpers  # noqa: PLC0415

    def estimator(seed):
        return helpers.make_estimator(tmp_path, eight_devices, batch_size=16,
                                      params={"use_tpu": True}, tf_random_seed=seed)

    trained = estimator(4)
    trained.train(helpers.input_fn, max_steps=2)
    losses = [trained.evaluate(shuffled_eval_input_fn, steps=1)["loss"] for _ in range(2)]
    losses.append(estimator(4).evaluate(shuffled_eval_input_fn, steps=1)["loss"])
    other_order = estimator(6).evaluate(shuffled_eval_input_fn, steps=1)["loss"]
    assert losses[0] == losses[1] == losses[2]
    assert other_order != losses[0]


# The original's numbers for `shuffled_twice_input_fn` and `seed_continuing_model_fn` with
# RunConfig(tf_random_seed=3) (tests/data/make_shuffle_seed_reference.py, Estimator and
# TPUEstimator(use_tpu=False) alike): TF1 gave the two unseeded shuffles op seeds 0 and 1 and
# w's unseeded initializer op seed 2, in each call's new graph.
ORIGINAL_SHUFFLED = {"w after 1 step": 0.6849244832992554,
                     "w after 1+4 steps": 0.6982690691947937,
                     "eval loss (2 batches)": 0.1804046630859375,
                     "predicted order": [1, 6, 5, 0, 4, 3, 2, 7]}


def shuffled_twice_input_fn(params):
    """Ids 0..7 shuffled without a seed, batched by 2, the batches shuffled again."""
    dataset = v1.data.Dataset.range(8).shuffle(8).batch(2)
    return dataset.shuffle(4).map(lambda ids: {"x": tf.cast(ids, tf.float32)})


def shuffled_predict_input_fn(params):
    return v1.data.Dataset.range(8).shuffle(8).map(
        lambda i: {"x": tf.cast(i, tf.float32)}).batch(params.get("batch_size", 2),
                                                      drop_remainder=True)


def seed_continuing_model_fn(features, labels, mode, params):
    x = tf.reshape(features["x"], [-1, 1])
    w = v1.get_variable("w", [1, 1], initializer=v1.random_uniform_initializer(-1, 1))
    if mode == tec.ModeKeys.PREDICT:
        return tec.TPUEstimatorSpec(mode, predictions={"x": features["x"]})
    loss = tf.reduce_mean(tf.square(x * w - x * 0.5 - 1.0))
    train_op = v1.train.GradientDescentOptimizer(0.01).minimize(
        loss, global_step=v1.train.get_global_step())
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


@pytest.mark.parametrize("kind", ["Estimator", "TPUEstimator"])
def test_unseeded_shuffles_take_the_originals_op_seeds(tmp_path, kind):
    """input_fn's unseeded random ops take TF1's op seeds 0, 1, ... of each call's graph and
    model_fn's unseeded initializer the next one: the original's order, weights and loss."""
    if kind == "Estimator":
        estimator = tec.Estimator(
            lambda features, labels, mode: seed_continuing_model_fn(
                features, labels, mode, {}).as_estimator_spec(),
            config=tec.RunConfig(model_dir=str(tmp_path), tf_random_seed=3))
        wrap = lambda fn: (lambda: fn({}))  # noqa: E731
    else:
        estimator = tec.TPUEstimator(
            seed_continuing_model_fn, use_tpu=False, train_batch_size=2, eval_batch_size=2,
            predict_batch_size=2,
            config=tec.RunConfig(model_dir=str(tmp_path), tf_random_seed=3))
        wrap = lambda fn: fn  # noqa: E731
    estimator.train(wrap(shuffled_twice_input_fn), steps=1)
    seen = {"w after 1 step": estimator.get_variable_value("w").item()}
    estimator.train(wrap(shuffled_twice_input_fn), steps=4)
    seen["w after 1+4 steps"] = estimator.get_variable_value("w").item()
    seen["eval loss (2 batches)"] = float(
        estimator.evaluate(wrap(shuffled_twice_input_fn), steps=2)["loss"])
    seen["predicted order"] = [int(p["x"]) for p in estimator.predict(
        wrap(shuffled_predict_input_fn))]
    for name, expected in ORIGINAL_SHUFFLED.items():
        np.testing.assert_allclose(seen[name], expected, rtol=1e-6, err_msg=name)


def test_unseeded_shuffle_on_eight_replicas_keeps_the_originals_order(tmp_path, eight_devices):
    """On the simulated TPU, input_fn runs once for the host (per-core batches of 1) and its
    shuffle takes op seed 0 as in the original's host input graph: the same order."""
    config = tec.RunConfig(model_dir=str(tmp_path), tf_random_seed=3,
                           train_distribute=eight_devices)
    estimator = tec.TPUEstimator(seed_continuing_model_fn, config=config, train_batch_size=8,
                                 predict_batch_size=8)
    estimator.train(lambda params: shuffled_predict_input_fn(params).map(
        lambda features: (features, features["x"])).repeat(), steps=1)
    predicted = [int(p["x"]) for p in estimator.predict(shuffled_predict_input_fn)]
    assert predicted == ORIGINAL_SHUFFLED["predicted order"]
