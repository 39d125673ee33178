"""Reference weights of TF-GAN's GANEstimator for tests/test_contrib_gan.py: run on the
original (/work/orig/bin/python: TF 2.15 + tensorflow-estimator 2.15 in graph mode,
`import tensorflow_gan`), prints JSON.

The test's generator and discriminator (rewritten here on tf.compat.v1), Wasserstein losses,
SGD 0.1 / 0.05, the default get_sequential_train_hooks(): 3 steps on batches of 4 of the
test's 8 rows, repeated; the checkpoint's variables after training.
"""
import collections
import inspect
import json
import tempfile

import numpy as np
import tensorflow as tf

NOISE = np.linspace(-1, 1, 16, dtype=np.float32).reshape(8, 2)
REAL = NOISE @ np.array([[0.5, -1.0, 0.25], [1.5, 0.5, -0.5]], np.float32) + 0.1


def input_fn():
    return tf.data.Dataset.from_tensor_slices((NOISE, REAL)).repeat().batch(4)


def generator_fn(noise):
    v1 = tf.compat.v1
    return v1.layers.dense(noise, 3, kernel_initializer=v1.constant_initializer(
        [[0.1, 0.2, -0.3], [0.4, -0.5, 0.6]]), name="gen")


def discriminator_fn(data, unused_conditioning):
    v1 = tf.compat.v1
    hidden = v1.layers.dense(data, 4, activation=v1.nn.relu, name="hidden",
                             kernel_initializer=v1.constant_initializer(0.3),
                             bias_initializer=v1.constant_initializer(0.1))
    return v1.layers.dense(hidden, 1, kernel_initializer=v1.constant_initializer(-0.2),
                           name="out")


def main():
    tf.compat.v1.disable_v2_behavior()
    tf.compat.v1.enable_resource_variables()
    # TF-GAN 2.1 calls inspect.getargspec, which Python 3.11 removed.
    inspect.getargspec = lambda fn: collections.namedtuple(
        "ArgSpec", "args varargs keywords defaults")(*inspect.getfullargspec(fn)[:4])
    import tensorflow_gan as tfgan  # pylint: disable=import-outside-toplevel

    estimator = tfgan.estimator.GANEstimator(
        model_dir=tempfile.mkdtemp(), generator_fn=generator_fn,
        discriminator_fn=discriminator_fn,
        generator_loss_fn=tfgan.losses.wasserstein_generator_loss,
        discriminator_loss_fn=tfgan.losses.wasserstein_discriminator_loss,
        generator_optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.1),
        discriminator_optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.05))
    estimator.train(input_fn, max_steps=3)
    print(json.dumps({name: estimator.get_variable_value(name).tolist()
                      for name in estimator.get_variable_names()}))


if __name__ == "__main__":
    main()
