"""Generative models: GANs trained through TF-GAN's TPUGANEstimator."""
import os

from tiny_data import mnist_records, write_tfrecord
from recipes.program import Program, ckpt, seeded_rng, tpu_flag


def dcgan_mnist(work, use_tpu):
    rng = seeded_rng()
    data, model_dir = os.path.join(work, "mnist"), os.path.join(work, "model")
    train = write_tfrecord(os.path.join(data, "train.tfrecords"), mnist_records(rng, 64))
    test = write_tfrecord(os.path.join(data, "test.tfrecords"), mnist_records(rng, 32))
    argv = ["--dataset=mnist", "--mnist_train_data_file=" + train,
            "--mnist_test_data_file=" + test, "--model_dir=" + model_dir, "--batch_size=16",
            "--noise_dim=8", "--num_shards=8", "--train_steps=2", "--train_steps_per_eval=2",
            "--iterations_per_loop=1"] + tpu_flag(use_tpu)
    return argv, [ckpt(model_dir, 2),
                  os.path.join(model_dir, "generated_images", "gen_00002.png")]


PROGRAMS = [
    Program("dcgan_mnist", "tensorflow/tpu", "7dc921f846c9e4071f3884b768a7ddf521272a49",
            "tensorflow+tpu", "dcgan_main.py", "DCGAN on MNIST records through TF-GAN's "
            "TPUGANEstimator (joint G/D train ops), one-shot iterator in input_fn, predict "
            "of generated images", dcgan_mnist, copy_from="models/experimental/dcgan",
            tf1_libraries=("tensorflow_gan",),
            eval_only="dcgan_main.py evaluates only in its training loop (after train(), "
            "with --eval_loss): no evaluation without training",
            replica_check="batch norm, and no two training examples alike: "
            "mnist_input.py draws each one's generator noise (random_normal)"),
]
