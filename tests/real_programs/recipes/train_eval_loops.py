"""Programs driven by `tf.estimator.train_and_evaluate` (TrainSpec/EvalSpec, exporters) on CPU
and by their own train/export loops on TPU."""
import os

from tiny_data import write_tfrecord
from recipes.program import Program, seeded_rng

PGAN_ROOT = "machine_learning/gan/pgan/tf_pgan/pgan_tpu_module"


def cifar_like_records(path, rng, count, size):
    """CIFAR-10-style examples: `image_raw` (raw uint8 HxWx3 bytes) and `label`."""
    return write_tfrecord(path, [
        {"image_raw": [rng.randint(256, size=size * size * 3).astype("uint8").tobytes()],
         "label": [int(rng.randint(10))]} for _ in range(count)])


def pgan(work, use_tpu):
    rng = seeded_rng()
    data, out = os.path.join(work, "data"), os.path.join(work, "out")
    cifar_like_records(os.path.join(data, "train.tfrecord"), rng, 32, 8)
    cifar_like_records(os.path.join(data, "eval.tfrecord"), rng, 16, 8)
    argv = ["--train_file_pattern=" + os.path.join(data, "train*.tfrecord"),
            "--eval_file_pattern=" + os.path.join(data, "eval*.tfrecord"),
            "--output_dir=" + out, "--dataset=cifar10", "--height=8", "--width=8",
            "--depth=3", "--train_batch_size=16", "--eval_batch_size=16", "--train_steps=2",
            "--eval_steps=1", "--num_steps_until_growth=2", "--save_summary_steps=1",
            "--save_checkpoints_steps=2", "--keep_checkpoint_max=2", "--start_delay_secs=0",
            "--throttle_secs=0", "--exports_to_keep=1", "--conv_num_filters=8,8",
            "--conv_kernel_sizes=4,3", "--conv_strides=1,1", "--latent_size=4",
            "--generator_projection_dims=4,4,8", "--minibatch_stddev_group_size=2",
            "--generator_learning_rate=0.001", "--discriminator_learning_rate=0.001",
            "--input_fn_autotune=False", "--use_tpu=%s" % use_tpu,
            "--eval_on_tpu=%s" % use_tpu, "--use_estimator_train_and_evaluate=True"]
    return argv, [os.path.join(out, "model.ckpt-2.index"),
                  os.path.join(out, "export", "exporter", "*", "saved_model.pb")]


PROGRAMS = [
    Program("pgan_tpu", "ryangillard/artificial_intelligence",
            "f7c21af221f366b075d351deeeb00a1b266ac3e3", "ryangillard+artificial_intelligence",
            "trainer/task.py", "progressive GAN (argparse, `python -m trainer.task`): CPU through "
            "train_and_evaluate (TrainSpec/EvalSpec, LatestExporter), TPU through its own "
            "train + export_savedmodel loop; one-shot iterator in input_fn, two optimizers",
            pgan, copy_from=PGAN_ROOT, module="trainer.task", check_paths=("trainer",)),
]
