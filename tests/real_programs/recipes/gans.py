"""Generative adversarial networks: two optimizers in one train_op, noise made in input_fn."""
import os

import numpy as np

from tiny_data import tfds_imagenet2012, tfds_mnist, write_tfrecord
from recipes.program import Program, ckpt, seeded_rng, tpu_flag

TFGAN = ("tensorflow/gan", "bc369b7ec040f2c4f04e4daf29f60252118e72c7", "tensorflow+gan")


def _raw_images(rng, count, size):
    """Images as raw uint8 RGB bytes with an int64 label (convert_to_tfrecords.py's layout)."""
    return [{"image": [rng.randint(256, size=size * size * 3).astype(np.uint8).tobytes()],
             "label": [int(rng.randint(2))]} for _ in range(count)]


def tpu_dcgan(work, use_tpu):
    rng = seeded_rng()
    train = write_tfrecord(os.path.join(work, "data", "train.tfrecords"),
                           _raw_images(rng, 16, 64))
    model_dir = os.path.join(work, "model")
    # Its predict (on the CPU estimator) draws the 100 images of its sample grid.
    argv = ["--dataset=dcgan64", "--train_data_file_64=" + train, "--model_dir=" + model_dir,
            "--batch_size=16", "--noise_dim=8", "--train_steps=2", "--train_steps_per_eval=2",
            "--iterations_per_loop=1", "--eval_loss=false"] + tpu_flag(use_tpu)
    if use_tpu:
        argv.append("--num_shards=8")
    return argv, [ckpt(model_dir, 2),
                  os.path.join(model_dir, "generated_images", "gen_00002.png")]


def tfds_and_temporary_directory(work):
    """TFDS's data (`tfds.load` without data_dir) and `tempfile`'s directory (an Estimator
    without model_dir) inside the run's work directory."""
    return {"TFDS_DATA_DIR": os.path.join(work, "tfds"), "TMPDIR": os.path.join(work, "tmp")}


def tfgan_mnist_estimator(work, use_tpu):
    places = tfds_and_temporary_directory(work)
    tfds_mnist(places["TFDS_DATA_DIR"], seeded_rng())
    os.makedirs(places["TMPDIR"])
    out = os.path.join(work, "out")
    # a batch of 16: its image summary is a 4x4 grid
    return (["--batch_size=16", "--max_number_of_steps=2", "--noise_dims=8",
             "--output_dir=" + out],
            [os.path.join(places["TMPDIR"], "tmp*", "model.ckpt-2.index"),
             os.path.join(out, "unconditional_gan.png")])


# TF-GAN's MNIST classifier (examples/mnist/util.py's MNIST_MODULE), which the evaluation's
# MNIST score and Frechet distance load with `tfhub.load`: downloaded, unless in the cache.
TFHUB_MNIST_CLASSIFIER = "https://tfhub.dev/tensorflow/tfgan/eval/mnist/logits/1"


def tfhub_cache(work):
    """TF-Hub's cache directory (`TFHUB_CACHE_DIR`) inside the run's work directory."""
    return {"TFHUB_CACHE_DIR": os.path.join(work, "tfhub")}


def tfhub_mnist_classifier_stand_in(cache_dir, rng):
    """Puts a stand-in for TF-Hub's MNIST classifier in TF-Hub's cache, offline: a fixed
    random linear map of [N, 28, 28, 1] images to 10 logits, as a SavedModel (the format
    `tfhub.load` reads) in the directory TF-Hub names after the URL's SHA-1. The program's
    evaluation then runs its code (its metric values are meaningless)."""
    import hashlib

    import tensorflow as tf  # the runner's own TensorFlow

    weights = tf.constant(rng.normal(scale=0.01, size=(784, 10)).astype(np.float32))

    class Classifier(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 28, 28, 1], tf.float32)])
        def __call__(self, images):
            return tf.matmul(tf.reshape(images, [-1, 784]), weights)

    tf.saved_model.save(Classifier(), os.path.join(
        cache_dir, hashlib.sha1(TFHUB_MNIST_CLASSIFIER.encode("utf8")).hexdigest()))


def tfgan_mnist_experiment(work, use_tpu):
    """train_experiment.py's own fake data (--use_dummy_data: zero images), 2 steps, one
    evaluation step (TF-Hub's MNIST classifier stood in: `tfhub_mnist_classifier_stand_in`),
    then 100 predictions into a PNG grid in model_dir."""
    tfhub_mnist_classifier_stand_in(tfhub_cache(work)["TFHUB_CACHE_DIR"], seeded_rng())
    model_dir = os.path.join(work, "model")
    return (["--batch_size=16", "--noise_dims=8", "--num_train_steps=2", "--num_eval_steps=1",
             "--use_dummy_data=true", "--model_dir=" + model_dir],
            [ckpt(model_dir, 2),
             os.path.join(model_dir, "outputs", "unconditional_gan_2steps.png")])


