"""`tf.contrib.gan`: TF-GAN, imported with the v1 namespace served to its modules."""
import sys

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as v1

NOISE = np.linspace(-1, 1, 16, dtype=np.float32).reshape(8, 2)
REAL = NOISE @ np.array([[0.5, -1.0, 0.25], [1.5, 0.5, -0.5]], np.float32) + 0.1

# TF-GAN 2.1's TPUGANEstimator (use_tpu=False, batch 4, 3 steps, Wasserstein losses, SGD
# 0.1 / 0.05) on the original (TensorFlow 2.15 + tensorflow-estimator 2.15 in graph mode,
# `import tensorflow_gan`), with this test's model: its checkpoint after training.
ORIGINAL_WEIGHTS = {
    "Discriminator/hidden/bias": [0.10744783282279968] * 4,
    "Discriminator/hidden/kernel": [[0.3011314272880554] * 4, [0.29636698961257935] * 4,
                                    [0.2966151237487793] * 4],
    "Discriminator/out/bias": [0.0],
    "Discriminator/out/kernel": [[-0.19498877227306366]] * 4,
    "Generator/gen/bias": [-0.07109236717224121, -0.07034213840961456, -0.07038120925426483],
    "Generator/gen/kernel": [[0.0668235570192337, 0.16717368364334106, -0.3328445553779602],
                             [0.3573445677757263, -0.542205274105072, 0.5577713251113892]],
    "global_step": 3,
}

# TF-GAN 2.1's GANEstimator (the default get_sequential_train_hooks: RunTrainOpsHook runs the
# generator's and the discriminator's train ops, each on its own batch, the train_op only
# increments the global step), 3 steps on batches of 4, on the original (as above, with
# resource variables: tests/data/make_gan_estimator_reference.py): its checkpoint.
ORIGINAL_GAN_ESTIMATOR_WEIGHTS = {
    "Discriminator/hidden/bias": [0.10000000149011612] * 4,
    "Discriminator/hidden/kernel": [[0.2821712791919708] * 4, [0.2951095998287201] * 4,
                                    [0.30441412329673767] * 4],
    "Discriminator/out/bias": [0.0],
    "Discriminator/out/kernel": [[-0.17181070148944855]] * 4,
    "Generator/gen/bias": [-0.05062650144100189, -0.05143521726131439, -0.051961082965135574],
    "Generator/gen/kernel": [[0.10182391107082367, 0.2016087770462036, -0.29848235845565796],
                             [0.39507371187210083, -0.5052492022514343, 0.5945895314216614]],
    "global_step": 3,
}


def _input_fn(params):
    return tf.data.Dataset.from_tensor_slices((NOISE, REAL)).repeat().batch(
        params["batch_size"], drop_remainder=True)


def _generator_fn(noise):
    return v1.layers.dense(noise, 3, kernel_initializer=v1.constant_initializer(
        [[0.1, 0.2, -0.3], [0.4, -0.5, 0.6]]), name="gen")


def _discriminator_fn(data, unused_conditioning):
    hidden = v1.layers.dense(data, 4, activation=v1.nn.relu, name="hidden",
                             kernel_initializer=v1.constant_initializer(0.3),
                             bias_initializer=v1.constant_initializer(0.1))
    return v1.layers.dense(hidden, 1, kernel_initializer=v1.constant_initializer(-0.2),
                           name="out")


@pytest.fixture(name="tfgan")
def _tfgan():
    pytest.importorskip("tensorflow_probability")  # the [test] extra installs both
    return v1.contrib.gan


def test_contrib_gan_is_tf_gan_on_the_v1_namespace(tfgan):
    gan_model = tfgan.gan_model  # imports TF-GAN
    tensorflow_gan = sys.modules["tensorflow_gan"]
    assert gan_model is tensorflow_gan.gan_model
    assert tfgan.losses.wasserstein_generator_loss is (
        tensorflow_gan.losses.wasserstein_generator_loss)
    # TF-GAN's estimators subclass this package's: its `import tensorflow` got the namespace
    assert issubclass(tfgan.estimator.TPUGANEstimator, tec.TPUEstimator)
    assert "gan_train_ops" in dir(tfgan)


def test_tpu_gan_estimator_trains_to_the_originals_weights(tfgan, tmp_path):
    estimator = tfgan.estimator.TPUGANEstimator(
        use_tpu=False, train_batch_size=4, config=tec.RunConfig(model_dir=str(tmp_path)),
        generator_fn=_generator_fn, discriminator_fn=_discriminator_fn,
        generator_loss_fn=tfgan.losses.wasserstein_generator_loss,
        discriminator_loss_fn=tfgan.losses.wasserstein_discriminator_loss,
        generator_optimizer=v1.train.GradientDescentOptimizer(0.1),
        discriminator_optimizer=v1.train.GradientDescentOptimizer(0.05))
    estimator.train(_input_fn, max_steps=3)
    assert sorted(estimator.get_variable_names()) == sorted(ORIGINAL_WEIGHTS)
    for name, expected in ORIGINAL_WEIGHTS.items():
        np.testing.assert_allclose(estimator.get_variable_value(name), expected, rtol=1e-6,
                                   err_msg=name)


def test_gan_estimator_trains_to_the_originals_weights(tfgan, tmp_path):
    """Its hooks session.run the generator's and the discriminator's train ops."""
    estimator = tfgan.estimator.GANEstimator(
        model_dir=str(tmp_path), generator_fn=_generator_fn,
        discriminator_fn=_discriminator_fn,
        generator_loss_fn=tfgan.losses.wasserstein_generator_loss,
        discriminator_loss_fn=tfgan.losses.wasserstein_discriminator_loss,
        generator_optimizer=v1.train.GradientDescentOptimizer(0.1),
        discriminator_optimizer=v1.train.GradientDescentOptimizer(0.05))
    estimator.train(lambda: _input_fn({"batch_size": 4}), max_steps=3)
    assert sorted(estimator.get_variable_names()) == sorted(ORIGINAL_GAN_ESTIMATOR_WEIGHTS)
    for name, expected in ORIGINAL_GAN_ESTIMATOR_WEIGHTS.items():
        np.testing.assert_allclose(estimator.get_variable_value(name), expected, rtol=1e-6,
                                   err_msg=name)


def test_without_tf_gan_the_error_names_what_to_install(monkeypatch):
    from tpu_estimator_compat.v1.contrib import gan  # noqa: PLC0415

    monkeypatch.setitem(sys.modules, "tensorflow_gan", None)  # an import of it fails
    with pytest.raises(ModuleNotFoundError, match=r"tf.contrib.gan is TF-GAN, which needs "
                                                  r"'tensorflow_gan': pip install "
                                                  r"tensorflow-gan tensorflow-probability"):
        gan.GANModel  # noqa: B018
