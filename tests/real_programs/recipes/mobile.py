"""Mobile image classifiers: EMA (moving-average) evaluation through a scaffold's Saver,
SavedModel export of the averaged weights, then TFLite conversion."""
import io
import os

import numpy as np

from tiny_data import write_tfrecord
from recipes.program import Program, ckpt, evaluation_with, seeded_rng, tpu_flag


def imagenet_records(rng, count, num_classes, size=40):
    """ImageNet as the TPU classifiers read it: a JPEG and a 1-based `image/class/label`."""
    from PIL import Image

    records = []
    for _ in range(count):
        label = 1 + rng.randint(num_classes)
        pixels = rng.randint(0, 255, size=(size, size, 3)).astype(np.uint8)
        pixels[:, :, label % 3] = 25 * label  # a learnable signal: a channel per class
        out = io.BytesIO()
        Image.fromarray(pixels).save(out, format="JPEG")
        records.append({"image/encoded": [out.getvalue()], "image/class/label": [label]})
    return records


def mnasnet(work, use_tpu):
    rng = seeded_rng()
    data, model_dir = os.path.join(work, "imagenet"), os.path.join(work, "model")
    export_dir = os.path.join(work, "export")
    write_tfrecord(os.path.join(data, "train-00000-of-00001"), imagenet_records(rng, 16, 10))
    write_tfrecord(os.path.join(data, "validation-00000-of-00001"),
                   imagenet_records(rng, 8, 10))
    argv = ["--data_dir=" + data, "--model_dir=" + model_dir, "--export_dir=" + export_dir,
            "--mode=train_and_eval", "--model_name=mnasnet-small", "--depth_multiplier=0.25",
            "--num_label_classes=10", "--input_image_size=32", "--train_steps=2",
            "--steps_per_eval=2", "--train_batch_size=8", "--eval_batch_size=8",
            "--iterations_per_loop=1", "--num_train_images=16", "--num_eval_images=8",
            "--transpose_input=false", "--num_parallel_calls=1", "--moving_average_decay=0.9",
            "--post_quantize=true"] + tpu_flag(use_tpu)
    return argv, [ckpt(model_dir, 2), os.path.join(export_dir, "mnasnet-small.tflite"),
                  os.path.join(export_dir, "mnasnet-small_postquant.tflite")]


PROGRAMS = [
    Program("mnasnet", "tensorflow/tpu", "7dc921f846c9e4071f3884b768a7ddf521272a49",
            "tensorflow+tpu", "models/official/mnasnet/mnasnet_main.py",
            "MnasNet-small on ImageNet-format JPEG records: train_and_eval, EMA weights for "
            "eval (scaffold Saver) and export, tf2 summaries, SavedModel then TFLite "
            "(float and post-training quantized)", mnasnet, copy_from="models",
            copy_to="models",
            pythonpath=("models/official/mnasnet", "models/official/efficientnet", "models"),
            check_paths=("models/official/mnasnet", "models/hyperparameters"),
            # --mode=eval: its checkpoints_iterator evaluates the last checkpoint, then stops
            # (step >= --train_steps)
            eval_only=evaluation_with(mnasnet, mode="eval"),
            replica_check="batch norm, and no two training examples alike: "
            "efficientnet/preprocessing.py crops and flips each image at random"),
]
