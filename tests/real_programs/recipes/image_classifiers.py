"""Image classifiers evaluated on exponential-moving-average weights (restored through a
Scaffold's Saver or a SessionRunHook), trained and evaluated in separate invocations."""
import io
import os

import numpy as np

from tiny_data import write_json, write_tfrecord
from recipes.program import Program, ckpt, evaluation_with, seeded_rng


def _jpeg(rng, size):
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(rng.randint(256, size=(size, size, 3)).astype("uint8")).save(out, "JPEG")
    return out.getvalue()


def _encoded_images(rng, count, size, classes):
    """ImageNet-style records (`image/encoded` JPEG, `image/class/label`)."""
    return [{"image/encoded": [_jpeg(rng, size)], "image/class/label": [int(rng.randint(classes))]}
            for _ in range(count)]


def _svhn_records(work, rng, subsets):
    data = os.path.join(work, "svhn")
    for subset, count in subsets:
        write_tfrecord(os.path.join(data, subset + "-00000-of-00001"),
                       _encoded_images(rng, count, 32, 10))
    return data


def _noisystudent_flags(data, model_dir, use_tpu):
    """A tiny EfficientNet (b0 scaled by 0.1) on 32x32 images, 2 steps, EMA of all weights."""
    return ["--task_name=svhn", "--model_name=efficientnet-b0", "--depth_coefficient=0.1",
            "--width_coefficient=0.1", "--use_bfloat16=false", "--label_data_dir=" + data,
            "--model_dir=" + model_dir, "--train_batch_size=16", "--eval_batch_size=8",
            "--num_train_images=32", "--num_eval_images=8", "--num_test_images=8",
            "--train_steps=2", "--iterations_per_loop=1", "--save_checkpoints_steps=1",
            "--use_cache=false", "--transpose_input=false", "--use_tpu=%s" % use_tpu]


def noisystudent_svhn(work, use_tpu):
    data = _svhn_records(work, seeded_rng(), (("train", 32), ("dev", 16), ("test", 16)))
    model_dir = os.path.join(work, "model")
    common = _noisystudent_flags(data, model_dir, use_tpu)
    # Trains, then evaluates dev and test on the averages (its model_fn's scaffold_fn: a Saver
    # mapping the EMA names onto the variables).
    return [common + ["--mode=train"], common + ["--mode=eval"]], [
        ckpt(model_dir, 2), os.path.join(model_dir, "FLAGS.json"), os.path.join(model_dir, "eval")]


def noisystudent_pseudo_label(work, use_tpu):
    data = _svhn_records(work, seeded_rng(), (("train", 32), ("extra", 16)))
    model_dir, out = os.path.join(work, "teacher"), os.path.join(work, "predict")
    common = _noisystudent_flags(data, model_dir, use_tpu)
    # The teacher trains, then labels the `extra` shard with its EMA weights (predict's
    # scaffold_fn) from an explicit checkpoint_path, writing soft labels as TFRecords. The
    # shard's size is given in its info file: without it the program counts the records with
    # TF1 session code outside the estimator (`make_initializable_iterator`, `tf.Session`),
    # which runs eagerly here (only the estimator's calls are TF1 graph code).
    write_json(os.path.join(out, "info", "info-00000-of-00001-00000.txt"), {"image_num": 16})
    predict = ["--mode=predict", "--predict_ckpt_path=" + os.path.join(model_dir, "model.ckpt-2"),
               "--file_prefix=extra", "--num_shards=1", "--shard_id=0",
               "--info_dir=" + os.path.join(out, "info"),
               "--output_dir=" + os.path.join(out, "label")]
    return [common + ["--mode=train"], common + predict], [
        os.path.join(out, "label", "train-info-00000-of-00001-00000")]


def noisystudent_student(work, use_tpu):
    rng = seeded_rng()
    data = _svhn_records(work, rng, (("train", 32),))
    unlabeled = os.path.join(work, "unlabeled")
    probabilities = rng.dirichlet(np.ones(10), size=32).astype(np.float32)
    write_tfrecord(os.path.join(unlabeled, "train-00000-of-00001"), [
        {"image/encoded": [_jpeg(rng, 32)], "probabilities": p, "label": [int(p.argmax())],
         "prob": [float(p.max())]} for p in probabilities])  # filter_unlabel.py's layout
    teacher, student = os.path.join(work, "teacher"), os.path.join(work, "student")
    # A teacher trains; the student trains on labeled and pseudo-labeled batches zipped
    # together, with the frozen teacher (its own variable scope) loaded from the teacher's
    # checkpoint by init_from_checkpoint (scaffold_fn on TPU). Without RandAugment
    # (`--augment_name=v1`): its policy parser calls `inspect.getargspec`, gone in Python 3.11.
    distill = ["--unlabel_ratio=1", "--teacher_softmax_temp=1",
               "--teacher_model_name=efficientnet-b0",
               "--teacher_model_path=" + os.path.join(teacher, "model.ckpt-2"),
               "--unlabel_data_dir=" + unlabeled, "--mode=train"]
    return [_noisystudent_flags(data, teacher, use_tpu) + ["--mode=train"],
            _noisystudent_flags(data, student, use_tpu) + distill], [ckpt(student, 2)]