def tfgan_self_attention(work, use_tpu):
    """TFDS imagenet2012 prepared offline (one class, 40x40 JPEGs the program crops and
    resizes to 128x128); SAGAN at widths of 8 (its attention blocks take 1/8 of the
    channels: at 1 they would have none), 1 step of 8 images through TPUGANEstimator
    (--use_tpu_estimator), --mode=train (its other modes evaluate with a downloaded
    Inception)."""
    data = os.path.join(work, "tfds")
    tfds_imagenet2012(data, seeded_rng())
    model_dir = os.path.join(work, "model")
    return (["--mode=train", "--use_tpu_estimator=true", "--use_tpu=%s" % use_tpu,
             "--imagenet_data_dir=" + data, "--model_dir=" + model_dir,
             "--train_batch_size=8", "--z_dim=8", "--gf_dim=8", "--df_dim=8",
             "--max_number_of_steps=1", "--train_steps_per_eval=1",
             "--tpu_iterations_per_loop=1"],
            [ckpt(model_dir, 1)])


PROGRAMS = [
    Program("tfgan_self_attention", *TFGAN,
            "tensorflow_gan/examples/self_attention_estimator/train_experiment_main.py",
            "TF-GAN's Self-Attention GAN through TPUGANEstimator (use_tpu switch): "
            "class-conditional ResNet generator and discriminator with spectral norm and "
            "self-attention at 128x128, TFDS ImageNet cropped and resized in input_fn, "
            "TPUClusterResolver RunConfig; the repository's own tensorflow_gan",
            tfgan_self_attention, tf1_libraries=("tensorflow_hub",),
            eval_only="train_experiment_main.py evaluates only with TF-GAN's Inception "
            "(downloaded) in its other modes",
            replica_check="batch norm (tfgan.tpu.batch_norm, cross-replica), and no two "
            "training examples alike: train_experiment.py's input_fn draws each one's "
            "generator noise (make_z_normal)"),
    Program("tfgan_mnist_experiment", *TFGAN,
            "tensorflow_gan/examples/mnist_estimator/train_experiment.py",
            "TF-GAN's GANEstimator through tf.estimator.train_and_evaluate (params dict to "
            "input_fn, noise and image datasets zipped, get_eval_metric_ops_fn with MNIST "
            "score and Frechet distance), predict into a PNG grid; the repository's own "
            "tensorflow_gan", tfgan_mnist_experiment, has_use_tpu=False,
            environ=tfhub_cache,
            tf1_libraries=("tensorflow_hub",),  # TF-GAN's eval imports it
            eval_only="train_experiment_lib.py runs train_and_evaluate: no evaluation without "
            "training", replica_check="no TPU switch"),
    Program("tfgan_mnist_estimator", *TFGAN, "tensorflow_gan/examples/mnist_estimator/train.py",
            "TF-GAN's GANEstimator (Wasserstein losses, sequential G/D train hooks: "
            "RunTrainOpsHook, image summaries) on TFDS MNIST, predict 36 images into a PNG "
            "grid; `import tensorflow.compat.v1 as tf` + disable_v2_behavior, the repository's "
            "own tensorflow_gan", tfgan_mnist_estimator, has_use_tpu=False,
            tf1_libraries=("tensorflow_hub",),  # TF-GAN's eval imports it
            environ=tfds_and_temporary_directory,
            eval_only="train_lib.py only trains and predicts (GANEstimator without model_dir: "
            "a temporary directory per process)", replica_check="no TPU switch"),
    Program("tpu_dcgan", "victordibia/tpuDCGAN", "87b938e0ef0c783b4fde3765648c77b7d65ef65b",
            "victordibia+tpuDCGAN",
            "dcgan_main.py", "DCGAN 64x64: generator and discriminator optimizers in one "
            "train_op, input_fn computing on make_one_shot_iterator().get_next() (reshape, "
            "random_normal noise, feature dict), predict on a second CPU TPUEstimator, PNG grid",
            tpu_dcgan,
            eval_only="dcgan_main.py evaluates only in its training loop (after train(), "
            "with --eval_loss): no evaluation without training",
            replica_check="batch norm, and no two training examples alike: "
            "dcgan64_input.py draws each one's generator noise (random_normal)"),
]