def efficientnetv2(work, use_tpu):
    """A tiny EfficientNetV2-B0 (width and depth x0.25, 32x32) on its null input (no data_dir:
    black images), 2 steps, EMA of the weights; then `--mode=eval` evaluates the averages
    (scaffold_fn's Saver of ema.variables_to_restore) from the last checkpoint."""
    model_dir = os.path.join(work, "model")
    hparams = ",".join([
        "train.batch_size=8", "eval.batch_size=8", "train.epochs=0", "train.min_steps=2",
        "runtime.iterations_per_loop=1", "train.isize=32", "eval.isize=32",
        "data.splits.eval.num_images=16", "model.width_coefficient=0.25",
        "model.depth_coefficient=0.25", "runtime.skip_host_call=true"])
    common = ["--model_name=efficientnetv2-b0", "--model_dir=" + model_dir,
              "--hparam_str=" + hparams, "--use_tpu=%s" % use_tpu, "--archive_ckpt=false"]
    return [common + ["--mode=train"], common + ["--mode=eval"]], [
        ckpt(model_dir, 2), os.path.join(model_dir, "config.yaml")]


PROGRAMS = [
    Program("noisystudent_svhn", "google-research/noisystudent",
            "aac52bf02448f6e45aee6c418f3e588803e4fa43", "google-research+noisystudent", "main.py",
            "Noisy Student EfficientNet on SVHN-format JPEG records: EMA of all weights, "
            "evaluation on the averages through scaffold_fn's Saver, train and eval as separate "
            "runs, host_call summaries, tf.estimator.tpu + tf.compat-era names",
            noisystudent_svhn,
            eval_only="main.py evaluates only in a process of its own (--mode=eval; "
            "train_and_eval does not train): no in-process evaluation to compare",
            replica_check="batch norm, and no two training examples alike: "
            "preprocessing.py crops and flips each image at random"),
    Program("noisystudent_pseudo_label", "google-research/noisystudent",
            "aac52bf02448f6e45aee6c418f3e588803e4fa43", "google-research+noisystudent", "main.py",
            "Noisy Student teacher labelling unlabeled data: train, then predict from an explicit "
            "checkpoint_path with EMA weights (scaffold_fn in PREDICT), soft labels written as "
            "TFRecords", noisystudent_pseudo_label,
            eval_only="main.py evaluates only in a process of its own (--mode=eval; "
            "train_and_eval does not train): no in-process evaluation to compare",
            replica_check="batch norm, and no two training examples alike: "
            "preprocessing.py crops and flips each image at random"),
    Program("noisystudent_student", "google-research/noisystudent",
            "aac52bf02448f6e45aee6c418f3e588803e4fa43", "google-research+noisystudent", "main.py",
            "Noisy Student student: labeled and pseudo-labeled datasets zipped per step, "
            "a frozen teacher initialised from a checkpoint (init_from_checkpoint "
            "/ scaffold_fn)", noisystudent_student,
            eval_only="main.py evaluates only in a process of its own (--mode=eval; "
            "train_and_eval does not train): no in-process evaluation to compare",
            replica_check="batch norm, and no two training examples alike: "
            "preprocessing.py crops and flips each image at random"),
    Program("efficientnetv2", "google/automl", "6a54c8741e7c3265d4547c4f35f47a0391122dc5",
            "google+automl", "main.py",
            "EfficientNetV2 (tf.compat.v1 with a Keras model in model_fn, "
            "disable_eager_execution): null input, hparam_str config overrides, EMA train op, "
            "evaluation on the averages through scaffold_fn's Saver, train and eval as "
            "separate runs, tf.estimator.tpu names", efficientnetv2, copy_from="efficientnetv2",
            eval_only="main.py evaluates only in a process of its own (--mode=eval): no "
            "in-process evaluation to compare",
            replica_check="batch norm: moving variances take n/(n-1) of each replica's count "
            "(TF1 too), and its null input is one black image"),
]
